{
  "targets": [
    {
      "target_name": "scribed_pocketsphinx",
      "sources": ["src/engine/pocketsphinx/addon.cc", "src/engine/pocketsphinx/resampler.cc"],
      "include_dirs": [
        "<!(node -p \"require('node-addon-api').include_dir\")"
      ],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS", "NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags_cc": ["-std=c++17", "-fexceptions", "<!@(pkg-config --cflags pocketsphinx sphinxbase soxr)"],
      "cflags": ["<!@(pkg-config --cflags pocketsphinx sphinxbase soxr)"],
      "libraries": ["<!@(pkg-config --libs pocketsphinx sphinxbase soxr)"]
    }
  ]
}
