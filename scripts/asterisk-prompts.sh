#!/usr/bin/env bash
# Lists Asterisk's English prompts (Allison Smith, CC-BY-SA-3.0) whose text is plain words, and
# which split each belongs to, so that the evaluation set (scripts/build-eval-set.sh) and the
# telephony adaptation (scripts/build-adapted-model.sh) can never share a recording:
#
#   key<TAB>text<TAB>split
#
# split: the prompts alternate in the order of the upstream core-sounds-en.txt, "eval" first
# (0th, 2nd, ...: the split nobody tunes on) then "tune" (1st, 3rd, ...: MAP adaptation data and
# the split search settings are chosen on). Prompts whose text holds digits, brackets or symbols
# ("press 1", "[beep]") are left out rather than guessing how they were read, and so are prompts
# with no recording of the given extension in the sounds folder.
#
# usage: scripts/asterisk-prompts.sh EXT     (EXT: g722 or wav; needs asterisk-core-sounds-en
#                                            and asterisk-core-sounds-en-EXT installed)
set -euo pipefail

EXT="${1:?usage: asterisk-prompts.sh g722|wav}"
TEXTS=/usr/share/doc/asterisk-core-sounds-en/core-sounds-en.txt.gz
SOUNDS=/usr/share/asterisk/sounds/en_US_f_Allison

# The split is decided on the g722 listing for both extensions (the two packages hold the same
# recordings), so that a prompt missing from one package cannot shift the other's parity.
i=0
zcat "$TEXTS" | while IFS= read -r line; do
  [[ $line =~ ^([^\;:[:space:]][^:]*):\ (.*)$ ]] || continue
  key=${BASH_REMATCH[1]}
  text=${BASH_REMATCH[2]%$'\r'}
  [ -f "$SOUNDS/$key.g722" ] || continue
  LC_ALL=C.UTF-8 grep -qP "^[A-Za-z \x27\x{2019}.,?!;:\"-]+\s*$" <<<"$text" || continue
  if [ $((i % 2)) -eq 0 ]; then split=eval; else split=tune; fi
  i=$((i + 1))
  [ -f "$SOUNDS/$key.$EXT" ] || continue
  printf '%s\t%s\t%s\n' "$key" "$text" "$split"
done
