// Native binding for pocketsphinx (Debian 5prealpha). One Decoder wraps one ps_decoder_t.
// All calls are synchronous: this addon is only ever used inside a worker thread.
#include <napi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

extern "C" {
#include <pocketsphinx.h>
#include <pocketsphinx/ps_search.h>
#include <sphinxbase/ckd_alloc.h>
#include <sphinxbase/cmd_ln.h>
#include <sphinxbase/ngram_model.h>
#include <sphinxbase/cmn.h>
#include <sphinxbase/err.h>
#include <sphinxbase/feat.h>
#include <sphinxbase/logmath.h>
}

namespace {

std::once_flag g_log_once;
std::mutex g_init_mutex;  // sphinxbase option parsing / model loading touches global logging state

// Fillers and sentence markers never reach the transcript.
bool IsFiller(const char *w) {
  if (w == nullptr || *w == '\0') return true;
  return w[0] == '<' || w[0] == '[' || w[0] == '+';
}

// "read(2)" -> "read": alternate pronunciations carry a parenthesised suffix.
std::string BaseWord(const char *w) {
  std::string s(w);
  size_t n = s.size();
  if (n > 2 && s[n - 1] == ')') {
    size_t open = s.rfind('(');
    if (open != std::string::npos && open > 0) {
      bool digits = open + 1 < n - 1;
      for (size_t i = open + 1; i < n - 1; i++) {
        if (s[i] < '0' || s[i] > '9') digits = false;
      }
      if (digits) s.resize(open);
    }
  }
  return s;
}

class Decoder : public Napi::ObjectWrap<Decoder> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "Decoder",
                       {
                           InstanceMethod("process", &Decoder::Process),
                           InstanceMethod("endUtterance", &Decoder::EndUtterance),
                           InstanceMethod("resetCmn", &Decoder::ResetCmn),
                           InstanceMethod("getCmn", &Decoder::GetCmn),
                           InstanceMethod("setCmn", &Decoder::SetCmn),
                           InstanceMethod("lookupWord", &Decoder::LookupWord),
                           InstanceMethod("addVocabulary", &Decoder::AddVocabulary),
                           InstanceMethod("destroy", &Decoder::Destroy),
                       });
  }

  explicit Decoder(const Napi::CallbackInfo &info) : Napi::ObjectWrap<Decoder>(info) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsObject()) {
      throw Napi::TypeError::New(env, "Decoder(options): options object of pocketsphinx flags required");
    }
    Napi::Object opts = info[0].As<Napi::Object>();
    Napi::Array keys = opts.GetPropertyNames();
    args_.push_back("scribed");
    bool quiet = false;
    for (uint32_t i = 0; i < keys.Length(); i++) {
      std::string key = keys.Get(i).ToString().Utf8Value();
      Napi::Value v = opts.Get(key);
      if (v.IsUndefined() || v.IsNull()) continue;
      std::string val = v.IsBoolean() ? (v.As<Napi::Boolean>().Value() ? "yes" : "no") : v.ToString().Utf8Value();
      if (key.empty() || key[0] != '-') key = "-" + key;
      if (key == "-logfn") {
        // The log file is process-global in sphinxbase; reopening it from several worker
        // threads races. /dev/null means "silence", done once per process instead.
        if (val == "/dev/null") {
          quiet = true;
          continue;
        }
      }
      args_.push_back(key);
      args_.push_back(val);
    }
    if (quiet) std::call_once(g_log_once, [] { err_set_logfp(nullptr); });

    std::vector<char *> argv;
    for (auto &a : args_) argv.push_back(const_cast<char *>(a.c_str()));
    std::lock_guard<std::mutex> lock(g_init_mutex);
    config_ = cmd_ln_parse_r(nullptr, ps_args(), static_cast<int32>(argv.size()), argv.data(), TRUE);
    if (config_ == nullptr) {
      throw Napi::Error::New(env, "pocketsphinx: invalid options (cmd_ln_parse_r failed)");
    }
    ps_ = ps_init(config_);
    if (ps_ == nullptr) {
      cmd_ln_free_r(config_);
      config_ = nullptr;
      throw Napi::Error::New(env, "pocketsphinx: ps_init failed (check -hmm, -lm, -dict, -featparams)");
    }
  }

  ~Decoder() override { Free(); }

 private:
  void Free() {
    if (ps_ != nullptr) {
      if (in_utt_) ps_end_utt(ps_);
      ps_free(ps_);
      ps_ = nullptr;
    }
    if (config_ != nullptr) {
      cmd_ln_free_r(config_);
      config_ = nullptr;
    }
    in_utt_ = false;
  }

  cmn_t *LiveCmn() {
    feat_t *feat = ps_get_feat(ps_);
    if (feat == nullptr || feat->cmn_struct == nullptr || feat->cmn_struct->sum == nullptr) return nullptr;
    return feat->cmn_struct;
  }

  void CheckAlive(Napi::Env env) {
    if (ps_ == nullptr) throw Napi::Error::New(env, "pocketsphinx: decoder destroyed");
  }

  Napi::Value Process(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    CheckAlive(env);
    if (info.Length() < 1 || !info[0].IsTypedArray() ||
        info[0].As<Napi::TypedArray>().TypedArrayType() != napi_int16_array) {
      throw Napi::TypeError::New(env, "process(samples): Int16Array required");
    }
    Napi::Int16Array samples = info[0].As<Napi::Int16Array>();
    if (!in_utt_) {
      // ps_seg_frames() adds the stream offset (frames of earlier utterances); restarting
      // the stream makes every utterance's word times count from its own first frame.
      ps_start_stream(ps_);
      if (ps_start_utt(ps_) < 0) throw Napi::Error::New(env, "pocketsphinx: ps_start_utt failed");
      in_utt_ = true;
    }
    size_t n = samples.ElementLength();
    if (n > 0) {
      if (ps_process_raw(ps_, reinterpret_cast<const int16 *>(samples.Data()), n, FALSE, FALSE) < 0) {
        throw Napi::Error::New(env, "pocketsphinx: ps_process_raw failed");
      }
    }
    int32 score = 0;
    const char *hyp = ps_get_hyp(ps_, &score);
    return Napi::String::New(env, hyp != nullptr ? hyp : "");
  }

  Napi::Value EndUtterance(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    CheckAlive(env);
    Napi::Object result = Napi::Object::New(env);
    Napi::Array words = Napi::Array::New(env);
    std::string text;
    if (in_utt_) {
      in_utt_ = false;
      if (ps_end_utt(ps_) < 0) throw Napi::Error::New(env, "pocketsphinx: ps_end_utt failed");
      int32 score = 0;
      const char *hyp = ps_get_hyp(ps_, &score);
      if (hyp != nullptr) text = hyp;
      logmath_t *lmath = ps_get_logmath(ps_);
      uint32_t idx = 0;
      for (ps_seg_t *seg = ps_seg_iter(ps_); seg != nullptr; seg = ps_seg_next(seg)) {
        const char *w = ps_seg_word(seg);
        if (IsFiller(w)) continue;
        int sf = 0, ef = 0;
        ps_seg_frames(seg, &sf, &ef);
        int32 ascr = 0, lscr = 0, lback = 0;
        int32 post = ps_seg_prob(seg, &ascr, &lscr, &lback);
        Napi::Object word = Napi::Object::New(env);
        word.Set("word", BaseWord(w));
        word.Set("startFrame", sf);
        word.Set("endFrame", ef + 1);  // exclusive: the frame after the last one of the word
        word.Set("prob", logmath_exp(lmath, post));
        words.Set(idx++, word);
      }
      // ps_seg_next frees the iterator when it returns NULL.
    }
    result.Set("text", text);
    result.Set("words", words);
    return result;
  }

  // Live CMN adapts across utterances and would carry one session's channel into the next
  // session on a pooled decoder. This puts it back to -cmninit (from feat.params), so every
  // stream starts from the same state. Returns false when there is nothing to reset.
  Napi::Value ResetCmn(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    CheckAlive(env);
    if (in_utt_) throw Napi::Error::New(env, "pocketsphinx: resetCmn() inside an utterance");
    feat_t *feat = ps_get_feat(ps_);
    const char *init = cmd_ln_str_r(ps_get_config(ps_), "-cmninit");
    if (feat == nullptr || feat->cmn_struct == nullptr || init == nullptr) return Napi::Boolean::New(env, false);
    cmn_t *cmn = feat->cmn_struct;
    std::vector<mfcc_t> vec(static_cast<size_t>(cmn->veclen), 0);
    const char *p = init;
    for (int32 i = 0; i < cmn->veclen && *p != '\0'; i++) {
      char *end = nullptr;
      double v = std::strtod(p, &end);
      if (end == p) break;
      vec[static_cast<size_t>(i)] = static_cast<mfcc_t>(v);
      p = end;
      while (*p == ',' || *p == ' ') p++;
    }
    cmn_live_set(cmn, vec.data());
    return Napi::Boolean::New(env, true);
  }

  // The live CMN state, all of it: the running mean (veclen values), the accumulated sum
  // the next update divides (veclen values) and its frame count, as one flat array
  // [mean..., sum..., nframe]. setCmn() of what getCmn() returned makes this decoder
  // normalise the next utterance exactly as the one that was read would have (a session
  // restored after a restart continues its channel adaptation). mfcc_t is float here (no
  // FIXED_POINT), so the values round-trip through doubles exactly. null: no live CMN.
  Napi::Value GetCmn(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    CheckAlive(env);
    if (in_utt_) throw Napi::Error::New(env, "pocketsphinx: getCmn() inside an utterance");
    cmn_t *cmn = LiveCmn();
    if (cmn == nullptr) return env.Null();
    uint32_t n = static_cast<uint32_t>(cmn->veclen);
    Napi::Array out = Napi::Array::New(env, 2 * n + 1);
    for (uint32_t i = 0; i < n; i++) {
      out.Set(i, Napi::Number::New(env, static_cast<double>(cmn->cmn_mean[i])));
      out.Set(n + i, Napi::Number::New(env, static_cast<double>(cmn->sum[i])));
    }
    out.Set(2 * n, Napi::Number::New(env, cmn->nframe));
    return out;
  }

  // setCmn(state): state as getCmn() returns it. Returns false when this decoder has no
  // live CMN; throws on a state of another vector length.
  Napi::Value SetCmn(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    CheckAlive(env);
    if (in_utt_) throw Napi::Error::New(env, "pocketsphinx: setCmn() inside an utterance");
    if (info.Length() < 1 || !info[0].IsArray()) throw Napi::TypeError::New(env, "setCmn(state): array required");
    cmn_t *cmn = LiveCmn();
    if (cmn == nullptr) return Napi::Boolean::New(env, false);
    Napi::Array in = info[0].As<Napi::Array>();
    uint32_t n = static_cast<uint32_t>(cmn->veclen);
    if (in.Length() != 2 * n + 1) {
      throw Napi::RangeError::New(env, "setCmn: state of " + std::to_string(in.Length()) + " values, this decoder needs " + std::to_string(2 * n + 1));
    }
    std::vector<mfcc_t> mean(n), sum(n);
    for (uint32_t i = 0; i < 2 * n + 1; i++) {
      Napi::Value v = in.Get(i);
      if (!v.IsNumber()) throw Napi::TypeError::New(env, "setCmn: state values must be numbers");
    }
    for (uint32_t i = 0; i < n; i++) {
      mean[i] = static_cast<mfcc_t>(in.Get(i).As<Napi::Number>().DoubleValue());
      sum[i] = static_cast<mfcc_t>(in.Get(n + i).As<Napi::Number>().DoubleValue());
    }
    int32 nframe = in.Get(2 * n).As<Napi::Number>().Int32Value();
    if (nframe < 0) throw Napi::RangeError::New(env, "setCmn: negative frame count");
    // cmn_live_set sets the mean (and a sum/count consistent with it); the exact sum and
    // count then replace those, so the next window update matches the original decoder.
    cmn_live_set(cmn, mean.data());
    for (uint32_t i = 0; i < n; i++) cmn->sum[i] = sum[i];
    cmn->nframe = nframe;
    return Napi::Boolean::New(env, true);
  }

  // lookupWord(word): the dictionary pronunciation ("D AE SH W UH D") or null.
  Napi::Value LookupWord(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    CheckAlive(env);
    if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(env, "lookupWord(word): string required");
    std::string word = info[0].As<Napi::String>().Utf8Value();
    char *phones = ps_lookup_word(ps_, word.c_str());
    if (phones == nullptr) return env.Null();
    Napi::String out = Napi::String::New(env, phones);
    ckd_free(phones);
    return out;
  }

  // addVocabulary(words, hintLmPath, weight): vocabulary hints for this decoder.
  // 1. Words missing from the dictionary are added with the given pronunciation (this also
  //    adds them to the main language model at the uniform unigram weight).
  // 2. A new search interpolates the main language model with a small unigram model of the
  //    hint words (ARPA file at hintLmPath), the hint model weighted `weight`: hint words
  //    become far likelier than their rare-word prior, other words lose (1 - weight).
  // The dictionary additions outlive the call, so the caller retires this decoder afterwards
  // instead of giving it to another session. Returns the number of words added.
  Napi::Value AddVocabulary(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    CheckAlive(env);
    if (in_utt_) throw Napi::Error::New(env, "pocketsphinx: addVocabulary() inside an utterance");
    if (info.Length() < 3 || !info[0].IsArray() || !info[1].IsString() || !info[2].IsNumber()) {
      throw Napi::TypeError::New(env, "addVocabulary(words, hintLmPath, weight)");
    }
    Napi::Array words = info[0].As<Napi::Array>();
    std::string lmPath = info[1].As<Napi::String>().Utf8Value();
    float weight = info[2].As<Napi::Number>().FloatValue();
    if (!(weight > 0.0f && weight < 1.0f)) throw Napi::RangeError::New(env, "addVocabulary: weight must be in (0, 1)");
    if (base_search_.empty()) {
      const char *current = ps_get_search(ps_);
      base_search_ = current != nullptr ? current : "";
    }
    int added = 0;
    for (uint32_t i = 0; i < words.Length(); i++) {
      Napi::Value v = words.Get(i);
      if (!v.IsObject()) continue;
      Napi::Object o = v.As<Napi::Object>();
      std::string word = o.Get("word").ToString().Utf8Value();
      Napi::Value ph = o.Get("phones");
      if (!ph.IsString()) continue;
      char *known = ps_lookup_word(ps_, word.c_str());
      if (known != nullptr) {
        ckd_free(known);
        continue;
      }
      std::string phones = ph.As<Napi::String>().Utf8Value();
      if (ps_add_word(ps_, word.c_str(), phones.c_str(), FALSE) < 0) {
        throw Napi::Error::New(env, "pocketsphinx: ps_add_word failed for \"" + word + "\" (" + phones + ")");
      }
      added++;
    }
    ngram_model_t *baseSet = ps_get_lm(ps_, base_search_.c_str());
    if (baseSet == nullptr) throw Napi::Error::New(env, "pocketsphinx: no language model search to extend");
    // The search wraps its model in a one-model set; interpolate with the model inside it.
    ngram_model_t *base = nullptr;
    ngram_model_set_iter_t *it = ngram_model_set_iter(baseSet);
    if (it != nullptr) {
      const char *name = nullptr;
      base = ngram_model_set_iter_model(it, &name);
      ngram_model_set_iter_free(it);
    }
    if (base == nullptr) base = baseSet;
    ngram_model_t *hints = ngram_model_read(ps_get_config(ps_), lmPath.c_str(), NGRAM_ARPA, ps_get_logmath(ps_));
    if (hints == nullptr) throw Napi::Error::New(env, "pocketsphinx: could not read the hint language model " + lmPath);
    ngram_model_t *models[2] = {base, hints};
    char baseName[] = "base";
    char hintName[] = "hints";
    char *names[2] = {baseName, hintName};
    float32 weights[2] = {1.0f - weight, weight};
    ngram_model_t *set = ngram_model_set_init(ps_get_config(ps_), models, names, weights, 2);
    ngram_model_free(hints);
    if (set == nullptr) throw Napi::Error::New(env, "pocketsphinx: could not combine the hint language model");
    int rv = ps_set_lm(ps_, "scribed_hints", set);
    ngram_model_free(set);
    if (rv < 0 || ps_set_search(ps_, "scribed_hints") < 0) throw Napi::Error::New(env, "pocketsphinx: could not switch to the hinted search");
    return Napi::Number::New(env, added);
  }

  Napi::Value Destroy(const Napi::CallbackInfo &info) {
    Free();
    return info.Env().Undefined();
  }

  std::vector<std::string> args_;
  std::string base_search_;
  cmd_ln_t *config_ = nullptr;
  ps_decoder_t *ps_ = nullptr;
  bool in_utt_ = false;
};

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("Decoder", Decoder::Define(env));
  return exports;
}

}  // namespace

NODE_API_MODULE(scribed_pocketsphinx, Init)
