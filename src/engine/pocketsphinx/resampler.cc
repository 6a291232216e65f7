// Native streaming resampler on libsoxr, int16 mono in and out. Part of the recognizer addon
// because the recognition worker is its only user: it converts every stream's input rate to
// the engine's (8 kHz telephony to 16 kHz above all), and in C it costs a tenth of the WASM
// libsamplerate it replaced (docs/engines.md, "Upsampling telephone audio").
//
// The filter is sox's own `rate` (libsoxr is its engine): the recognizer hears what the bare
// `sox ... -r 16000 | pocketsphinx_continuous` baseline hears.
#include "resampler.h"

#include <soxr.h>

#include <algorithm>
#include <string>
#include <vector>

namespace scribed {
namespace {

class Resampler : public Napi::ObjectWrap<Resampler> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "Resampler",
                       {
                           InstanceMethod("process", &Resampler::Process),
                           InstanceMethod("drain", &Resampler::Drain),
                           InstanceMethod("clear", &Resampler::Clear),
                           InstanceMethod("destroy", &Resampler::Destroy),
                       });
  }

  // new Resampler(inRate, outRate)
  explicit Resampler(const Napi::CallbackInfo &info) : Napi::ObjectWrap<Resampler>(info) {
    Napi::Env env = info.Env();
    if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsNumber()) {
      throw Napi::TypeError::New(env, "Resampler(inRate, outRate): two numbers required");
    }
    in_rate_ = info[0].As<Napi::Number>().DoubleValue();
    out_rate_ = info[1].As<Napi::Number>().DoubleValue();
    if (!(in_rate_ > 0) || !(out_rate_ > 0)) throw Napi::RangeError::New(env, "Resampler: rates must be positive");
    // No dither: int16 in, int16 out, and the recognizer gains nothing from added noise
    // (sox -D in the CLI baseline).
    soxr_io_spec_t io = soxr_io_spec(SOXR_INT16_I, SOXR_INT16_I);
    io.flags |= SOXR_NO_DITHER;
    // sox's default `rate` quality: 20-bit, linear phase, 0 dB up to 91.3% of the lower
    // Nyquist (a 3.7 kHz tone from 8 kHz passes whole, 3.9 kHz is cut). Its output is within
    // 2 LSB of sox's on the dev clips.
    soxr_quality_spec_t quality = soxr_quality_spec(SOXR_HQ, SOXR_LINEAR_PHASE);
    // DFT blocks of at most 2^10: with soxr's default (2^17) 8 kHz input comes out in bursts
    // up to 220 ms behind; with 2^10, 20-42 ms behind (libsamplerate's best sinc: about 40 ms),
    // at a cost still under 0.001 CPU s per audio second.
    soxr_runtime_spec_t runtime = soxr_runtime_spec(1);
    runtime.log2_large_dft_size = 10;
    soxr_error_t err = nullptr;
    soxr_ = soxr_create(in_rate_, out_rate_, 1, &err, &io, &quality, &runtime);
    if (err != nullptr || soxr_ == nullptr) {
      throw Napi::Error::New(env, std::string("soxr_create: ") + soxr_strerror(err));
    }
  }

  ~Resampler() override { Free(); }

 private:
  // process(samples: Int16Array): Int16Array, whatever output the filter can give so far.
  Napi::Value Process(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    Live(env);
    if (info.Length() < 1 || !info[0].IsTypedArray() ||
        info[0].As<Napi::TypedArray>().TypedArrayType() != napi_int16_array) {
      throw Napi::TypeError::New(env, "process(samples): Int16Array required");
    }
    Napi::Int16Array samples = info[0].As<Napi::Int16Array>();
    return Run(env, samples.Data(), samples.ElementLength());
  }

  // drain(): Int16Array, the output still held in the filter once the input has ended. The
  // resampler is then cleared for a fresh stream.
  Napi::Value Drain(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    Live(env);
    Napi::Value out = Run(env, nullptr, 0);
    soxr_clear(soxr_);
    return out;
  }

  Napi::Value Clear(const Napi::CallbackInfo &info) {
    Live(info.Env());
    soxr_clear(soxr_);
    return info.Env().Undefined();
  }

  Napi::Value Destroy(const Napi::CallbackInfo &info) {
    Free();
    return info.Env().Undefined();
  }

  // Feeds `n` samples (end of input when `in` is null) and collects every sample the filter
  // returns. soxr takes input only in proportion to the output room it is given, so this goes
  // round until all the input is in and a round leaves output room unused.
  Napi::Value Run(Napi::Env env, const int16_t *in, size_t n) {
    size_t used = 0;
    size_t got = 0;
    for (int round = 0; round < 4096; round++) {
      size_t room = static_cast<size_t>(static_cast<double>(n - used) * out_rate_ / in_rate_) + 256;
      if (out_.size() < got + room) out_.resize(got + room);
      size_t idone = 0;
      size_t odone = 0;
      soxr_error_t err = soxr_process(soxr_, in == nullptr ? nullptr : in + used, in == nullptr ? 0 : n - used,
                                      &idone, out_.data() + got, room, &odone);
      if (err != nullptr) throw Napi::Error::New(env, std::string("soxr_process: ") + soxr_strerror(err));
      used += idone;
      got += odone;
      if ((in == nullptr || used == n) && odone < room) break;
    }
    Napi::Int16Array result = Napi::Int16Array::New(env, got);
    std::copy(out_.begin(), out_.begin() + static_cast<std::ptrdiff_t>(got), result.Data());
    return result;
  }

  void Live(Napi::Env env) {
    if (soxr_ == nullptr) throw Napi::Error::New(env, "Resampler: destroyed");
  }

  void Free() {
    if (soxr_ != nullptr) soxr_delete(soxr_);
    soxr_ = nullptr;
  }

  soxr_t soxr_ = nullptr;
  double in_rate_ = 0;
  double out_rate_ = 0;
  std::vector<int16_t> out_;
};

}  // namespace

Napi::Function DefineResampler(Napi::Env env) { return Resampler::Define(env); }

}  // namespace scribed
