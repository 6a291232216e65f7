#!/usr/bin/env bash
# Builds an assets dir for the telephony profile with an adapted acoustic model: Debian's en-us
# model MAP-adapted (sphinxtrain `bw` + `map_adapt`) to narrowband telephone speech, in
# <outdir>/en-us-adapted, beside a copy of the telephony feat.params (default outdir
# models/telephony-adapted). A server started with SCRIBED_ASSETS_DIR=<outdir>
# decodes telephony sessions with it (src/engine/backends/pocketsphinx.ts); the default assets
# dir, models/telephony, keeps the stock model. Not the default because, adapted on one
# speaker, it helps that speaker and hurts others (docs/engines.md, "Telephony adaptation").
#
# Adaptation data: the "tune" half of Asterisk's English prompts (scripts/asterisk-prompts.sh;
# Debian asterisk-core-sounds-en-wav, 8 kHz, one speaker, about 8 minutes), through the same
# channel the service feeds the decoder for calls: 8 kHz mu-law, upsampled to 16 kHz. Never the
# "eval" half (bench/eval-set/prompts) nor the dev set. Prompts with a word the dictionary does
# not have are left out (bw cannot align them).
# Recipe: the CMU adaptation recipe for a PTM model. Debian ships the model's mixture weights
# only as a quantised `sendump`, so they are expanded back into a sphinxtrain mixture_weights
# file first (read the way pocketsphinx reads it), adapted, and dumped again with mk_s2sendump.
# The front end is the telephony profile's (its feat.params with the narrowband -cmninit from
# scripts/build-telephony-model.sh, -remove_noise no); features get live CMN in bw, as the
# decoder normalises them.
# Reproducible (sorted, no dither, fixed tools) and idempotent: it does nothing when the output
# is there for the same inputs; FORCE=1 rebuilds. About a minute on 2 cores.
#
# usage: scripts/build-adapted-model.sh [outdir] [telephony feat.params]
#   TAU=N (MAP prior weight, default 100), BW_CMN=live|batch (bw's CMN, default live): for
#   measuring other settings; the stamp records both.
set -euo pipefail

cd "$(dirname "$0")/.."
ASSETS="${1:-models/telephony-adapted}"
OUT="$ASSETS/en-us-adapted"
FEAT="${2:-models/telephony/feat.params}"
MODEL_DIR="${POCKETSPHINX_MODEL_DIR:-/usr/share/pocketsphinx/model/en-us}"
HMM="$MODEL_DIR/en-us"
DICT="$MODEL_DIR/cmudict-en-us.dict"
SOUNDS=/usr/share/asterisk/sounds/en_US_f_Allison
ST=/usr/lib/sphinxtrain
TAU="${TAU:-100}"     # MAP prior weight (the team's engine notes: tau 100)
VERSION=1   # bump when the method below changes

missing=()
for p in sphinxtrain pocketsphinx pocketsphinx-en-us sphinxbase-utils sox asterisk-core-sounds-en asterisk-core-sounds-en-wav; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "build-adapted-model: missing Debian packages: ${missing[*]} (scripts/setup.sh installs them)" >&2
  exit 1
fi
[ -f "$FEAT" ] || { echo "build-adapted-model: no $FEAT (run scripts/build-telephony-model.sh first)" >&2; exit 1; }

STAMP="v$VERSION tau=$TAU cmn=${BW_CMN:-live} $(dpkg-query -W -f='${Package}=${Version} ' sphinxtrain pocketsphinx-en-us sox asterisk-core-sounds-en-wav) $(sha256sum "$FEAT" scripts/asterisk-prompts.sh | cut -c1-16 | tr '\n' ' ')"
if [ -z "${FORCE:-}" ] && [ -f "$OUT/sendump" ] && [ "$(cat "$OUT/stamp" 2>/dev/null)" = "$STAMP" ] && cmp -s "$FEAT" "$ASSETS/feat.params"; then
  echo "build-adapted-model: $OUT is up to date"
  exit 0
fi

WORK="$(mktemp -d)"
trap '[ -n "${KEEP_WORK:-}" ] && echo "build-adapted-model: kept $WORK" >&2 || rm -rf "$WORK"' EXIT
mkdir -p "$WORK/wav" "$WORK/mfc" "$WORK/accum" "$WORK/in" "$WORK/out"

# 1. The tune half, through the telephone channel, with transcripts in sphinxtrain's form.
#    Words are lower-cased, hyphens and punctuation become spaces (as the evaluation set's
#    references); a prompt with a word outside the dictionary is left out.
bash scripts/asterisk-prompts.sh wav | awk -F'\t' '$3 == "tune"' > "$WORK/prompts.tsv"
node - "$WORK/prompts.tsv" "$DICT" "$WORK" <<'JS'
const fs = require('node:fs');
const [tsv, dictPath, work] = process.argv.slice(2);
const dict = new Set(fs.readFileSync(dictPath, 'utf8').split('\n').map((l) => l.split(/\s/)[0]).filter(Boolean));
const keep = [], dropped = [];
for (const line of fs.readFileSync(tsv, 'utf8').split('\n').filter(Boolean)) {
  const [key, text] = line.split('\t');
  const words = text.normalize('NFKC').replace(/[\u2018\u2019]/g, "'").toLowerCase()
    .replace(/[^a-z']+/g, ' ').split(' ').map((w) => w.replace(/^'+|'+$/g, '')).filter(Boolean);
  if (words.length === 0 || words.some((w) => !dict.has(w))) { dropped.push(key); continue; }
  keep.push({ key, id: 'u' + String(keep.length + 1).padStart(5, '0'), words });
}
fs.writeFileSync(`${work}/keys`, keep.map((k) => `${k.id}\t${k.key}`).join('\n') + '\n');
fs.writeFileSync(`${work}/ctl`, keep.map((k) => k.id).join('\n') + '\n');
fs.writeFileSync(`${work}/lsn`, keep.map((k) => `<s> ${k.words.join(' ')} </s> (${k.id})`).join('\n') + '\n');
console.error(`build-adapted-model: ${keep.length} prompts, ${dropped.length} left out for words outside the dictionary`);
JS
while IFS=$'\t' read -r id key; do
  sox -D -V1 "$SOUNDS/$key.wav" -c 1 -r 8000 -e mu-law -t ul - \
    | sox -D -V1 -t ul -r 8000 -e mu-law -c 1 - -r 16000 -b 16 -e signed-integer "$WORK/wav/$id.wav"
done < "$WORK/keys"

# 2. Cepstra with the telephony front end.
sphinx_fe -argfile "$FEAT" -samprate 16000 -remove_noise no -dither no -mswav yes \
  -c "$WORK/ctl" -di "$WORK/wav" -ei wav -do "$WORK/mfc" -eo mfc >"$WORK/fe.log" 2>&1 \
  || { tail -20 "$WORK/fe.log" >&2; exit 1; }

# 3. The model in sphinxtrain's forms: a text mdef, and mixture_weights expanded from sendump.
#    sendump: int32 title length + title, header strings until a 0 length, then (no cluster
#    codebook in this model) int32 rows (densities) and columns (senones), then per feature
#    stream and density one byte per senone: -log of the weight in pocketsphinx's 8-bit log
#    base (1.0001^1024). mixture_weights: sphinxtrain's s3 binary file, float32
#    [senone][stream][density], normalised per senone and stream.
pocketsphinx_mdef_convert -text "$HMM/mdef" "$WORK/in/mdef.txt" >/dev/null 2>&1
node - "$HMM/sendump" "$WORK/in/mixture_weights" <<'JS'
const fs = require('node:fs');
const [src, dst] = process.argv.slice(2);
const b = fs.readFileSync(src);
let off = 0;
const titleLen = b.readInt32LE(0);
if (titleLen < 1 || titleLen > 999) throw new Error('sendump: big-endian or unknown layout');
off = 4 + titleLen;
const header = {};
for (;;) {
  const n = b.readInt32LE(off); off += 4;
  if (n === 0) break;
  const s = b.toString('latin1', off, off + n - 1); off += n;
  const m = /^(\w+) (\d+)/.exec(s);
  if (m) header[m[1]] = Number(m[2]);
}
if (header.cluster_count) throw new Error('sendump: clustered weights are not handled');
const nFeat = header.feature_count ?? 3;
const rows = b.readInt32LE(off); off += 4;
const cols = b.readInt32LE(off); off += 4;
const shift = header.mixw_shift ?? 10;
if (off + nFeat * rows * cols !== b.length) throw new Error(`sendump: size ${b.length} does not match ${nFeat}x${rows}x${cols}`);
const nDensity = rows, nSen = cols;
const w = new Float32Array(nSen * nFeat * nDensity);
for (let f = 0; f < nFeat; f++)
  for (let d = 0; d < nDensity; d++)
    for (let s = 0; s < nSen; s++)
      w[(s * nFeat + f) * nDensity + d] = Math.pow(1.0001, -(b[off++] << shift));
for (let i = 0; i < nSen * nFeat; i++) {
  let sum = 0;
  for (let d = 0; d < nDensity; d++) sum += w[i * nDensity + d];
  for (let d = 0; d < nDensity; d++) w[i * nDensity + d] /= sum;
}
let head = 's3\nversion 1.0\n';
const pad = (4 - ((head.length + 'endhdr\n'.length) & 3)) & 3;
head += ' '.repeat(pad) + 'endhdr\n';
const dims = Buffer.alloc(4 + 16);
dims.writeInt32LE(0x11223344, 0);
[nSen, nFeat, nDensity, w.length].forEach((v, i) => dims.writeUInt32LE(v, 4 + i * 4));
fs.writeFileSync(dst, Buffer.concat([Buffer.from(head, 'latin1'), dims, Buffer.from(w.buffer)]));
console.error(`build-adapted-model: mixture weights ${nSen} senones x ${nFeat} streams x ${nDensity} densities`);
JS
for f in means variances transition_matrices noisedict; do cp "$HMM/$f" "$WORK/in/$f"; done

# 4. Counts (Baum-Welch over the prompts), then MAP.
CMNINIT=$(sed -n 's/^-cmninit //p' "$FEAT")
"$ST/bw" -hmmdir "$WORK/in" -moddeffn "$WORK/in/mdef.txt" -ts2cbfn .ptm. -mixwfn "$WORK/in/mixture_weights" \
  -feat 1s_c_d_dd -svspec 0-12/13-25/26-38 -cmn "${BW_CMN:-live}" -cmninit "$CMNINIT" -agc none -varnorm no \
  -dictfn "$DICT" -fdictfn "$HMM/noisedict" -ctlfn "$WORK/ctl" -lsnfn "$WORK/lsn" \
  -cepdir "$WORK/mfc" -accumdir "$WORK/accum" -timing no >"$WORK/bw.log" 2>&1 \
  || { tail -20 "$WORK/bw.log" >&2; exit 1; }
"$ST/map_adapt" -moddeffn "$WORK/in/mdef.txt" -ts2cbfn .ptm. \
  -meanfn "$WORK/in/means" -varfn "$WORK/in/variances" -mixwfn "$WORK/in/mixture_weights" \
  -tmatfn "$WORK/in/transition_matrices" -accumdir "$WORK/accum" -fixedtau yes -tau "$TAU" \
  -mapmeanfn "$WORK/out/means" -mapvarfn "$WORK/out/variances" \
  -mapmixwfn "$WORK/out/mixture_weights" -maptmatfn "$WORK/out/transition_matrices" >"$WORK/map.log" 2>&1 \
  || { tail -20 "$WORK/map.log" >&2; exit 1; }
"$ST/mk_s2sendump" -pocketsphinx yes -moddeffn "$WORK/in/mdef.txt" -mixwfn "$WORK/out/mixture_weights" \
  -sendumpfn "$WORK/out/sendump" >"$WORK/dump.log" 2>&1 \
  || { tail -20 "$WORK/dump.log" >&2; exit 1; }

# 5. The model folder: adapted parameters, the stock mdef and noise dictionary, the telephony
#    feat.params. Written beside and renamed, so a half-built folder never replaces a good one.
rm -rf "$OUT.tmp"
mkdir -p "$OUT.tmp" "$ASSETS"
cp "$WORK/out/means" "$WORK/out/variances" "$WORK/out/transition_matrices" "$WORK/out/sendump" "$OUT.tmp/"
cp "$HMM/mdef" "$HMM/noisedict" "$OUT.tmp/"
cp "$FEAT" "$OUT.tmp/feat.params"
echo "$STAMP" > "$OUT.tmp/stamp"
rm -rf "$OUT"
mv "$OUT.tmp" "$OUT"
cp "$FEAT" "$ASSETS/feat.params"
echo "build-adapted-model: $OUT ($(wc -l < "$WORK/ctl") prompts, tau $TAU)"
