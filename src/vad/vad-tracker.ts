// Joins the detector's window flags to the session's audio: which samples go to the
// recognizer, and where segments open and are committed, in samples of the session's input
// rate. Pure (no I/O, no engine): the session feeds it each frame's samples and the flags the
// detector returned for them, and performs the actions it returns in order.
//
// Only audio inside a segment reaches the recognizer: silence between segments is dropped
// (after it has been acknowledged, like any audio), so long pauses cannot turn into
// hallucinated words. Audio the detector has not judged yet is held back (at most one window
// plus the pre-roll), so a commit never lands after audio the recognizer already has.
import { VadSegmenter, type CommitReason, type SegmenterConfig } from './segmenter.js';

export type VadAction =
  | { type: 'open'; startSample: number; speechStartSample: number }
  | { type: 'feed'; samples: Int16Array }
  | { type: 'commit'; endSample: number; speechEndSample: number; reason: CommitReason };

export class VadTracker {
  private readonly segmenter: VadSegmenter;
  /** Held audio, starting at stream sample `heldFrom`. */
  private held = new Int16Array(0);
  private heldFrom = 0;
  /** Stream samples received so far. */
  private received = 0;
  /** End of the audio already given to the recognizer (or dropped): nothing before it is
   * fed again. */
  private consumed = 0;

  /**
   * @param windowInputSamples detector window length in input-rate samples (may be
   *        fractional, e.g. 512 samples at 16 kHz are 1411.2 samples at 44.1 kHz).
   */
  constructor(
    config: SegmenterConfig,
    private readonly windowInputSamples: number,
  ) {
    this.segmenter = new VadSegmenter(config);
  }

  get inSegment(): boolean {
    return this.segmenter.inSegment;
  }

  /** Stream sample where the audio still held starts: everything before it has been fed to
   * the recognizer or dropped as silence (the session's spool need not keep it). */
  get heldStart(): number {
    return this.heldFrom;
  }

  /** Stream sample where window `w` starts. */
  private boundary(w: number): number {
    return Math.min(this.received, Math.floor(w * this.windowInputSamples));
  }

  push(samples: Int16Array, flags: Uint8Array): VadAction[] {
    const joined = new Int16Array(this.held.length + samples.length);
    joined.set(this.held);
    joined.set(samples, this.held.length);
    this.held = joined;
    this.received += samples.length;

    const out: VadAction[] = [];
    for (const flag of flags) {
      const window = this.segmenter.windowsSeen;
      for (const e of this.segmenter.push(flag === 1)) {
        if (e.type === 'open') {
          const start = Math.max(this.consumed, this.boundary(e.startWindow));
          this.consumed = start;
          out.push({ type: 'open', startSample: start, speechStartSample: Math.max(start, this.boundary(e.speechStartWindow)) });
        } else {
          const end = Math.max(this.consumed, this.boundary(e.endWindow));
          this.feedTo(end, out);
          out.push({ type: 'commit', endSample: end, speechEndSample: Math.min(end, this.boundary(e.speechEndWindow)), reason: e.reason });
        }
      }
      if (this.segmenter.inSegment) this.feedTo(this.boundary(window + 1), out);
    }
    this.trim();
    return out;
  }

  /** End the open segment now with all audio received (client commit, close, pause). */
  forceCommit(): VadAction[] {
    const out: VadAction[] = [];
    if (!this.segmenter.inSegment) return out;
    this.feedTo(this.received, out);
    const e = this.segmenter.forceCommit();
    if (e?.type === 'commit') {
      out.push({
        type: 'commit',
        endSample: this.received,
        speechEndSample: Math.min(this.received, this.boundary(e.speechEndWindow)),
        reason: e.reason,
      });
    }
    this.trim();
    return out;
  }

  private feedTo(end: number, out: VadAction[]): void {
    if (end <= this.consumed) return;
    const from = this.consumed - this.heldFrom;
    const samples = this.held.slice(from, end - this.heldFrom);
    this.consumed = end;
    if (samples.length > 0) out.push({ type: 'feed', samples });
  }

  /** Drop held audio nobody can need any more. */
  private trim(): void {
    const keepFrom = this.segmenter.inSegment ? this.consumed : Math.max(this.consumed, this.boundary(this.segmenter.retainFrom));
    const drop = Math.min(this.held.length, Math.max(0, keepFrom - this.heldFrom));
    if (drop > 0) {
      this.held = this.held.slice(drop);
      this.heldFrom += drop;
    }
  }
}
