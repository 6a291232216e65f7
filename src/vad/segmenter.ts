// Segment commit decisions for `segmentCommitMode: "vad"`: a pure state machine. It sees one
// speech/non-speech flag per fixed-length window (from the voice activity detector) and says
// where a segment opens and where it is committed. It knows nothing of audio, engines or
// sessions, so every rule below is unit-tested without a model.
//
// The rules (docs/options.md has the user-facing version):
// - A segment opens when speech has lasted `minimumSpeechMs` without a break; it starts
//   `preRollMs` before the first speech window (never before the previous segment's end), so
//   the recognizer hears the onset the detector needed time to confirm. Shorter bursts (clicks,
//   coughs) open nothing.
// - Inside a segment, a run of non-speech shorter than `minimumSilenceMs` is not a pause: it
//   is bridged, and the speech goes on.
// - A segment is committed when non-speech has lasted `commitSilenceMs` (and at least
//   `minimumSilenceMs`) after its last speech window. The segment keeps that trailing silence:
//   it ends at the window where the commit was decided.
// - A long monologue still yields finals: once a segment is `softMaxSegmentMs` long, the next
//   pause of `minimumSilenceMs` commits it; at `maxSegmentMs` it is cut wherever it is.

export interface SegmenterConfig {
  /** Duration of one detector window, in ms (32 ms for Silero at 16 kHz). */
  windowMs: number;
  minimumSpeechMs: number;
  minimumSilenceMs: number;
  commitSilenceMs: number;
  preRollMs: number;
  softMaxSegmentMs: number;
  maxSegmentMs: number;
}

export type CommitReason = 'silence' | 'pause_after_soft_max' | 'max_length' | 'forced';

export type SegmenterEvent =
  /** A segment opens at window `startWindow` (inclusive); speech was first seen at
   * `speechStartWindow`. The caller must still hold the audio from startWindow on. */
  | { type: 'open'; startWindow: number; speechStartWindow: number }
  /** The open segment ends before window `endWindow` (exclusive). Its last speech window
   * ended at `speechEndWindow` (exclusive). */
  | { type: 'commit'; endWindow: number; speechEndWindow: number; reason: CommitReason };

interface Thresholds {
  minSpeech: number;
  minSilence: number;
  commitSilence: number;
  preRoll: number;
  softMax: number;
  max: number;
}

/** ms -> whole windows, rounding up: a 100 ms rule on 32 ms windows needs 4 windows. */
function windows(ms: number, windowMs: number): number {
  return Math.ceil(ms / windowMs - 1e-9);
}

export class VadSegmenter {
  private readonly t: Thresholds;
  /** Index of the next window to be pushed. */
  private next = 0;
  /** Where the current run of speech windows began (idle state), or -1. */
  private runStart = -1;
  /** Open segment, or null. */
  private open: { start: number; lastSpeechEnd: number } | null = null;
  /** Current run of non-speech windows inside the open segment. */
  private silenceRun = 0;
  /** End (exclusive) of the last committed segment: the next one cannot start before it. */
  private floor = 0;

  constructor(readonly config: SegmenterConfig) {
    const w = config.windowMs;
    if (!(w > 0)) throw new RangeError('windowMs must be positive');
    this.t = {
      minSpeech: Math.max(1, windows(config.minimumSpeechMs, w)),
      minSilence: Math.max(1, windows(config.minimumSilenceMs, w)),
      commitSilence: Math.max(1, windows(config.commitSilenceMs, w)),
      preRoll: windows(config.preRollMs, w),
      softMax: Math.max(1, windows(config.softMaxSegmentMs, w)),
      max: Math.max(1, windows(config.maxSegmentMs, w)),
    };
  }

  /** True while a segment is open. */
  get inSegment(): boolean {
    return this.open !== null;
  }

  /** Window index where the open segment started, or null. */
  get segmentStart(): number | null {
    return this.open?.start ?? null;
  }

  /** Number of windows pushed so far. */
  get windowsSeen(): number {
    return this.next;
  }

  /** The earliest window the caller still needs to keep audio for: a segment that opens
   * later can start no earlier than this. */
  get retainFrom(): number {
    if (this.open) return this.open.start;
    const from = this.runStart >= 0 ? this.runStart : this.next;
    return Math.max(this.floor, from - this.t.preRoll);
  }

  /** Feed the next window's flag; returns what happened at this window (0 to 2 events). */
  push(speech: boolean): SegmenterEvent[] {
    const i = this.next++;
    const out: SegmenterEvent[] = [];
    if (this.open === null) {
      if (!speech) {
        this.runStart = -1;
        return out;
      }
      if (this.runStart < 0) this.runStart = i;
      if (i + 1 - this.runStart >= this.t.minSpeech) {
        const start = Math.max(this.floor, this.runStart - this.t.preRoll);
        this.open = { start, lastSpeechEnd: i + 1 };
        this.silenceRun = 0;
        out.push({ type: 'open', startWindow: start, speechStartWindow: this.runStart });
        this.runStart = -1;
      }
      return out;
    }

    const seg = this.open;
    if (speech) {
      this.silenceRun = 0;
      seg.lastSpeechEnd = i + 1;
    } else {
      this.silenceRun++;
    }
    const length = i + 1 - seg.start;
    let reason: CommitReason | null = null;
    if (this.silenceRun >= Math.max(this.t.commitSilence, this.t.minSilence)) reason = 'silence';
    else if (length >= this.t.softMax && this.silenceRun >= this.t.minSilence) reason = 'pause_after_soft_max';
    else if (length >= this.t.max) reason = 'max_length';
    if (reason !== null) out.push(this.commitAt(i + 1, reason));
    return out;
  }

  /** Close the open segment at `endWindow` (e.g. the client committed, or the stream ended). */
  forceCommit(endWindow = this.next): SegmenterEvent | null {
    if (this.open === null) return null;
    return this.commitAt(Math.max(endWindow, this.open.start), 'forced');
  }

  private commitAt(endWindow: number, reason: CommitReason): SegmenterEvent {
    const seg = this.open!;
    this.open = null;
    this.silenceRun = 0;
    this.runStart = -1;
    this.floor = endWindow;
    // After a max-length cut the speaker is still talking: the next window that is speech
    // starts a run of its own, which must again reach minimumSpeechMs.
    return { type: 'commit', endWindow, speechEndWindow: Math.min(seg.lastSpeechEnd, endWindow), reason };
  }
}
