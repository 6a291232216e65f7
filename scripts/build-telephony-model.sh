#!/usr/bin/env bash
# Builds the telephony front-end settings for the pocketsphinx engine:
#   <outdir>/feat.params = the stock en-us feat.params with -cmninit set to the cepstral mean
#   of narrowband telephone speech (8 kHz, through mu-law, upsampled back to 16 kHz, exactly
#   what the service feeds the decoder for telephone calls).
# Source speech: Asterisk's recorded English prompts (Debian asterisk-core-sounds-en-wav,
# 8 kHz, one speaker). Never the dev test set (samples/dev): that would be tuning on the test.
# Reproducible (sorted inputs, no dither, fixed tools) and idempotent: it does nothing when
# the output is already there for the same inputs; FORCE=1 rebuilds.
#
# usage: scripts/build-telephony-model.sh [outdir]    (default: models/telephony)
set -euo pipefail

cd "$(dirname "$0")/.."
OUT="${1:-models/telephony}"
MODEL_DIR="${POCKETSPHINX_MODEL_DIR:-/usr/share/pocketsphinx/model/en-us}"
STOCK="$MODEL_DIR/en-us/feat.params"
SOUNDS_PKG=asterisk-core-sounds-en-wav
VERSION=1   # bump when the method below changes

need_pkg() {
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "build-telephony-model: installing ${missing[*]}" >&2
    if [ "$(id -u)" -ne 0 ]; then
      echo "build-telephony-model: need root to apt-get install ${missing[*]}" >&2
      exit 1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2
  fi
}
need_pkg "$SOUNDS_PKG" sphinxbase-utils sox pocketsphinx-en-us

[ -f "$STOCK" ] || { echo "build-telephony-model: missing $STOCK" >&2; exit 1; }

mapfile -t WAVS < <(dpkg -L "$SOUNDS_PKG" | grep -E '\.wav$' | LC_ALL=C sort)
[ "${#WAVS[@]}" -gt 0 ] || { echo "build-telephony-model: no wav files in $SOUNDS_PKG" >&2; exit 1; }

STAMP="v$VERSION $(dpkg-query -W -f='${Package}=${Version} ' "$SOUNDS_PKG" sphinxbase-utils sox pocketsphinx-en-us) $(sha256sum "$STOCK" | cut -c1-16) files=${#WAVS[@]}"
if [ -z "${FORCE:-}" ] && [ -f "$OUT/feat.params" ] && [ "$(cat "$OUT/feat.params.stamp" 2>/dev/null)" = "$STAMP" ]; then
  echo "build-telephony-model: $OUT/feat.params is up to date"
  exit 0
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/wav" "$WORK/mfc"

# 1. Telephone channel: 8 kHz mu-law, then back up to the engine's 16 kHz (no dither: reproducible).
: > "$WORK/ctl"
i=0
for f in "${WAVS[@]}"; do
  i=$((i + 1))
  name=$(printf 'u%05d' "$i")
  sox -D -V1 "$f" -c 1 -r 8000 -e mu-law -t ul - 2>/dev/null \
    | sox -D -V1 -t ul -r 8000 -e mu-law -c 1 - -r 16000 -b 16 -e signed-integer "$WORK/wav/$name.wav" \
    || { echo "build-telephony-model: sox failed on $f" >&2; exit 1; }
  echo "$name" >> "$WORK/ctl"
done

# 2. Cepstra with the model's own front end (same filter bank, same VAD as the decoder), and
#    the telephony profile's -remove_noise no.
sphinx_fe -argfile "$STOCK" -samprate 16000 -remove_noise no -dither no -mswav yes \
  -c "$WORK/ctl" -di "$WORK/wav" -ei wav -do "$WORK/mfc" -eo mfc >"$WORK/fe.log" 2>&1 \
  || { tail -20 "$WORK/fe.log" >&2; exit 1; }

# 3. Mean of every frame's 13 cepstra. Sphinx .mfc: int32 float count, then float32 frames,
#    byte order given by whichever reading of the count matches the file size.
CMN=$(node - "$WORK/mfc" <<'JS'
const fs = require('node:fs');
const path = require('node:path');
const dir = process.argv[2];
const sum = new Float64Array(13);
let frames = 0;
for (const f of fs.readdirSync(dir).sort()) {
  const b = fs.readFileSync(path.join(dir, f));
  const n = (b.length - 4) / 4;
  const le = b.readInt32LE(0) === n;
  if (!le && b.readInt32BE(0) !== n) throw new Error(`${f}: bad mfc header`);
  for (let i = 0; i + 13 <= n; i += 13) {
    for (let k = 0; k < 13; k++) sum[k] += le ? b.readFloatLE(4 + 4 * (i + k)) : b.readFloatBE(4 + 4 * (i + k));
    frames++;
  }
}
if (frames < 1000) throw new Error(`too little speech (${frames} frames)`);
process.stderr.write(`build-telephony-model: ${frames} frames (${(frames / 100 / 60).toFixed(1)} min of speech)\n`);
process.stdout.write(Array.from(sum, (s) => (s / frames).toFixed(2)).join(','));
JS
)

mkdir -p "$OUT"
sed -e "s/^-cmninit .*/-cmninit $CMN/" "$STOCK" > "$WORK/feat.params"
grep -q "^-cmninit $CMN\$" "$WORK/feat.params" || echo "-cmninit $CMN" >> "$WORK/feat.params"
mv "$WORK/feat.params" "$OUT/feat.params"
echo "$STAMP" > "$OUT/feat.params.stamp"
echo "build-telephony-model: wrote $OUT/feat.params (-cmninit $CMN)"
