// Character times for includeAlignment. The recognizer measures word boundaries only
// (pocketsphinx: 10 ms frames); it reports no time per letter. Character times are therefore
// derived, not measured: each word's span is shared evenly among its characters, and the
// space between two words spans the silence (or nothing) between them. Clients are told so
// (docs/options.md); a character's span always lies inside its word's measured span.

export interface TimedWord {
  word: string;
  startSample: bigint;
  endSample: bigint;
}

export interface TimedCharacter {
  char: string;
  startSample: bigint;
  endSample: bigint;
}

export function characterTimes(words: readonly TimedWord[]): TimedCharacter[] {
  const out: TimedCharacter[] = [];
  words.forEach((w, i) => {
    if (i > 0) {
      const prevEnd = words[i - 1]!.endSample;
      out.push({ char: ' ', startSample: prevEnd, endSample: w.startSample > prevEnd ? w.startSample : prevEnd });
    }
    const chars = [...w.word];
    const span = w.endSample - w.startSample;
    const n = BigInt(chars.length);
    chars.forEach((char, k) => {
      out.push({
        char,
        startSample: w.startSample + (span * BigInt(k)) / n,
        endSample: w.startSample + (span * BigInt(k + 1)) / n,
      });
    });
  });
  return out;
}
