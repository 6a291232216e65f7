// A session restored from the spool (after a restart, or on the node that took it over): its
// open segment comes back (replay.ts) and its decoder loads beside the session's queue, so a
// socket is served while a model loads (a load can take seconds on a busy host).
import { toScribedError } from '../core/errors.js';
import type { DecoderHold } from './decoder-hold.js';
import type { Deferral } from './deferral.js';
import type { RecognitionFeed } from './recognition-feed.js';
import { recognizerRoom, recognizersFree } from './recognizer-room.js';
import type { Replay } from './replay.js';
import type { SessionContext } from './session-context.js';
import type { SessionEffects } from './session-effects.js';
import type { EndReason } from './session-end.js';

export class Restore {
  constructor(
    private readonly ctx: SessionContext,
    private readonly parts: { feed: RecognitionFeed; replay: Replay; deferral: Deferral; decoder: DecoderHold; effects: SessionEffects },
    private readonly hooks: {
      /** The session's queue (LiveSession.run). */
      run<T>(fn: () => Promise<T>): Promise<T>;
      /** The queue's offer of a recognizer, on the session's queue (LiveSession.tryCatchUp). */
      tryCatchUp(): Promise<'started' | 'busy' | 'gone'>;
      /** The feed ran dry while deferred (LiveSession.feedDrained). */
      feedDrained(): void;
      /** The one end path (session-end.ts). */
      end(how: EndReason): Promise<void>;
    },
  ) {}

  /** After a restart, or on the node that took the session over: the open segment's audio,
   * read back from the spool, becomes this session's open segment again (replay.ts), and a
   * decoder loads for it beside the queue (loadAside). Once decoded, the decoder is held like
   * a paused session's, so a client that resumes continues the same segment; if none does,
   * the hold's end finalizes it (trigger `pause`). */
  openSegment(startSample: bigint, frames: Int16Array[], index: number): Promise<void> {
    return this.hooks.run(async () => {
      await this.parts.feed.idle();
      if (!this.parts.replay.prepare(startSample, frames, index)) return;
      // With no decoder free, the attach that comes opens one or defers, as for any socket.
      if (this.decoderFree()) this.loadAside();
    });
  }

  /** A session taken over with nothing to restore (its open segment empty): its decoder
   * loads beside the queue all the same, when one is free, so the socket that took it over
   * is not held by a model load (loadAside). */
  loadDecoderAside(): Promise<void> {
    return this.hooks.run(async () => {
      const ctx = this.ctx;
      if (!ctx.stream && !this.parts.deferral.active && ctx.state !== 'CLOSED' && !ctx.moved && this.decoderFree()) this.loadAside();
    });
  }

  /** A decoder no stream uses now (not one a paused session holds: taking that back is for
   * a socket's attach). */
  private decoderFree(): boolean {
    return recognizersFree(recognizerRoom(this.ctx.deps.engine, []), 1);
  }

  /** The restored session's decoder loads beside the queue (a model load can take seconds):
   * meanwhile a socket is served and its audio acknowledged and held in the feed (Deferral,
   * beginAside). Once loaded, the restored audio and what came since are recognized as a
   * deferred session's are when it catches up. A load that fails leaves the session waiting
   * for a freed recognizer (the node's queue), or, without one, its socket is closed (1011)
   * so the client resumes. */
  private loadAside(): void {
    const ctx = this.ctx;
    this.parts.deferral.beginAside();
    const startedAt = Date.now();
    this.parts.decoder
      .open()
      .then(
        async () => {
          ctx.log.info({ loadMs: Date.now() - startedAt }, 'recognizer loaded for the restored session');
          const outcome = await this.hooks.tryCatchUp();
          if (outcome === 'started') return this.hooks.feedDrained();
          // Moved on or closed while it loaded: the decoder goes back to the pool.
          await this.hooks.run(async () => {
            if (ctx.stream && (ctx.moved || ctx.state === 'CLOSED')) await this.parts.effects.releaseDecoder();
          });
        },
        (err: unknown) =>
          this.hooks.run(async () => {
            ctx.log.warn({ err: toScribedError(err).code }, 'no decoder free for the restored session now');
            if (!this.parts.deferral.asideFailed()) await this.hooks.end({ reason: 'socketDropped', code: 'ENGINE_FAILED' });
          }),
      )
      .catch((err: unknown) => ctx.log.error({ err }, 'loading a decoder for the restored session failed'));
  }
}
