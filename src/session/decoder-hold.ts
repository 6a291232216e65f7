// The session's decoder: taken from the engine (taking back one a paused session holds when
// all are in use), given the channel state of the session's last final, and held for a while
// after the socket goes, so a quick resume continues the same open segment.
import { ScribedError } from '../core/errors.js';
import type { AcceptResult, RecognitionStream } from '../engine/types.js';
import { vadSettings } from '../vad/settings.js';
import { VAD_RATE, VAD_WINDOW_SAMPLES } from '../vad/window.js';
import { ManualSegmentation, VadSegmentation } from './segmentation.js';
import type { SessionContext } from './session-context.js';

export interface DecoderListeners {
  /** A partial reported between frames (batched decoding). */
  partial(stream: RecognitionStream, partial: Pick<AcceptResult, 'partial' | 'partialSamples'>): void;
  /** The decoder was lost (worker crash, missed heartbeat), even with no audio in flight. */
  lost(stream: RecognitionStream, err: Error): void;
}

export class DecoderHold {
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly ctx: SessionContext,
    private readonly listeners: DecoderListeners,
  ) {}

  /** A decoder for this session, set as ctx.stream with its segmentation. When all are taken,
   * a paused session's held decoder is worth less than a live socket: take that one back
   * before refusing with ENGINE_BUSY. */
  async open(): Promise<RecognitionStream> {
    const ctx = this.ctx;
    const { deps, options } = ctx;
    const vad = options.segmentCommitMode === 'vad' ? vadSettings(options, deps.maxSegmentSeconds) : null;
    const heartbeat = options.heartbeatIntervalMs;
    const request = {
      inputRate: ctx.rate,
      profile: ctx.encoding.profile,
      vad: vad ? { threshold: vad.threshold } : null,
      heartbeatIntervalMs: typeof heartbeat === 'number' ? heartbeat : null,
      vocabularyHints: Array.isArray(options.vocabularyHints) ? (options.vocabularyHints as string[]) : [],
      decodeBatchMs: deps.decodeBatchMs ?? 0,
    };
    let stream: RecognitionStream;
    try {
      stream = await deps.engine.open(request);
    } catch (err) {
      if (!(err instanceof ScribedError && err.code === 'ENGINE_BUSY') || !deps.reclaimDecoder) throw err;
      if (!(await deps.reclaimDecoder())) throw err;
      stream = await deps.engine.open(request);
    }
    // Best effort: a decoder that refuses it starts from the initial state, as before (a dead
    // one fails the next call).
    if (ctx.channelState !== null) {
      await stream
        .setChannelState(ctx.channelState)
        .catch((err: unknown) => ctx.log.warn({ err }, 'could not set the channel state on the new decoder'));
    }
    const segmentation = vad
      ? new VadSegmentation(vad.segmenter, (VAD_WINDOW_SAMPLES * ctx.rate) / VAD_RATE, ctx.cursor.capturedSamples)
      : new ManualSegmentation(deps.maxSegmentSeconds * ctx.rate);
    stream.onPartial((p) => this.listeners.partial(stream, p));
    stream.onLost((err) => this.listeners.lost(stream, err));
    ctx.bindRecognizer(stream, segmentation);
    return stream;
  }

  /** Give the decoder back to the engine (nothing is finalized here); `dropPending`: see
   * RecognitionStream.release. */
  async release(options?: { dropPending?: boolean }): Promise<void> {
    const ctx = this.ctx;
    const stream = ctx.unbindRecognizer();
    await stream?.release(options);
    // A session waiting for a recognizer may take this one.
    if (stream) ctx.deps.deferral?.decoderFreed();
  }

  /** The recognizer was lost (lost-recognizer.ts): the session lets it go at once, without
   * waiting for its release (the engine's worker may be what died). */
  drop(): void {
    void this.ctx
      .unbindRecognizer()
      ?.release()
      .catch(() => undefined);
  }

  /** Keep the decoder of a paused session for pausedDecoderHoldMs, then `expire` (finalize
   * and release; the coordinator runs it on the session's queue). */
  start(expire: () => void): void {
    this.cancel();
    this.timer = setTimeout(() => {
      this.timer = null;
      expire();
    }, this.ctx.deps.pausedDecoderHoldMs);
    this.timer.unref();
  }

  cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
