#!/usr/bin/env bash
# Idempotent set-up on a fresh Debian machine: system packages, npm packages, the native
# pocketsphinx addon, the TypeScript build, the generated telephony assets and the `scribed`
# command on PATH. Both README commands (`npm start`, `npm test`) run it first, so a second run
# must cost next to nothing: every step is skipped while its output is newer than its inputs
# (scripts/up-to-date.sh; stamps in node_modules/.cache/scribed-setup/), and a changed input
# redoes only its step. FORCE=1 redoes every step. Quiet: each step that runs prints one line
# and keeps its output in node_modules/.cache/scribed-setup/logs/STEP.log, shown when it fails;
# the set-up ends with a one-line summary of what ran, how long each took, and what was up to date.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
# shellcheck source=scripts/up-to-date.sh
. scripts/up-to-date.sh
STAMPS=node_modules/.cache/scribed-setup
if [ -n "${FORCE:-}" ]; then rm -rf "$STAMPS"; fi

# sphinxtrain: scripts/build-adapted-model.sh adapts the telephony acoustic model.
# python3-onnx: the tests build a tiny sherpa-onnx model with scripts/make-tiny-transducer.py.
# libsoxr-dev: the addon's resampler (src/engine/pocketsphinx/resampler.cc) links libsoxr.
# sip-tester: SIPp plays the SIPREC on-ramp's scenarios; openssl: the SIP over TLS tests' peer (s_client) and certificates.
# prometheus: test/ops checks the dashboards and alert rules against a real Prometheus (promtool too).
APT_PACKAGES=(pocketsphinx pocketsphinx-en-us libpocketsphinx-dev libsoxr-dev sphinxbase-utils sphinxtrain asterisk-core-sounds-en-wav pocketsphinx-testdata asterisk-core-sounds-en asterisk-core-sounds-en-g722 pkg-config ffmpeg sox bzip2 build-essential python3 espeak-ng systemd postgresql haproxy chromium python3-onnx prometheus sip-tester openssl)
# Debian packages: checked again only when the package list or dpkg's database changed.
APT_KEY="${APT_PACKAGES[*]}"
if ! up_to_date "$STAMPS/apt" "$APT_KEY" /var/lib/dpkg/status /var/lib/dpkg/status; then
  declare -A apt_status=()
  while read -r p status; do apt_status[$p]=$status; done \
    < <(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${APT_PACKAGES[@]}" 2>/dev/null || true)
  missing=()
  for p in "${APT_PACKAGES[@]}"; do
    [ "${apt_status[$p]:-}" = "installed" ] || missing+=("$p")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    echo "setup: missing Debian packages: ${missing[*]}"
    step_run apt-update "Debian package lists" $SUDO apt-get update -qq
    step_run apt "Debian packages" $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
  # Stamped after installing, which itself changes dpkg's database.
  begin_step "$STAMPS/apt"
  end_step "$STAMPS/apt" "$APT_KEY"
fi

# Native modules (better-sqlite3, the addon) are built for one Node ABI: a new Node rebuilds.
NODE_KEY="node=$(node --version)"

# npm packages, against package.json and the lock. Not `npm ci`: the registry this runs against
# records only this platform's optional packages (rollup's native builds) in the lock, and
# `npm ci` rejects such a lock as out of sync. `npm install` installs exactly the locked
# versions and leaves the lock unchanged.
if ! up_to_date "$STAMPS/npm" "$NODE_KEY" node_modules/.package-lock.json package.json package-lock.json; then
  # package.json's "gypfile": false keeps npm from building the addon itself (its default
  # install script for a package with a binding.gyp): the addon step below builds it, once.
  step_run npm "npm packages" npm install --no-audit --no-fund
  # Stamped after installing: npm may rewrite the lock (a package.json edit) while it installs.
  begin_step "$STAMPS/npm"
  # better-sqlite3 compiles from source here; an interrupted install can leave it unbuilt, and
  # a new Node needs it rebuilt.
  node -e "new (require('better-sqlite3'))(':memory:').close()" 2>/dev/null || step_run npm-rebuild "better-sqlite3 rebuild" npm rebuild better-sqlite3
  end_step "$STAMPS/npm" "$NODE_KEY"
fi

# The native recognizer addon, against its C++ sources, binding.gyp, node-addon-api and the
# pocketsphinx and libsoxr it links (their versions are in the key).
ADDON_KEY="$NODE_KEY pocketsphinx=$(pkg-config --modversion pocketsphinx 2>/dev/null || echo none) soxr=$(pkg-config --modversion soxr 2>/dev/null || echo none)"
if ! up_to_date "$STAMPS/addon" "$ADDON_KEY" build/Release/scribed_pocketsphinx.node \
  binding.gyp src/engine/pocketsphinx node_modules/node-addon-api/package.json; then
  begin_step "$STAMPS/addon"
  step_run addon "recognizer addon" npm run --silent build:addon
  end_step "$STAMPS/addon" "$ADDON_KEY"
fi

# The TypeScript build, against every source, the compiler settings and the lock (the
# compiler's version).
if ! up_to_date "$STAMPS/dist" "" dist/cli.js src tsconfig.json package-lock.json; then
  begin_step "$STAMPS/dist"
  step_run dist "TypeScript build" npm run --silent build:ts
  end_step "$STAMPS/dist" ""
fi

# Generated telephony model assets: the script keeps its own exact stamp (package versions,
# the stock model's checksum); it is asked only when it or the installed packages changed.
MODEL_INPUTS=(scripts/build-telephony-model.sh /var/lib/dpkg/status)
if ! up_to_date "$STAMPS/telephony" "" models/telephony/feat.params "${MODEL_INPUTS[@]}"; then
  begin_step "$STAMPS/telephony"
  step_run telephony "telephony model" bash scripts/build-telephony-model.sh models/telephony
  end_step "$STAMPS/telephony" ""
fi
# An assets dir with the MAP-adapted telephony acoustic model (opt-in: SCRIBED_ASSETS_DIR=
# models/telephony-adapted), from the telephony feat.params and the "tune" half of the Asterisk
# prompts (about 25 s; its own exact stamp too).
ADAPT_INPUTS=(scripts/build-adapted-model.sh scripts/asterisk-prompts.sh models/telephony/feat.params /var/lib/dpkg/status)
if ! up_to_date "$STAMPS/adapted" "" models/telephony-adapted/en-us-adapted/sendump "${ADAPT_INPUTS[@]}"; then
  begin_step "$STAMPS/adapted"
  step_run adapted "adapted model" bash scripts/build-adapted-model.sh models/telephony-adapted models/telephony/feat.params
  end_step "$STAMPS/adapted" ""
fi

# `scribed` on PATH: the README's commands are written as `scribed ...`. The link points at
# this checkout's dist/cli.js, so it follows every rebuild.
# A plain `npx tsc` writes dist/cli.js without the execute bit the link needs.
chmod +x dist/cli.js
BIN_DIR="$(command_bin_dir)"
if link_command "$ROOT/dist/cli.js" scribed "$BIN_DIR"; then
  case ":$PATH:" in
    *":$BIN_DIR:"*) ;;
    *) if [ "$BIN_DIR" = "$HOME/.local/bin" ]; then
         echo "setup: $BIN_DIR is not on PATH in this shell yet; a new login shell has it (Debian's ~/.profile adds it)"
       else
         echo "setup: $BIN_DIR is not on PATH; add it to PATH to run scribed"
       fi ;;
  esac
fi
setup_summary "Debian packages" "npm packages" "recognizer addon" "TypeScript build" "telephony model" "adapted model"
