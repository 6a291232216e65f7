// Native binding for pocketsphinx (Debian 5prealpha). One Decoder wraps one ps_decoder_t; the
// module also exports the streams' Resampler (resampler.cc).
// All calls are synchronous: this addon is only ever used inside a worker thread.
#include <napi.h>

#include "resampler.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <string>
#include <vector>

extern "C" {
#include <pocketsphinx.h>
#include <pocketsphinx/ps_search.h>
#include <sphinxbase/ckd_alloc.h>
#include <sphinxbase/hash_table.h>
#include <sphinxbase/cmd_ln.h>
#include <sphinxbase/ngram_model.h>
#include <sphinxbase/cmn.h>
#include <sphinxbase/err.h>
#include <sphinxbase/feat.h>
#include <sphinxbase/logmath.h>

// Exported by libpocketsphinx but declared only in its internal headers (dict.h, dict2pid.h,
// bin_mdef.h of 5prealpha): the pronunciation dictionary, its triphone maps and the model
// definition they are built against. Opaque here; see the mirrors in namespace psm.
typedef struct bin_mdef_s bin_mdef_t;
typedef struct scribed_dict_s dict_t;
typedef struct scribed_dict2pid_s dict2pid_t;
bin_mdef_t *bin_mdef_read(cmd_ln_t *config, const char *filename);
int bin_mdef_free(bin_mdef_t *m);
dict_t *dict_init(cmd_ln_t *config, bin_mdef_t *mdef);
dict_t *dict_retain(dict_t *d);
int dict_free(dict_t *d);
int32 dict_wordid(dict_t *d, const char *word);
dict2pid_t *dict2pid_build(bin_mdef_t *mdef, dict_t *dict);
dict2pid_t *dict2pid_retain(dict2pid_t *d2p);
int dict2pid_free(dict2pid_t *d2p);
}

namespace {

std::once_flag g_log_once;
std::mutex g_init_mutex;  // sphinxbase option parsing / model loading touches global logging state

// ---------------------------------------------------------------------------------------------
// One language model for every decoder of the process (docs/engines.md, "Memory per decoder").
//
// The trie language model (en-us.lm.bin, 27 MB) is read into the heap by every ps_init(): about
// 33 MiB per decoder. Its n-gram arrays are read-only once loaded, but the model object is not:
// lm_trie_score() (sphinxbase src/libsphinxbase/lm/lm_trie.c) keeps the last history and its
// backoffs in the lm_trie_t itself (update_backoff() writes trie->hist_cache and
// trie->backoff_cache on every history change), and ngram_model_apply_weights() writes lw and
// log_wip into the model. Two threads scoring one ngram_model_t would race on those.
//
// So the process reads the model once (SharedLm, keyed by path and weights) and gives each
// decoder its own small model object: a copy of the ngram_model_t header with its own weights
// and counts, and a copy of the lm_trie_t header with its own caches, both pointing at the one
// set of n-gram arrays, unigrams, quantisation tables, word strings and word hash, which no
// scoring call writes (unigram_find, middle_find, longest_find, lm_trie_quant_*read,
// hash_table lookup only read). The copy scores through the trie's own functions; only its
// free() differs (it frees the headers and releases the shared model, never the arrays).
//
// Words are never added to a shared model: ngram_model_add_word() would reallocate the shared
// word arrays and unigrams. addVocabulary() first gives its decoder a private model read from
// the file (the decoder is retired after that stream anyway).
//
// These structures are internal to sphinxbase (not installed headers); they are mirrored from
// the sphinxbase sources of Debian's 5prealpha (ngram_model_internal.h, ngram_model_trie.h,
// lm_trie.h; unchanged from 2016-02 to 2017). VerifyShare() checks the mirror against the
// loaded library through the public API (same counts, word strings, scores for a sample of
// n-grams) before any sharing; on a mismatch every decoder reads its own model, as before.
namespace sb {
struct Funcs {
  void (*free)(ngram_model_t *model);
  int (*apply_weights)(ngram_model_t *model, float32 lw, float32 wip);
  int32 (*score)(ngram_model_t *model, int32 wid, int32 *history, int32 n_hist, int32 *n_used);
  int32 (*raw_score)(ngram_model_t *model, int32 wid, int32 *history, int32 n_hist, int32 *n_used);
  int32 (*add_ug)(ngram_model_t *model, int32 wid, int32 lweight);
  void (*flush)(ngram_model_t *model);
};
struct Model {  // struct ngram_model_s
  int refcount;
  uint32 *n_counts;
  int32 n_1g_alloc;
  int32 n_words;
  uint8 n;
  uint8 n_classes;
  uint8 writable;
  uint8 flags;
  logmath_t *lmath;
  float32 lw;
  int32 log_wip;
  int32 log_zero;
  char **word_str;
  void *wid;  // hash_table_t *
  int32 *tmp_wids;
  void **classes;
  Funcs *funcs;
};
constexpr int kMaxOrder = 5;  // NGRAM_MAX_ORDER
struct Trie {  // struct lm_trie_s
  uint8 *ngram_mem;
  size_t ngram_mem_size;
  void *unigrams;
  void *middle_begin;
  void *middle_end;
  void *longest;
  void *quant;
  float backoff_cache[kMaxOrder];
  uint32 hist_cache[kMaxOrder - 1];
};
struct TrieModel {  // struct ngram_model_trie_s
  Model base;
  Trie *trie;
};
}  // namespace sb

struct SharedLm;
// A decoder's model: the trie model's layout first (the trie's functions cast to it), then
// the shared model it borrows from.
struct LmView {
  sb::TrieModel tm;
  SharedLm *owner;
};

struct SharedLm {
  std::string key;
  ngram_model_t *model = nullptr;  // read once; never scored directly by a decoder
  logmath_t *lmath = nullptr;      // owned: outlives every decoder that uses the model
  sb::Funcs funcs{};               // the trie's functions, with free() replaced
  int users = 0;
};

std::mutex g_lm_mutex;  // g_lms, SharedLm::users, g_stats
std::map<std::string, SharedLm *> g_lms;
struct Stats {
  double lmLoads = 0;        // language models read from a file for sharing
  double lmViews = 0;        // decoder views made over a shared model (ever)
  double lmViewsLive = 0;    // views alive now
  double lmPrivate = 0;      // decoders that read their own model (sharing off or refused)
  double lmShareRefused = 0; // shared models refused by VerifyShare()
} g_stats;

// Drops one use of a shared model; the last one frees it. Never called with g_lm_mutex held.
void ReleaseSharedLm(SharedLm *s) {
  bool last = false;
  {
    std::lock_guard<std::mutex> lock(g_lm_mutex);
    if (--s->users == 0) {
      auto it = g_lms.find(s->key);
      if (it != g_lms.end() && it->second == s) g_lms.erase(it);
      last = true;
    }
  }
  if (last) {
    ngram_model_free(s->model);
    logmath_free(s->lmath);
    delete s;
  }
}

void FreeView(ngram_model_t *m) {
  // Called by ngram_model_free() when a view's refcount reaches zero, before it frees the
  // header fields: leave it nothing shared to free (hash_table_free(NULL) and ckd_free(NULL)
  // are no-ops; writable = FALSE and no classes means no word string is freed).
  LmView *v = reinterpret_cast<LmView *>(m);
  ckd_free(v->tm.trie);
  v->tm.trie = nullptr;
  v->tm.base.word_str = nullptr;
  v->tm.base.wid = nullptr;
  v->tm.base.tmp_wids = nullptr;
  SharedLm *owner = v->owner;
  v->owner = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_lm_mutex);
    g_stats.lmViewsLive--;
  }
  ReleaseSharedLm(owner);
}

// A decoder's own model object over a shared model (refcount 1: the caller hands it to
// ps_set_lm() and frees its reference). Never called with g_lm_mutex held.
ngram_model_t *MakeView(SharedLm *s) {
  const sb::TrieModel *src = reinterpret_cast<const sb::TrieModel *>(s->model);
  LmView *v = static_cast<LmView *>(ckd_calloc(1, sizeof(LmView)));
  v->tm.base = src->base;
  v->tm.base.refcount = 1;
  v->tm.base.writable = FALSE;
  v->tm.base.tmp_wids = nullptr;
  v->tm.base.funcs = &s->funcs;
  v->tm.base.n_counts = static_cast<uint32 *>(ckd_calloc(src->base.n, sizeof(uint32)));
  std::memcpy(v->tm.base.n_counts, src->base.n_counts, src->base.n * sizeof(uint32));
  v->tm.trie = static_cast<sb::Trie *>(ckd_calloc(1, sizeof(sb::Trie)));
  *v->tm.trie = *src->trie;
  // As lm_trie_flush(): no history cached yet.
  std::memset(v->tm.trie->hist_cache, -1, sizeof(v->tm.trie->hist_cache));
  std::memset(v->tm.trie->backoff_cache, 0, sizeof(v->tm.trie->backoff_cache));
  v->owner = s;
  std::lock_guard<std::mutex> lock(g_lm_mutex);
  s->users++;
  g_stats.lmViews++;
  g_stats.lmViewsLive++;
  return reinterpret_cast<ngram_model_t *>(v);
}

// The mirrored layout matches the loaded sphinxbase: what the public API reports must be
// what the mirror reads, and a view must score exactly as the model it copies.
bool VerifyShare(SharedLm *s, std::string *why) {
  ngram_model_t *m = s->model;
  const sb::Model *b = reinterpret_cast<const sb::Model *>(m);
  const sb::TrieModel *tm = reinterpret_cast<const sb::TrieModel *>(m);
  // ngram_model_get_size() is the order; ngram_model_get_counts() the n-gram counts array.
  int32 nw = b->n_words;
  if (b->refcount != 1 || b->n_counts != ngram_model_get_counts(m) || b->n != ngram_model_get_size(m) ||
      nw != static_cast<int32>(ngram_model_get_counts(m)[0]) || nw < 3 || b->n < 1 || b->n > sb::kMaxOrder || b->n_classes != 0 || b->lmath != s->lmath || b->funcs == nullptr ||
      b->funcs->score == nullptr || b->funcs->free == nullptr || tm->trie == nullptr) {
    *why = "model header does not match the expected sphinxbase layout";
    return false;
  }
  for (int32 i = 0; i < nw; i += 997) {
    if (b->word_str[i] != ngram_word(m, i)) {
      *why = "word strings do not match the expected layout";
      return false;
    }
  }
  ngram_model_t *view = MakeView(s);
  // Scores of a sample of unigrams, bigrams and trigrams, over histories that change often
  // (every cache path) and repeat (cached path), must be identical.
  uint32 x = 12345;
  auto next = [&]() {
    x = x * 1103515245u + 12345u;
    return static_cast<int32>((x >> 8) % static_cast<uint32>(nw));
  };
  bool same = true;
  int32 h1 = next(), h2 = next();
  for (int i = 0; i < 3000 && same; i++) {
    if (i % 7 == 0) {
      h1 = next();
      h2 = next();
    }
    int32 w = next();
    int32 u1 = 0, u2 = 0;
    same = ngram_tg_score(m, w, h1, h2, &u1) == ngram_tg_score(view, w, h1, h2, &u2) && u1 == u2;
    same = same && ngram_bg_score(m, w, h1, &u1) == ngram_bg_score(view, w, h1, &u2) && u1 == u2;
    same = same && ngram_score(m, ngram_word(m, w), NULL) == ngram_score(view, ngram_word(m, w), NULL);
  }
  if (!same) *why = "a decoder's view of the shared model scores differently";
  ngram_model_free(view);  // FreeView: drops the view's use of s (s is not in g_lms yet)
  {
    std::lock_guard<std::mutex> lock(g_lm_mutex);
    g_stats.lmViews--;  // count decoders' views only
  }
  return same;
}

// The shared model for this decoder's -lm, weights and log base, read on first use; null
// when sharing is refused (then the decoder reads its own). Called with g_init_mutex held.
SharedLm *AcquireSharedLm(cmd_ln_t *config, const std::string &path, std::string *why) {
  float32 lw = cmd_ln_exists_r(config, "-lw") ? cmd_ln_float32_r(config, "-lw") : 1.0f;
  float32 wip = cmd_ln_exists_r(config, "-wip") ? cmd_ln_float32_r(config, "-wip") : 1.0f;
  float32 logbase = cmd_ln_float32_r(config, "-logbase");
  bool table = cmd_ln_boolean_r(config, "-bestpath");  // as ps_reinit() makes its logmath
  char key[64];
  std::snprintf(key, sizeof key, "|%a|%a|%a|%d", lw, wip, logbase, table ? 1 : 0);
  std::string k = path + key;
  {
    std::lock_guard<std::mutex> lock(g_lm_mutex);
    auto it = g_lms.find(k);
    if (it != g_lms.end()) {
      it->second->users++;  // held until the view is made
      return it->second;
    }
  }
  SharedLm *s = new SharedLm();
  s->key = k;
  s->lmath = logmath_init(static_cast<float64>(logbase), 0, table ? TRUE : FALSE);
  // ngram_model_read() applies -lw and -wip from the config, as ps_set_lm_file() does.
  s->model = s->lmath != nullptr ? ngram_model_read(config, path.c_str(), NGRAM_AUTO, s->lmath) : nullptr;
  if (s->model == nullptr) {
    *why = "could not read " + path;
    if (s->lmath != nullptr) logmath_free(s->lmath);
    delete s;
    return nullptr;
  }
  // Only the trie format (what ngram_model_read() makes of .lm.bin, ARPA and DMP here) has the
  // layout mirrored above.
  const sb::Model *b = reinterpret_cast<const sb::Model *>(s->model);
  s->funcs = *b->funcs;
  s->funcs.free = FreeView;
  s->users = 1;  // held by this call until the caller's view is made
  bool ok = VerifyShare(s, why);
  {
    std::lock_guard<std::mutex> lock(g_lm_mutex);
    g_stats.lmLoads++;
    if (ok) {
      g_lms[k] = s;
    } else {
      g_stats.lmShareRefused++;
    }
  }
  if (!ok) {
    ReleaseSharedLm(s);
    return nullptr;
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// One pronunciation dictionary for every decoder of the process (docs/engines.md, "Memory per
// decoder").
//
// ps_init() reads the dictionary (cmudict-en-us.dict, 134,723 entries) and builds its triphone
// maps (dict2pid) for every decoder: about 22 MiB each. Neither is written while decoding: the
// search reads words, pronunciations and senone-sequence ids (dict_wordid, dict_pron,
// dict2pid_internal, the ldiph_lc/rssid/lrssid tables); only ps_add_word() (vocabulary hints)
// and ps_load_dict() change them, and the reference counts change when a search or a decoder is
// made or freed. So the process reads the dictionary once per (file, filler file, model
// definition, case folding), against a model definition of its own read from the same mdef
// file as the decoders' (the ids the maps hold are that file's), and each decoder takes a
// reference to it instead of reading its own:
//   1. ps_init() runs with no -dict: it builds a dictionary of the fillers only (cheap) and,
//      since the language model is shared too (-lm unset at that point), no search yet;
//   2. the decoder's dictionary and maps are swapped for the shared ones;
//   3. the search is made over the shared language model (ps_set_lm), with the shared
//      dictionary, exactly as ps_init() makes it for -lm.
// Only with a shared language model: otherwise ps_init() has already built a search over the
// filler dictionary.
//
// Every reference count change on a shared dictionary (decoder made or freed, search made or
// freed, vocabulary hints) happens with g_init_mutex held, because those counts are plain ints.
// A decoder given vocabulary hints first reads a private dictionary (ps_load_dict()), so
// ps_add_word() never touches the shared one.
//
// ps_decoder_t, dict_t and dict2pid_t are internal to pocketsphinx: mirrored from the 5prealpha
// sources (pocketsphinx_internal.h, dict.h, dict2pid.h). AdoptSharedDict() checks the mirror
// on each decoder before swapping (pointers the public API returns at the mirrored places,
// reference counts and back-pointers as ps_init() leaves them, a probe word unknown before
// the swap and known after it); on any mismatch the decoder is made again with its own
// dictionary, as before, and the addon says so on stderr.
namespace psm {
struct Decoder {  // struct ps_decoder_s
  cmd_ln_t *config;
  int refcount;
  void *acmod;
  dict_t *dict;
  dict2pid_t *d2p;
  logmath_t *lmath;
  void *searches;  // hash_table_t *
  void *search;    // ps_search_t *: the active search
  void *phone_loop;
  int pl_window;
};
struct DictWord {  // dictword_t
  char *word;
  int16 *ciphone;  // s3cipid_t
  int32 pronlen;
  int32 alt;
  int32 basewid;
};
struct Dict {  // dict_t
  int refcnt;
  bin_mdef_t *mdef;
  DictWord *word;
  void *ht;
  int32 max_words;
  int32 n_word;
  int32 filler_start;
  int32 filler_end;
  int32 startwid;
  int32 finishwid;
  int32 silwid;
  int nocase;
};
struct Dict2Pid {  // dict2pid_t (first fields)
  int refcount;
  bin_mdef_t *mdef;
  dict_t *dict;
};
}  // namespace psm

struct SharedDict {
  std::string key;
  bin_mdef_t *mdef = nullptr;
  dict_t *dict = nullptr;
  dict2pid_t *d2p = nullptr;
  std::string probe;  // an ordinary word of the dictionary (never in a filler dictionary)
  int users = 0;
};

// Guarded by g_init_mutex (every caller holds it).
std::map<std::string, SharedDict *> g_dicts;
struct DictStats {
  double dictLoads = 0;        // dictionaries read from a file for sharing
  double dictUsers = 0;        // decoders given a shared dictionary (ever)
  double dictUsersLive = 0;    // those alive now
  double dictPrivate = 0;      // decoders that read their own dictionary
  double dictShareRefused = 0; // decoders whose layout check failed (then they read their own)
} g_dict_stats;

// Called with g_init_mutex held.
void ReleaseSharedDict(SharedDict *s) {
  if (--s->users > 0) return;
  auto it = g_dicts.find(s->key);
  if (it != g_dicts.end() && it->second == s) g_dicts.erase(it);
  dict2pid_free(s->d2p);
  dict_free(s->dict);
  bin_mdef_free(s->mdef);
  delete s;
}

// The shared dictionary for these files, read on first use (one use is taken for the caller);
// null when it cannot be read. Called with g_init_mutex held.
SharedDict *AcquireSharedDict(cmd_ln_t *config, const std::string &dictPath, std::string *why) {
  // ps_init() fills the model's file names in as "_mdef"/"_fdict" (Debian's 5prealpha) or as
  // "-mdef"/"-fdict" (older sources); an operator's -mdef/-fdict is used when it gave one.
  auto option = [config](const char *internal, const char *flag) -> const char * {
    const char *given = cmd_ln_exists_r(config, flag) ? cmd_ln_str_r(config, flag) : nullptr;
    if (given != nullptr) return given;
    return cmd_ln_exists_r(config, internal) ? cmd_ln_str_r(config, internal) : nullptr;
  };
  const bool internalFdict = cmd_ln_exists_r(config, "_fdict");
  const char *fdict = option("_fdict", "-fdict");
  const char *mdefPath = option("_mdef", "-mdef");
  bool nocase = cmd_ln_exists_r(config, "-dictcase") && cmd_ln_boolean_r(config, "-dictcase");
  if (mdefPath == nullptr) {
    *why = "no -mdef";
    return nullptr;
  }
  std::string key = dictPath + "|" + (fdict != nullptr ? fdict : "") + "|" + mdefPath + "|" + (nocase ? "1" : "0");
  auto it = g_dicts.find(key);
  if (it != g_dicts.end()) {
    it->second->users++;
    return it->second;
  }
  // As ps_load_dict() reads a dictionary: a scratch config with only the dictionary options.
  cmd_ln_t *scratch = cmd_ln_init(nullptr, ps_args(), TRUE, nullptr);
  cmd_ln_set_boolean_r(scratch, "-dictcase", nocase ? TRUE : FALSE);
  cmd_ln_set_str_r(scratch, "-dict", dictPath.c_str());
  // dict_init() reads the filler dictionary under the name ps_init() gave it.
  if (internalFdict) {
    cmd_ln_set_str_extra_r(scratch, "_fdict", fdict);
  } else {
    cmd_ln_set_str_r(scratch, "-fdict", fdict);
  }
  SharedDict *s = new SharedDict();
  s->key = key;
  s->mdef = bin_mdef_read(config, mdefPath);
  s->dict = s->mdef != nullptr ? dict_init(scratch, s->mdef) : nullptr;
  s->d2p = s->dict != nullptr ? dict2pid_build(s->mdef, s->dict) : nullptr;
  cmd_ln_free_r(scratch);
  // The probe: the first word read from the main dictionary file (id 0), never a filler.
  const psm::Dict *d = reinterpret_cast<const psm::Dict *>(s->dict);
  if (s->d2p != nullptr && d->n_word > 0 && d->filler_start > 0 && d->word != nullptr && d->word[0].word != nullptr &&
      dict_wordid(s->dict, d->word[0].word) == 0) {
    s->probe = d->word[0].word;
  }
  if (s->d2p == nullptr || s->probe.empty()) {
    *why = s->d2p == nullptr ? "could not read " + dictPath : "dictionary does not match the expected layout";
    if (s->d2p != nullptr) dict2pid_free(s->d2p);
    if (s->dict != nullptr) dict_free(s->dict);
    if (s->mdef != nullptr) bin_mdef_free(s->mdef);
    delete s;
    return nullptr;
  }
  s->users = 1;
  g_dicts[key] = s;
  g_dict_stats.dictLoads++;
  return s;
}

// Gives a decoder made by ps_init() without -dict (a fillers-only dictionary, no search) the
// shared dictionary; false, with the reason, when the layout check fails (the decoder is then
// as ps_init() left it, or holds the shared dictionary in the same places it found its own:
// either way ps_free() frees it correctly). Called with g_init_mutex held.
// `refuseAfterSwap` (tests only): fail as the last check would, with the shared dictionary
// already in place, to exercise the fallback's hardest path.
bool AdoptSharedDict(ps_decoder_t *ps, SharedDict *s, bool refuseAfterSwap, std::string *why) {
  psm::Decoder *m = reinterpret_cast<psm::Decoder *>(ps);
  // (pl_window is not compared: this ps_init() sets it only with a search.)
  if (m->config != ps_get_config(ps) || m->lmath != ps_get_logmath(ps) || m->refcount != 1 || m->search != nullptr ||
      m->dict == nullptr || m->d2p == nullptr) {
    *why = "decoder does not match the expected pocketsphinx layout";
    return false;
  }
  const psm::Dict *own = reinterpret_cast<const psm::Dict *>(m->dict);
  const psm::Dict2Pid *ownMaps = reinterpret_cast<const psm::Dict2Pid *>(m->d2p);
  // ps_init() leaves its dictionary held by the decoder and by its maps, the maps by the
  // decoder only, both over the acoustic model's mdef.
  if (own->refcnt != 2 || ownMaps->refcount != 1 || ownMaps->dict != m->dict || ownMaps->mdef != own->mdef || own->mdef == nullptr ||
      dict_wordid(m->dict, "<sil>") != own->silwid || own->n_word > own->max_words) {
    *why = "dictionary does not match the expected pocketsphinx layout";
    return false;
  }
  char *before = ps_lookup_word(ps, s->probe.c_str());
  if (before != nullptr) {
    ckd_free(before);
    *why = "the decoder already knows the probe word";
    return false;
  }
  dict2pid_free(m->d2p);
  dict_free(m->dict);
  m->dict = dict_retain(s->dict);
  m->d2p = dict2pid_retain(s->d2p);
  char *after = refuseAfterSwap ? nullptr : ps_lookup_word(ps, s->probe.c_str());
  if (after == nullptr) {
    *why = refuseAfterSwap ? "refused on request (-scribed_share_dict test-refuse)" : "the shared dictionary is not the one the decoder reads";
    return false;
  }
  ckd_free(after);
  return true;
}

// One search vocabulary, so a decoder costs less memory (docs/engines.md "Memory per decoder"). The n-gram search
// wraps its model in a one-model set and maps the set's vocabulary onto the dictionary
// (ngram_search_update_widmap -> ngram_model_set_map_words: a copy of every dictionary word's
// string, a word hash over them and a word-id map into the model; 9.4 MiB of each decoder for
// cmudict's 134,723 words). With the dictionary and the language model shared, that vocabulary
// is the same in every decoder, and decoding only reads it (ngram_wid() looks the hash up,
// scoring reads the map; the set's history buffer, which scoring writes, stays the decoder's).
// So the first decoder's becomes the process's, and the next ones free theirs and point at it.
//
// Only sphinxbase itself frees or rebuilds a set's vocabulary: when the set is freed (its free
// function, here wrapped so it leaves the shared parts alone) and when the dictionary changes
// (ps_load_dict, ps_add_word: addVocabulary() gives the set a private copy first). The set's
// layout (ngram_model_set.h of 5prealpha) is mirrored here and checked on every decoder.
namespace sb {
struct ModelSet {  // struct ngram_model_set_s
  Model base;
  int32 n_models;
  int32 cur;
  ngram_model_t **lms;
  char **names;
  int32 *lweights;
  int32 **widmap;
  int32 *maphist;
};
}  // namespace sb

struct SharedVocab {
  const SharedLm *lm = nullptr;  // with `dict`, what the vocabulary was derived from
  const SharedDict *dict = nullptr;
  int32 n_words = 0;
  char **word_str = nullptr;
  void *wid = nullptr;  // hash_table_t *
  int32 **widmap = nullptr;
  int users = 0;
};

std::mutex g_vocab_mutex;  // everything below
std::vector<SharedVocab *> g_vocabs;
std::map<ngram_model_t *, SharedVocab *> g_vocab_sets;  // sets reading a shared vocabulary
const sb::Funcs *g_set_funcs = nullptr;  // sphinxbase's own set functions
sb::Funcs g_vocab_set_funcs{};           // the same, with free() wrapped
struct VocabStats {
  double vocabShared = 0;       // shared vocabularies held now
  double vocabUsersLive = 0;    // sets reading one now
  double vocabShareRefused = 0; // sets whose check failed (they keep their own)
  double vocabCopies = 0;       // private copies made from a shared one (ever)
} g_vocab_stats;

// Frees a vocabulary's parts as sphinxbase would (strings from ckd_salloc, ckd_calloc_2d map).
void FreeVocabParts(int32 n_words, char **word_str, void *wid, int32 **widmap) {
  if (word_str != nullptr) {
    for (int32 i = 0; i < n_words; i++) ckd_free(word_str[i]);
  }
  ckd_free(word_str);
  ckd_free_2d(reinterpret_cast<void **>(widmap));
  hash_table_free(static_cast<hash_table_t *>(wid));
}

// Detaches a set from its shared vocabulary (it then holds none) and drops the use. Called with
// g_vocab_mutex held; false when the set reads no shared vocabulary.
bool DetachVocab(ngram_model_t *m) {
  auto it = g_vocab_sets.find(m);
  if (it == g_vocab_sets.end()) return false;
  SharedVocab *sv = it->second;
  g_vocab_sets.erase(it);
  sb::ModelSet *set = reinterpret_cast<sb::ModelSet *>(m);
  set->base.word_str = nullptr;
  set->base.wid = nullptr;
  set->base.writable = FALSE;
  set->widmap = nullptr;
  set->base.funcs = const_cast<sb::Funcs *>(g_set_funcs);
  g_vocab_stats.vocabUsersLive--;
  if (--sv->users == 0) {
    g_vocabs.erase(std::find(g_vocabs.begin(), g_vocabs.end(), sv));
    FreeVocabParts(sv->n_words, sv->word_str, sv->wid, sv->widmap);
    delete sv;
    g_vocab_stats.vocabShared--;
  }
  return true;
}

// The set's free() while it reads a shared vocabulary: detach, then sphinxbase's own free()
// (ngram_model_free() then frees no word string, no hash and no array: the set holds none).
void FreeVocabSet(ngram_model_t *m) {
  {
    std::lock_guard<std::mutex> lock(g_vocab_mutex);
    DetachVocab(m);
  }
  g_set_funcs->free(m);
}

// Gives the decoder's default search set the process's vocabulary for (lm, dict), or makes its
// own the process's when there is none yet. False (the set keeps its own) when the layout
// check or the comparison with the shared one fails.
bool ShareVocab(ps_decoder_t *ps, const char *search, const SharedLm *lm, const SharedDict *dict, std::string *why) {
  ngram_model_t *m = ps_get_lm(ps, search);
  sb::ModelSet *set = reinterpret_cast<sb::ModelSet *>(m);
  if (m == nullptr || ngram_model_set_count(m) != 1 || set->n_models != 1 || set->lms == nullptr || set->widmap == nullptr ||
      set->base.word_str == nullptr || set->base.wid == nullptr || set->base.writable != TRUE || set->base.n_classes != 0 ||
      set->base.funcs == nullptr || set->base.funcs->free == nullptr || set->base.refcount < 1 || set->base.n_words < 3) {
    *why = "search vocabulary does not match the expected sphinxbase layout";
    return false;
  }
  const int32 n = set->base.n_words;
  // The mirror against the public API: words, ids and the map into the model at a sample.
  for (int32 i = 0; i < n; i += 499) {
    const char *w = set->base.word_str[i];
    if (ngram_word(m, i) != w || ngram_wid(m, w) != i || set->widmap[i][0] != ngram_wid(set->lms[0], w)) {
      *why = "search vocabulary does not match the expected sphinxbase layout";
      return false;
    }
  }
  std::lock_guard<std::mutex> lock(g_vocab_mutex);
  if (g_set_funcs == nullptr) {
    g_set_funcs = set->base.funcs;
    g_vocab_set_funcs = *g_set_funcs;
    g_vocab_set_funcs.free = FreeVocabSet;
  } else if (set->base.funcs != g_set_funcs) {
    *why = "search vocabulary has other set functions";
    return false;
  }
  SharedVocab *sv = nullptr;
  for (SharedVocab *v : g_vocabs) {
    if (v->lm == lm && v->dict == dict) sv = v;
  }
  if (sv == nullptr) {
    sv = new SharedVocab();
    sv->lm = lm;
    sv->dict = dict;
    sv->n_words = n;
    sv->word_str = set->base.word_str;
    sv->wid = set->base.wid;
    sv->widmap = set->widmap;
    g_vocabs.push_back(sv);
    g_vocab_stats.vocabShared++;
  } else {
    // Derived from the same dictionary and model, it must be the same, word for word.
    bool same = sv->n_words == n;
    for (int32 i = 0; same && i < n; i++) {
      same = std::strcmp(sv->word_str[i], set->base.word_str[i]) == 0 && sv->widmap[i][0] == set->widmap[i][0];
    }
    if (!same) {
      *why = "search vocabulary differs from the shared one";
      return false;
    }
    FreeVocabParts(n, set->base.word_str, set->base.wid, set->widmap);
  }
  sv->users++;
  set->base.word_str = sv->word_str;
  set->base.wid = sv->wid;
  set->widmap = sv->widmap;
  set->base.writable = FALSE;
  set->base.funcs = &g_vocab_set_funcs;
  g_vocab_sets[m] = sv;
  g_vocab_stats.vocabUsersLive++;
  return true;
}

// Gives a set reading a shared vocabulary a private copy (before anything that rebuilds or
// extends it: ps_load_dict, ps_add_word). No-op for a set with its own.
void UnshareVocab(ngram_model_t *m) {
  std::lock_guard<std::mutex> lock(g_vocab_mutex);
  auto it = g_vocab_sets.find(m);
  if (it == g_vocab_sets.end()) return;
  const SharedVocab *sv = it->second;
  const int32 n = sv->n_words;
  char **words = static_cast<char **>(ckd_calloc(n, sizeof(char *)));
  int32 **widmap = reinterpret_cast<int32 **>(ckd_calloc_2d(n, 1, sizeof(int32)));
  hash_table_t *wid = hash_table_new(n, HASH_CASE_YES);
  for (int32 i = 0; i < n; i++) {
    words[i] = ckd_salloc(sv->word_str[i]);
    widmap[i][0] = sv->widmap[i][0];
    (void)hash_table_enter_int32(wid, words[i], i);
  }
  DetachVocab(m);
  g_vocab_stats.vocabCopies++;
  sb::ModelSet *set = reinterpret_cast<sb::ModelSet *>(m);
  set->base.word_str = words;
  set->base.wid = wid;
  set->widmap = widmap;
  set->base.writable = TRUE;
}

// CPU milliseconds this thread has used (what a step costs, whatever else the machine runs).
double ThreadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

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
    bool shareLm = true;
    bool shareDict = true;
    bool refuseDict = false;
    bool shareVocab = true;
    for (uint32_t i = 0; i < keys.Length(); i++) {
      std::string key = keys.Get(i).ToString().Utf8Value();
      Napi::Value v = opts.Get(key);
      if (v.IsUndefined() || v.IsNull()) continue;
      std::string val = v.IsBoolean() ? (v.As<Napi::Boolean>().Value() ? "yes" : "no") : v.ToString().Utf8Value();
      if (key.empty() || key[0] != '-') key = "-" + key;
      if (key == "-scribed_share_lm") {
        // Ours, not a pocketsphinx flag: "no" makes this decoder read its own language model.
        shareLm = val != "no";
        continue;
      }
      if (key == "-scribed_confidence") {
        // Ours: "no" skips the word posteriors (endUtterance() gives prob null), for measuring
        // what they cost.
        confidence_ = val != "no";
        continue;
      }
      if (key == "-scribed_share_dict") {
        // Ours too: "no" makes this decoder read its own dictionary; "test-refuse" makes the
        // layout check fail after the swap (tests of the fallback).
        shareDict = val != "no";
        refuseDict = val == "test-refuse";
        continue;
      }
      if (key == "-scribed_share_vocab") {
        // Ours: "no" keeps this decoder's search vocabulary its own (for measuring).
        shareVocab = val != "no";
        continue;
      }
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
    // The language model: shared with the process's other decoders when the search is the
    // plain -lm one (the same ps_set_lm() + ps_set_search() as ps_reinit() does for -lm, with
    // this decoder's view of the shared model instead of a model of its own).
    const char *lm = cmd_ln_str_r(config_, "-lm");
    SharedLm *shared = nullptr;
    if (shareLm && lm != nullptr && cmd_ln_str_r(config_, "-lmctl") == nullptr && cmd_ln_str_r(config_, "-fsg") == nullptr &&
        cmd_ln_str_r(config_, "-jsgf") == nullptr && cmd_ln_str_r(config_, "-kws") == nullptr &&
        cmd_ln_str_r(config_, "-keyphrase") == nullptr && cmd_ln_str_r(config_, "-allphone") == nullptr) {
      lm_path_ = lm;
      std::string why;
      shared = AcquireSharedLm(config_, lm_path_, &why);
      if (shared != nullptr) {
        cmd_ln_set_str_r(config_, "-lm", nullptr);  // ps_init() then makes no search of its own
      } else {
        std::fprintf(stderr, "scribed pocketsphinx: language model not shared (%s); this decoder reads its own\n", why.c_str());
      }
    }
    // The dictionary: shared when the language model is (no search exists after ps_init()).
    const char *dictArg = cmd_ln_str_r(config_, "-dict");
    bool tryDict = shared != nullptr && shareDict && dictArg != nullptr;
    if (tryDict) {
      dict_path_ = dictArg;
      cmd_ln_set_str_r(config_, "-dict", nullptr);  // ps_init() reads the fillers only
    }
    ps_ = ps_init(config_);
    if (tryDict) {
      cmd_ln_set_str_r(config_, "-dict", dict_path_.c_str());
      if (ps_ != nullptr) {
        std::string why;
        SharedDict *sd = AcquireSharedDict(config_, dict_path_, &why);
        if (sd != nullptr && AdoptSharedDict(ps_, sd, refuseDict, &why)) {
          shared_dict_ = sd;
          g_dict_stats.dictUsers++;
          g_dict_stats.dictUsersLive++;
        } else {
          // As before: a decoder with its own dictionary (ps_free() first: the decoder may hold
          // the shared dictionary where its own was).
          ps_free(ps_);
          if (sd != nullptr) {
            ReleaseSharedDict(sd);
            g_dict_stats.dictShareRefused++;
          }
          std::fprintf(stderr, "scribed pocketsphinx: dictionary not shared (%s); this decoder reads its own\n", why.c_str());
          ps_ = ps_init(config_);
        }
      }
    }
    if (ps_ != nullptr && shared_dict_ == nullptr) g_dict_stats.dictPrivate++;
    if (ps_ != nullptr && shared != nullptr) {
      ngram_model_t *view = MakeView(shared);
      ReleaseSharedLm(shared);  // the view holds it now
      int rv = ps_set_lm(ps_, kDefaultSearch, view);
      ngram_model_free(view);  // the search holds it now (or it is freed: set failed)
      if (rv < 0 || ps_set_search(ps_, kDefaultSearch) < 0) {
        ps_free(ps_);
        ps_ = nullptr;
        DropSharedDict();
      } else {
        lm_shared_ = true;
        if (shared_dict_ != nullptr && shareVocab) {
          std::string why;
          if (!ShareVocab(ps_, kDefaultSearch, shared, shared_dict_, &why)) {
            std::lock_guard<std::mutex> vocabLock(g_vocab_mutex);
            g_vocab_stats.vocabShareRefused++;
            std::fprintf(stderr, "scribed pocketsphinx: search vocabulary not shared (%s); this decoder keeps its own\n", why.c_str());
          }
        }
      }
    } else if (shared != nullptr) {
      ReleaseSharedLm(shared);
    }
    if (ps_ == nullptr) {
      cmd_ln_free_r(config_);
      config_ = nullptr;
      throw Napi::Error::New(env, "pocketsphinx: ps_init failed (check -hmm, -lm, -dict, -featparams)");
    }
    if (!lm_shared_) {
      std::lock_guard<std::mutex> statsLock(g_lm_mutex);
      g_stats.lmPrivate++;
    }
  }

  ~Decoder() override { Free(); }

 private:
  void Free() {
    // ps_free() drops references to a shared dictionary: counts other threads change too.
    std::lock_guard<std::mutex> lock(g_init_mutex);
    if (ps_ != nullptr) {
      if (in_utt_) ps_end_utt(ps_);
      ps_free(ps_);
      ps_ = nullptr;
    }
    DropSharedDict();
    if (config_ != nullptr) {
      cmd_ln_free_r(config_);
      config_ = nullptr;
    }
    in_utt_ = false;
  }

  // This decoder's use of the shared dictionary, after ps_free() or ps_load_dict() dropped its
  // references to it. Called with g_init_mutex held.
  void DropSharedDict() {
    if (shared_dict_ == nullptr) return;
    ReleaseSharedDict(shared_dict_);
    shared_dict_ = nullptr;
    g_dict_stats.dictUsersLive--;
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
    // process(samples, false): decode only. The partial hypothesis is a backtrace through
    // the search, paid on every call that asks for it; a caller feeding a batch in pieces
    // asks on the last piece only.
    if (info.Length() >= 2 && info[1].IsBoolean() && !info[1].As<Napi::Boolean>().Value()) return env.Undefined();
    int32 score = 0;
    const char *hyp = ps_get_hyp(ps_, &score);
    return Napi::String::New(env, hyp != nullptr ? hyp : "");
  }

  // One word of the utterance's best path (the fast search's backtrace), fillers left out.
  struct HypWord {
    std::string word;  // base word: "read(2)" -> "read"
    int sf;
    int ef;  // inclusive, as ps_seg_frames() gives it
  };

  // Word posteriors for the best path's words, from the word lattice of the utterance just
  // ended (docs/engines.md, "Word confidence"): only its forward and backward sums are used
  // (ps_lattice_bestpath() computes the link alphas, ps_lattice_posterior() the betas); the
  // words are those the caller took from the search. A word's posterior is P(word w is being
  // spoken at frame t | audio) for t its middle frame: the sum of the posteriors of every link
  // leaving a node of the same base word (any pronunciation) whose span covers t. Paths through
  // the lattice cross frame t on exactly one link each, so the sum is a probability (<= 1 up to
  // the log table's rounding). Writes one value in [0, 1] per word; false when the decoder gave
  // no lattice (then the caller reports no confidence).
  bool WordPosteriors(const std::vector<HypWord> &words, std::vector<double> *out) {
    ps_lattice_t *dag = ps_get_lattice(ps_);
    if (dag == nullptr) return false;
    const char *search = ps_get_search(ps_);
    ngram_model_t *lm = search != nullptr ? ps_get_lm(ps_, search) : nullptr;
    cmd_ln_t *config = ps_get_config(ps_);
    // As the n-gram search scales them for its own -bestpath pass.
    float32 ascale = 1.0f / cmd_ln_float32_r(config, "-ascale");
    float32 lwf = cmd_ln_float32_r(config, "-bestpathlw") / cmd_ln_float32_r(config, "-lw");
    // With -bestpath yes the search has already run both passes over this lattice, with these
    // same weights, to find the final's words (ngram_search_bestpath() runs the posterior pass
    // too); ps_get_prob() makes sure of that and returns non-zero then. Running them again cost
    // about 4% of the decoder's instructions (callgrind, dev clips; docs/benchmarks.md).
    if (ps_get_prob(ps_) == 0) {
      if (ps_lattice_bestpath(dag, lm, lwf, ascale) == nullptr) return false;
      ps_lattice_posterior(dag, lm, ascale);
    }
    logmath_t *lmath = ps_lattice_get_logmath(dag);
    const int32 zero = logmath_get_zero(lmath);
    std::vector<int32> sum(words.size(), zero);
    std::vector<int> mid(words.size());
    for (size_t i = 0; i < words.size(); i++) mid[i] = (words[i].sf + words[i].ef) / 2;
    for (ps_latnode_iter_t *it = ps_latnode_iter(dag); it != nullptr; it = ps_latnode_iter_next(it)) {
      ps_latnode_t *node = ps_latnode_iter_node(it);
      for (ps_latlink_iter_t *x = ps_latnode_exits(node); x != nullptr; x = ps_latlink_iter_next(x)) {
        ps_latlink_t *link = ps_latlink_iter_link(x);
        int16 sf = 0;
        int ef = ps_latlink_times(link, &sf);
        const char *base = nullptr;
        for (size_t i = 0; i < words.size(); i++) {
          if (mid[i] < sf || mid[i] > ef) continue;
          if (base == nullptr) base = ps_latlink_baseword(dag, link);
          if (base == nullptr || words[i].word != base) continue;
          sum[i] = logmath_add(lmath, sum[i], ps_latlink_prob(dag, link, nullptr));
        }
      }
    }
    out->assign(words.size(), 0.0);
    for (size_t i = 0; i < words.size(); i++) {
      double p = sum[i] <= zero ? 0.0 : logmath_exp(lmath, sum[i]);
      (*out)[i] = p < 0.0 ? 0.0 : (p > 1.0 ? 1.0 : p);
    }
    return true;
  }

  Napi::Value EndUtterance(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    CheckAlive(env);
    Napi::Object result = Napi::Object::New(env);
    Napi::Array words = Napi::Array::New(env);
    std::string text;
    // Thread CPU of ending the utterance (search finish and backtrace) and of the posteriors,
    // reported for measuring what confidences cost per final (docs/engines.md).
    double endCpuMs = 0, posteriorCpuMs = 0;
    if (in_utt_) {
      in_utt_ = false;
      double t0 = ThreadCpuMs();
      if (ps_end_utt(ps_) < 0) throw Napi::Error::New(env, "pocketsphinx: ps_end_utt failed");
      int32 score = 0;
      const char *hyp = ps_get_hyp(ps_, &score);
      if (hyp != nullptr) text = hyp;
      std::vector<HypWord> best;
      for (ps_seg_t *seg = ps_seg_iter(ps_); seg != nullptr; seg = ps_seg_next(seg)) {
        const char *w = ps_seg_word(seg);
        if (IsFiller(w)) continue;
        int sf = 0, ef = 0;
        ps_seg_frames(seg, &sf, &ef);
        best.push_back({BaseWord(w), sf, ef});
      }
      // ps_seg_next frees the iterator when it returns NULL.
      double t1 = ThreadCpuMs();
      endCpuMs = t1 - t0;
      std::vector<double> posterior;
      bool scored = confidence_ && !best.empty() && WordPosteriors(best, &posterior);
      posteriorCpuMs = ThreadCpuMs() - t1;
      for (uint32_t i = 0; i < best.size(); i++) {
        Napi::Object word = Napi::Object::New(env);
        word.Set("word", best[i].word);
        word.Set("startFrame", best[i].sf);
        word.Set("endFrame", best[i].ef + 1);  // exclusive: the frame after the last one of the word
        word.Set("prob", scored ? Napi::Value(Napi::Number::New(env, posterior[i])) : env.Null());
        words.Set(i, word);
      }
    }
    result.Set("text", text);
    result.Set("words", words);
    result.Set("endCpuMs", endCpuMs);
    result.Set("posteriorCpuMs", posteriorCpuMs);
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
    if (shared_dict_ != nullptr) {
      // ps_add_word() adds to the decoder's dictionary and maps: never to the shared ones. This
      // decoder reads its own first (ps_load_dict() also gives every search of the decoder the
      // new one, and drops their references to the shared one).
      std::lock_guard<std::mutex> lock(g_init_mutex);
      // ps_load_dict() rebuilds the search's vocabulary in place: never the shared one.
      UnshareVocab(ps_get_lm(ps_, base_search_.c_str()));
      if (ps_load_dict(ps_, dict_path_.c_str(), nullptr, nullptr) < 0) {
        throw Napi::Error::New(env, "pocketsphinx: could not read the dictionary " + dict_path_);
      }
      DropSharedDict();
      g_dict_stats.dictPrivate++;
    }
    if (lm_shared_) {
      // ps_add_word() adds each word to the search's language model: never to the shared
      // one. This decoder reads its own, as it would have without sharing (ps_set_lm_file is
      // what ps_init() does for -lm), then continues as before.
      std::lock_guard<std::mutex> lock(g_init_mutex);
      if (ps_set_lm_file(ps_, base_search_.c_str(), lm_path_.c_str()) < 0 || ps_set_search(ps_, base_search_.c_str()) < 0) {
        throw Napi::Error::New(env, "pocketsphinx: could not read the language model " + lm_path_);
      }
      lm_shared_ = false;
      std::lock_guard<std::mutex> statsLock(g_lm_mutex);
      g_stats.lmPrivate++;
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

  static constexpr const char *kDefaultSearch = "_default";  // PS_DEFAULT_SEARCH

  std::vector<std::string> args_;
  std::string base_search_;
  std::string lm_path_;
  std::string dict_path_;
  SharedDict *shared_dict_ = nullptr;  // the process-wide dictionary this decoder reads, if any
  bool lm_shared_ = false;  // the search scores through a view of a process-wide model
  cmd_ln_t *config_ = nullptr;
  ps_decoder_t *ps_ = nullptr;
  bool in_utt_ = false;
  bool confidence_ = true;  // endUtterance() computes word posteriors (-scribed_confidence)
};

// stats(): the process-wide sharing counters (all worker threads load this one library).
Napi::Value GetStats(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  Stats st;
  double models = 0;
  {
    std::lock_guard<std::mutex> lock(g_lm_mutex);
    st = g_stats;
    models = static_cast<double>(g_lms.size());
  }
  DictStats ds;
  double dicts = 0;
  {
    std::lock_guard<std::mutex> lock(g_init_mutex);
    ds = g_dict_stats;
    dicts = static_cast<double>(g_dicts.size());
  }
  Napi::Object o = Napi::Object::New(env);
  o.Set("dictLoads", ds.dictLoads);
  o.Set("dictSharedModels", dicts);
  o.Set("dictUsers", ds.dictUsers);
  o.Set("dictUsersLive", ds.dictUsersLive);
  o.Set("dictPrivate", ds.dictPrivate);
  o.Set("dictShareRefused", ds.dictShareRefused);
  VocabStats vs;
  {
    std::lock_guard<std::mutex> lock(g_vocab_mutex);
    vs = g_vocab_stats;
  }
  o.Set("vocabShared", vs.vocabShared);
  o.Set("vocabUsersLive", vs.vocabUsersLive);
  o.Set("vocabShareRefused", vs.vocabShareRefused);
  o.Set("vocabCopies", vs.vocabCopies);
  o.Set("lmLoads", st.lmLoads);
  o.Set("lmSharedModels", models);
  o.Set("lmViews", st.lmViews);
  o.Set("lmViewsLive", st.lmViewsLive);
  o.Set("lmPrivate", st.lmPrivate);
  o.Set("lmShareRefused", st.lmShareRefused);
  return o;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("Decoder", Decoder::Define(env));
  exports.Set("stats", Napi::Function::New(env, GetStats, "stats"));
  exports.Set("Resampler", scribed::DefineResampler(env));
  return exports;
}

}  // namespace

NODE_API_MODULE(scribed_pocketsphinx, Init)
