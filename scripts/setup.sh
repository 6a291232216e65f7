#!/usr/bin/env bash
# Idempotent set-up on a fresh Debian machine: system packages, npm packages, the native
# pocketsphinx addon, the TypeScript build and the generated telephony assets. Both README
# commands (`npm start`, `npm test`) run it first; a second run only checks and skips.
set -euo pipefail
cd "$(dirname "$0")/.."

# python3-onnx: the tests build a tiny sherpa-onnx model with scripts/make-tiny-transducer.py.
APT_PACKAGES=(pocketsphinx pocketsphinx-en-us libpocketsphinx-dev sphinxbase-utils asterisk-core-sounds-en-wav pkg-config ffmpeg sox bzip2 build-essential python3 espeak-ng systemd postgresql haproxy chromium python3-onnx)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: installing npm packages"
  # Not `npm ci`: the registry this runs against records only this platform's optional
  # packages (rollup's native builds) in the lock, and `npm ci` rejects such a lock as out of
  # sync. `npm install` installs exactly the locked versions and leaves the lock unchanged.
  npm install --no-audit --no-fund
fi
# better-sqlite3 compiles from source here; an interrupted install can leave it unbuilt.
node -e "new (require('better-sqlite3'))(':memory:').close()" 2>/dev/null || npm rebuild better-sqlite3

echo "setup: building"
npm run --silent build
bash scripts/build-telephony-model.sh models/telephony
