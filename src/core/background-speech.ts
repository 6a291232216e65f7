// suppressBackgroundSpeech: drop words spoken well below the primary speaker's level.
//
// Method: the audio given to the recognizer is measured in 10 ms frames (energy in dBFS). The
// primary level is the loudest speech heard so far in the session: the 95th percentile of a
// segment's frame levels, kept as a running maximum. Each recognized word is measured over
// its own time span (mean energy); a word more than BACKGROUND_MARGIN_DB below the primary
// level is background speech (a distant talker, a TV, a neighbour's call) and is dropped
// from the final. A segment whose words are all background yields an empty final.
// Limits: it judges loudness only; a background voice as loud as the speaker is kept, and
// the first thing heard sets the primary level until something louder comes.

export const BACKGROUND_MARGIN_DB = 15;
const SILENCE_DB = -100;

/** Per-10 ms frame levels of a stream of samples, pushed in pieces of any size. */
export class LevelMeter {
  readonly frameSamples: number;
  readonly levels: number[] = [];
  private acc = 0;
  private n = 0;

  constructor(rate: number) {
    this.frameSamples = Math.max(1, Math.round(rate / 100));
  }

  push(samples: Int16Array): void {
    for (let i = 0; i < samples.length; i++) {
      const v = samples[i]! / 32768;
      this.acc += v * v;
      if (++this.n === this.frameSamples) {
        this.levels.push(toDb(this.acc / this.n));
        this.acc = 0;
        this.n = 0;
      }
    }
  }

  /** Mean level over samples [from, to) counted from the first sample pushed. */
  spanDb(from: number, to: number): number {
    const a = Math.max(0, Math.floor(from / this.frameSamples));
    const b = Math.min(this.levels.length, Math.max(a + 1, Math.ceil(to / this.frameSamples)));
    if (a >= b) return SILENCE_DB;
    let power = 0;
    for (let i = a; i < b; i++) power += 10 ** (this.levels[i]! / 10);
    return toDb(power / (b - a));
  }

  /** Level of the speech in the pushed audio: the 95th percentile frame level. */
  speechDb(): number {
    if (this.levels.length === 0) return SILENCE_DB;
    const sorted = [...this.levels].sort((x, y) => x - y);
    return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.95))]!;
  }
}

function toDb(power: number): number {
  return power > 0 ? Math.max(SILENCE_DB, 10 * Math.log10(power)) : SILENCE_DB;
}

export interface WordSpan {
  startSample: number;
  endSample: number;
}

/** Which words to keep, and the primary level after this segment. */
export function primaryWords<W extends WordSpan>(
  words: readonly W[],
  meter: LevelMeter,
  primaryDb: number,
): { keep: W[]; dropped: number; primaryDb: number } {
  const primary = Math.max(primaryDb, meter.speechDb());
  const keep = words.filter((w) => meter.spanDb(w.startSample, w.endSample) >= primary - BACKGROUND_MARGIN_DB);
  return { keep, dropped: words.length - keep.length, primaryDb: primary };
}
