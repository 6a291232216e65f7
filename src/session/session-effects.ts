// The effects of the session state machine (src/core/session-state.ts), carried out: the
// machine names them for each transition and this is all the session does for one, in order.
import { CLOSE_CODES, type FinalTrigger } from '../core/protocol.js';
import { taskStatus, type SessionEffect } from '../core/session-state.js';
import type { DecoderHold } from './decoder-hold.js';
import type { Deferral } from './deferral.js';
import { beginEpoch } from './epochs.js';
import type { FencedWrites } from './fenced-writes.js';
import type { RecognitionFeed } from './recognition-feed.js';
import type { Recognition } from './recognition.js';
import type { SessionContext } from './session-context.js';

export class SessionEffects {
  constructor(
    private readonly ctx: SessionContext,
    private readonly parts: {
      decoder: DecoderHold;
      feed: RecognitionFeed;
      recognition: Recognition;
      writes: FencedWrites;
      deferral: Deferral;
    },
    private readonly hooks: {
      /** The session's queue (LiveSession.run). */
      run(fn: () => Promise<void>): Promise<void>;
      /** Shared store: let the idle session go to any node (session-end.ts, givenUp). */
      giveUp(): Promise<void>;
    },
  ) {}

  /** `resumeFrom`: the client's cursor of the resume under way (beginEpoch sends it to the
   * store). */
  async carryOut(effects: SessionEffect[], trigger: FinalTrigger = 'pause', resumeFrom?: bigint): Promise<void> {
    const ctx = this.ctx;
    const { decoder, feed, recognition, writes, deferral } = this.parts;
    for (const effect of effects) {
      switch (effect) {
        case 'detachSocket': {
          ctx.releaseSocket()?.close(CLOSE_CODES.superseded, 'superseded by resume');
          break;
        }
        case 'beginEpoch':
          await beginEpoch(ctx, resumeFrom);
          break;
        case 'finalizeSegment':
          decoder.cancel();
          // Everything stored before it is recognized first (the feed runs dry).
          await feed.idle();
          await recognition.finalize(trigger);
          break;
        case 'releaseDecoder':
          await this.releaseDecoder();
          // A session that left meanwhile writes nothing more.
          if (ctx.moved) return;
          break;
        case 'persist':
          await writes.setState(ctx.state, taskStatus(ctx.state));
          await writes.saveProgress(true);
          break;
        case 'holdDecoder':
          // A session catching up keeps its recognizer until its backlog is done (then holds it).
          if (ctx.stream && !deferral.active) this.holdDecoder();
          break;
      }
    }
  }

  /** Stop feeding and give the decoder back (`dropPending`: see RecognitionStream.release). */
  async releaseDecoder(options?: { dropPending?: boolean }): Promise<void> {
    this.parts.feed.stop();
    await this.parts.decoder.release(options);
  }

  /** A held decoder goes back to the pool now (another session needs one), the open segment
   * finalized first. */
  async reclaimHeldDecoder(): Promise<true> {
    const ctx = this.ctx;
    this.parts.decoder.cancel();
    await this.parts.feed.idle();
    if (ctx.state !== 'CLOSED') await this.parts.recognition.finalize('pause');
    await this.releaseDecoder();
    ctx.log.info('held decoder reclaimed for another session');
    return true;
  }

  /** A paused session keeps its decoder (and its open utterance) for a while so a quick
   * resume continues the same segment; after that the segment is finalized and the
   * decoder goes back to the pool. */
  holdDecoder(): void {
    const ctx = this.ctx;
    const { decoder, feed, recognition, deferral } = this.parts;
    decoder.start(() => {
      void this.hooks
        .run(async () => {
          if (ctx.socket || ctx.state === 'CLOSED' || ctx.moved || deferral.active) return;
          await feed.idle();
          await recognition.finalize('pause');
          await this.releaseDecoder();
          // Nothing captured so far is decoded again (a new decoder starts at the cursor), and
          // a client may never come back: keep only the channel state, and no open descriptor.
          ctx.trimSpool(ctx.cursor.capturedSamples);
          ctx.spool?.release();
          if (ctx.deps.shared) await this.hooks.giveUp();
        })
        .catch((err) => ctx.log.error({ err }, 'releasing paused decoder failed'));
    });
  }
}
