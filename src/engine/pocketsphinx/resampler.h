// The addon's native resampler class (resampler.cc), registered by the addon's Init.
#pragma once
#include <napi.h>

namespace scribed {
Napi::Function DefineResampler(Napi::Env env);
}
