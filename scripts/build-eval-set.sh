#!/usr/bin/env bash
# Builds the accuracy evaluation set: real recorded speech with known transcripts from Debian
# packages, none of it in the development set (the tuning split, ../shared/samples/dev or
# samples/). Nothing here is ever used to choose a setting: it is the split we never tune on.
#
#   <outdir>/testdata/  pocketsphinx-testdata's recordings other than the LibriVox clips that
#                       are the dev set: cards/001-005.wav, transcripts from cards.transcription.
#   <outdir>/prompts/   Asterisk's English prompts (Allison Smith, CC-BY-SA-3.0): the 16 kHz
#                       G.722 recordings of asterisk-core-sounds-en-g722, texts from the
#                       upstream core-sounds-en.txt that asterisk-core-sounds-en ships; only the
#                       "eval" half of scripts/asterisk-prompts.sh (the "tune" half adapts the
#                       telephony model, scripts/build-adapted-model.sh). Prompts whose text
#                       holds digits, brackets or symbols ("press 1", "[beep]") are left out
#                       rather than guessing how they were read.
#   <outdir>/tune/      the "tune" half of the same prompts: where search settings are chosen
#                       (bench/accuracy.ts BENCH_SPLITS=tune); never reported as accuracy.
#
# Each folder has manifest.jsonl in the dev set's format (id, wav, ulaw, durationSec, reference,
# source, licence): .wav is 16 kHz mono s16le, .ulaw the same clip as headerless 8 kHz G.711
# mu-law (sox, no dither), as a telephone leg would carry it.
# Caveat (docs/benchmarks.md, "Accuracy"): set-up's telephony -cmninit is the mean cepstrum of
# the same Allison recordings (scripts/build-telephony-model.sh), so prompts/ is untouched at
# 16 kHz but not quite at 8 kHz; testdata/ is untouched at both.
# The output is not committed (bench/eval-set/ is gitignored): it is others' material, rebuilt
# from the packages. Reproducible and idempotent; FORCE=1 rebuilds.
#
# usage: scripts/build-eval-set.sh [outdir]    (default: bench/eval-set)
set -euo pipefail

cd "$(dirname "$0")/.."
OUT="${1:-bench/eval-set}"
VERSION=2   # bump when the method below changes
PKGS=(pocketsphinx-testdata asterisk-core-sounds-en asterisk-core-sounds-en-g722 sox ffmpeg)
TESTDATA=/usr/share/pocketsphinx/test/data
SOUNDS=/usr/share/asterisk/sounds/en_US_f_Allison

missing=()
for p in "${PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "build-eval-set: missing Debian packages: ${missing[*]} (scripts/setup.sh installs them)" >&2
  exit 1
fi

STAMP="v$VERSION $(dpkg-query -W -f='${Package}=${Version} ' "${PKGS[@]}")"
if [ -z "${FORCE:-}" ] && [ -f "$OUT/prompts/manifest.jsonl" ] && [ "$(cat "$OUT/stamp" 2>/dev/null)" = "$STAMP" ]; then
  echo "build-eval-set: $OUT is up to date"
  exit 0
fi
rm -rf "$OUT"
mkdir -p "$OUT/testdata" "$OUT/prompts" "$OUT/tune"

# One clip: 16 kHz s16le mono WAV from whatever the source is (ffmpeg reads G.722 and WAV),
# then the mu-law leg made from that WAV.
make_clip() { # <input args for ffmpeg...> -- <out stem>
  local stem="${*: -1}"
  ffmpeg -nostdin -v error -y "${@:1:$#-1}" -ac 1 -ar 16000 -c:a pcm_s16le -map_metadata -1 -fflags +bitexact "$stem.wav"
  sox -D -V1 "$stem.wav" -r 8000 -c 1 -e mu-law -t ul "$stem.ulaw"
}

# Manifest line from "id<TAB>reference text<TAB>source<TAB>licence" on stdin; the reference is
# lower-cased, hyphens and punctuation become spaces, apostrophes inside words are kept.
manifest() { # <dir>
  node -e '
    const fs = require("node:fs"), path = require("node:path");
    const dir = process.argv[1];
    const out = [];
    for (const line of fs.readFileSync(0, "utf8").split("\n").filter(Boolean)) {
      const [id, text, source, licence] = line.split("\t");
      const reference = text.normalize("NFKC").replace(/[\u2018\u2019]/g, "\x27").toLowerCase()
        .replace(/[^a-z\x27]+/g, " ").split(" ").map((w) => w.replace(/^\x27+|\x27+$/g, "")).filter(Boolean).join(" ");
      const bytes = fs.statSync(path.join(dir, id + ".ulaw")).size;
      out.push(JSON.stringify({ id, wav: id + ".wav", ulaw: id + ".ulaw", durationSec: Number((bytes / 8000).toFixed(6)), reference, source, licence }));
    }
    fs.writeFileSync(path.join(dir, "manifest.jsonl"), out.join("\n") + "\n");
  ' "$1"
}

# 1. pocketsphinx-testdata: every clip of cards/ (LibriVox is the dev set, the .raw files have
#    no transcript in the package, tidigits/ is features only).
src="pocketsphinx test data (Debian package pocketsphinx-testdata, cards/)"
while read -r line; do
  id=$(sed -E 's/.*\(([^)]*)\)\s*$/\1/' <<<"$line")
  text=$(sed -E 's/<\/?s>//g; s/\([^)]*\)\s*$//; s/^\s+|\s+$//g' <<<"$line")
  make_clip -i "$TESTDATA/cards/$id.wav" "$OUT/testdata/cards-$id"
  printf 'cards-%s\t%s\t%s\t%s\n' "$id" "$text" "$src" "BSD-2 (pocketsphinx)"
done < "$TESTDATA/cards/cards.transcription" | manifest "$OUT/testdata"

# 2. Asterisk prompts, in the order of core-sounds-en.txt, split in halves by
#    scripts/asterisk-prompts.sh: prompts/ is the evaluation half, tune/ the half settings are
#    chosen on (the same recordings, through the narrowband package, adapt the telephony model).
src="Asterisk core sounds en 1.6.1, G.722 (Debian asterisk-core-sounds-en-g722; text: core-sounds-en.txt)"
bash scripts/asterisk-prompts.sh g722 > "$OUT/asterisk-prompts.tsv"
for half in eval:prompts tune:tune; do
  want=${half%%:*} dir="$OUT/${half#*:}"
  while IFS=$'\t' read -r key text split; do
    [ "$split" = "$want" ] || continue
    id="ast-${key//\//-}"
    make_clip -f g722 -i "$SOUNDS/$key.g722" "$dir/$id"
    printf '%s\t%s\t%s\t%s\n' "$id" "$text" "$src" "CC-BY-SA-3.0 (Allison Smith)"
  done < "$OUT/asterisk-prompts.tsv" | manifest "$dir"
done

echo "$STAMP" > "$OUT/stamp"
echo "build-eval-set: $(wc -l < "$OUT/testdata/manifest.jsonl") testdata clips, $(wc -l < "$OUT/prompts/manifest.jsonl") evaluation prompts, $(wc -l < "$OUT/tune/manifest.jsonl") tuning prompts in $OUT"
