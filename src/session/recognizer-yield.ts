// Fair share's preemption on the session's side (src/core/fair-share.ts): while every
// recognizer is busy and another account waits far below its share, the node's queue asks one
// of this account's sessions to give its recognizer back. It does so only between segments (no
// utterance is cut) with nothing left to feed, after its last final has settled (finals are
// pipelined behind the feed and still decode on this recognizer); then its audio waits, deferred,
// like any session's that found every recognizer busy.
import type { Deferral } from './deferral.js';
import type { Finals } from './finals.js';
import type { RecognitionFeed } from './recognition-feed.js';
import type { SessionContext } from './session-context.js';
import type { SessionEffects } from './session-effects.js';

export class RecognizerYield {
  /** A yield is queued on the session: asked once at a time. */
  private yielding = false;

  constructor(
    private readonly ctx: SessionContext,
    private readonly parts: { feed: RecognitionFeed; finals: Finals; effects: SessionEffects; deferral: Deferral },
    /** The session's one queue. */
    private readonly run: <T>(fn: () => Promise<T>) => Promise<T>,
  ) {}

  /** Recognizing live with no segment open and nothing waiting to be fed. */
  private get betweenSegments(): boolean {
    const ctx = this.ctx;
    return (
      ctx.stream !== null &&
      ctx.socket !== null &&
      ctx.state === 'RECORDING' &&
      ctx.segment === null &&
      !this.parts.deferral.active &&
      this.parts.feed.empty
    );
  }

  /** Whether a yield would give the recognizer back now (none already queued). */
  get possible(): boolean {
    return !this.yielding && this.betweenSegments;
  }

  /** Give the recognizer back if the session is between segments; false when it cannot now
   * (the queue asks again on its timer). */
  yieldNow(): Promise<boolean> {
    if (!this.possible) return Promise.resolve(false);
    this.yielding = true;
    const { feed, finals, effects, deferral } = this.parts;
    return this.run(async () => {
      if (!this.betweenSegments) return false;
      await feed.idle();
      await finals.settled();
      if (!this.betweenSegments) return false;
      await effects.releaseDecoder();
      deferral.yielded();
      this.ctx.log.info('recognizer given back for an account below its fair share: recognition deferred');
      return true;
    }).finally(() => {
      this.yielding = false;
    });
  }
}
