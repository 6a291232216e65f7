// Recognition of a live session's stored audio: the segmentation (manual or vad) judges each
// frame, and its actions are carried out in order on the recognizer: open a segment, feed it
// audio (partials come back), end it (finals.ts). Runs on the recognition feed, never before
// an ack (recognition-feed.ts).
import { ScribedError } from '../core/errors.js';
import { LevelMeter } from '../core/background-speech.js';
import { serverEvent, type FinalTrigger } from '../core/protocol.js';
import type { AcceptResult, RecognitionStream } from '../engine/types.js';
import type { SegmentAction } from './segmentation.js';
import type { Finals } from './finals.js';
import type { SessionEvents } from './session-events.js';
import type { BacklogItem } from '../core/recognition-backlog.js';
import type { SessionContext } from './session-context.js';

/** vad mode: silence dropped from the spool once this much of it has gathered. */
const SPOOL_COMPACT_SECONDS = 5;

export class Recognition {
  constructor(
    private readonly ctx: SessionContext,
    private readonly events: SessionEvents,
    private readonly finals: Finals,
    /** The recognizer failed on audio: the session's recognizer is lost (closing the stream
     * socket so the client resumes). */
    private readonly lost: (stream: RecognitionStream, err: unknown) => void,
  ) {}

  /** The segmentation judges audio stored at session sample `at`, then its actions are
   * carried out in order. False when the recognizer is gone (lost on the way, or released). */
  async recognize(stream: RecognitionStream, samples: Int16Array, at: bigint): Promise<boolean> {
    const segmentation = this.ctx.segmentation;
    if (!segmentation || this.ctx.stream !== stream) return false;
    let actions: SegmentAction[];
    try {
      actions = await segmentation.judge(stream, samples, at, this.ctx.segment?.samples ?? null);
    } catch (err) {
      this.lost(stream, err);
      return false;
    }
    return this.apply(stream, actions);
  }

  /** Carry out segment actions; false when the recognizer is gone meanwhile. */
  private async apply(stream: RecognitionStream, actions: SegmentAction[]): Promise<boolean> {
    const ctx = this.ctx;
    for (const a of actions) {
      if (ctx.stream !== stream) return false;
      if (a.type === 'open') {
        ctx.beginSegment(a.startSample, ctx.options.suppressBackgroundSpeech === true ? new LevelMeter(ctx.rate) : null);
      } else if (a.type === 'feed') {
        const seg = ctx.segment;
        if (!seg) continue;
        let result: AcceptResult;
        try {
          result = await stream.accept(a.samples);
        } catch (err) {
          this.lost(stream, err);
          return false;
        }
        seg.samples += a.samples.length;
        seg.meter?.push(a.samples);
        if (result.decodedSamples > 0) ctx.metrics.engineRtf.observe(result.cpuMs / ((result.decodedSamples / ctx.rate) * 1000));
        this.finals.emitPartial(seg, result);
      } else if (ctx.segment) {
        this.reportFailure(this.finals.request(a.trigger));
      }
    }
    return ctx.stream === stream;
  }

  /** A final no caller waits for: its failure is reported on the socket. */
  private reportFailure(final: { done: Promise<string | null> }): void {
    void final.done.catch((err: unknown) => this.events.emitError(err));
  }

  /** One audio or commit item of the recognition feed, off the session's queue
   * (recognition-feed.ts); false once the session's recognizer is gone or changed. */
  async take(item: Exclude<BacklogItem, { kind: 'close' }>, deferred: boolean): Promise<boolean> {
    const ctx = this.ctx;
    const stream = ctx.stream;
    if (!stream || ctx.moved) return false;
    if (item.kind === 'audio') {
      if (deferred) ctx.metrics.recognitionLag.observe((Date.now() - item.arrivedAtMs) / 1000);
      if (!(await this.recognize(stream, item.samples, item.at))) return false;
      this.compactSpool();
    } else {
      await this.commit(item.capturedSamples);
    }
    return ctx.stream === stream;
  }

  /** A segment ended from outside the segmentation (commit, close, pause, shutdown): audio it
   * holds unjudged goes into the segment first, so nothing received is left out of it. */
  async endSegment(trigger: FinalTrigger): Promise<{ done: Promise<string | null> }> {
    const stream = this.ctx.stream;
    const tail = this.ctx.segmentation?.flush() ?? [];
    if (stream && tail.length > 0 && !(await this.apply(stream, tail))) return { done: this.finals.settled() };
    return this.finals.request(trigger);
  }

  /** End the open segment: its final, persisted before it is sent. Its id (null: none). */
  async finalize(trigger: FinalTrigger): Promise<string | null> {
    return (await this.endSegment(trigger)).done;
  }

  /** The client's commit, once the audio before it is recognized: the final, then `committed`
   * with the cursor as it was when the commit came. */
  async commit(capturedSamples: string): Promise<void> {
    const { done } = await this.endSegment('commit');
    void done.then(
      (id) => this.events.emit(serverEvent.committed({ segmentId: id, capturedSamples })),
      (err: unknown) => this.events.emitError(err),
    );
  }

  /** Between segments, the spool keeps only the audio the segmentation may still need (vad
   * mode: what the detector holds), so a long silence does not grow it (rewritten every few
   * seconds of dropped audio). */
  compactSpool(): void {
    const ctx = this.ctx;
    const from = ctx.segment ? null : ctx.segmentation?.neededFrom();
    if (from === null || from === undefined || !ctx.spool) return;
    if (from - ctx.spoolKeptFrom < BigInt(SPOOL_COMPACT_SECONDS * ctx.rate)) return;
    try {
      ctx.trimSpool(from);
    } catch (err) {
      // The spool only stays larger than it needs to be; the next frame tries again.
      ctx.log.warn({ err }, 'could not compact the spool');
    }
  }

  /** No recognizer to carry the audio: the frame cannot be taken. */
  static noRecognizer(): ScribedError {
    return new ScribedError('ENGINE_FAILED', 'no recognizer attached to this session');
  }
}
