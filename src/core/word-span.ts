// A recognized word's times, clamped into the segment it was recognized in. Pure.
//
// The engine reports word times from the start of the utterance, in input-rate samples. They
// can fall outside the audio fed: the decoder's frame rounding and resampler delay put the
// last word's end a few samples past it, and a word can start at (or past) the very end. On
// the file's (or session's) timeline that would put a word in the next segment or give it a
// zero or negative length, so times are clamped: start into [0, length-1], end into
// [start+1, length]. Every word then lies inside its segment and lasts at least one sample.
// Used by batch jobs (src/batch/runner.ts) and real-time finals (src/session/live-session.ts).

/** A word of a stored segment: session-wide input-rate samples as decimal strings (exact
 * beyond 2^53), as the store keeps them (src/store/contract/history.ts). */
export interface SegmentWord {
  word: string;
  startSample: string;
  endSample: string;
  confidence: number | null;
}

export interface WordSpan {
  startSample: number;
  endSample: number;
}

/** `span` (samples from the segment's start) clamped into a segment of `segmentSamples`
 * samples (at least 1). */
export function clampWordSpan(span: WordSpan, segmentSamples: number): WordSpan {
  if (!(segmentSamples >= 1)) throw new RangeError(`segment length ${segmentSamples} must be at least one sample`);
  const len = Math.floor(segmentSamples);
  const whole = (n: number) => (Number.isFinite(n) ? Math.round(n) : 0);
  const startSample = Math.min(Math.max(whole(span.startSample), 0), len - 1);
  const endSample = Math.min(Math.max(whole(span.endSample), startSample + 1), len);
  return { startSample, endSample };
}

/** The engine's words of one segment on the whole timeline: each span clamped into the
 * segment (clampWordSpan), then offset by the segment's first sample. */
export function wordsOnTimeline(
  words: ReadonlyArray<WordSpan & { word: string; confidence: number | null }>,
  segmentStart: bigint,
  segmentSamples: number,
): SegmentWord[] {
  return words.map((w) => {
    const span = clampWordSpan(w, segmentSamples);
    return {
      word: w.word,
      startSample: (segmentStart + BigInt(span.startSample)).toString(),
      endSample: (segmentStart + BigInt(span.endSample)).toString(),
      confidence: w.confidence,
    };
  });
}
