// The `final` event of a finished segment, on both clocks (session samples and the epoch the
// audio arrived in; docs/protocol.md "Times on both clocks"). Pure: from the capture cursor,
// the segment's extent and its shaped text.
import { characterTimes } from './alignment.js';
import { timePoint, type CaptureCursor } from './capture-cursor.js';
import { serverEvent, type FinalEvent, type FinalTrigger } from './protocol.js';
import type { ShapedFinal } from './text-options.js';

/** A span the `redact` option replaced by a token (src/text/redaction/apply.ts): its type and
 * session samples (decimal strings, as the words'), never a value. */
export interface RedactedSpan {
  type: string;
  startSample: string;
  endSample: string;
}

/** A word of a final on the session timeline. */
export interface TimelineWord {
  word: string;
  /** Session-wide samples, decimal strings (exact beyond 2^53). */
  startSample: string;
  endSample: string;
  confidence: number | null;
}

export interface FinishedSegment {
  segmentId: string;
  trigger: FinalTrigger;
  startSample: bigint;
  endSample: bigint;
  shaped: ShapedFinal<TimelineWord>;
  /** The redacted spans, timed even without alignment (not sent on the socket: the stored
   * segment and its transcript carry them; a recorder masks the audio under them). */
  redactions: readonly RedactedSpan[];
  /** suppressBackgroundSpeech: words dropped as background speech. */
  suppressedWords: number;
  /** includeAlignment: word and character times are sent. */
  aligned: boolean;
}

export function finalEvent(cursor: CaptureCursor, rate: number, seg: FinishedSegment): FinalEvent {
  const at = (sample: bigint) => timePoint(cursor, sample, rate);
  const { shaped } = seg;
  return serverEvent.final({
    segmentId: seg.segmentId,
    text: shaped.text,
    ...shaped.annotations,
    trigger: seg.trigger,
    start: at(seg.startSample),
    end: at(seg.endSample),
    ...(seg.suppressedWords > 0 ? { suppressedWords: seg.suppressedWords } : {}),
    ...(seg.aligned
      ? {
          words: shaped.words.map((w) => ({
            word: w.word,
            confidence: w.confidence,
            start: at(BigInt(w.startSample)),
            end: at(BigInt(w.endSample)),
          })),
          // derived from the word times, not measured (src/core/alignment.ts)
          characters: characterTimes(
            shaped.words.map((w) => ({ word: w.word, startSample: BigInt(w.startSample), endSample: BigInt(w.endSample) })),
          ).map((c) => ({
            char: c.char,
            start: at(c.startSample),
            end: at(c.endSample),
          })),
        }
      : {}),
  });
}
