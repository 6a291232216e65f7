// Deferred recognition (a busy node still takes the call): when every recognizer is busy and the node's backlog has
// room, an attaching socket is served anyway; its audio is stored and acknowledged as usual
// and waits in the session's recognition feed, counted against the node's bound, until the
// node's queue (recognizer-queue.ts) hands the session a freed recognizer and it catches up.
import { ScribedError } from '../core/errors.js';
import { serverEvent } from '../core/protocol.js';
import type { BacklogBudget } from '../core/recognition-backlog.js';
import type { DecoderHold } from './decoder-hold.js';
import type { RecognitionFeed } from './recognition-feed.js';
import type { DeferredSession, RecognizerQueue } from './recognizer-queue.js';
import type { Replay } from './replay.js';
import type { SessionEvents } from './session-events.js';
import type { SessionContext } from './session-context.js';

/** A session held by the node's backlog bound accepts audio again once the backlog is below
 * this share of the bound (not at the first free second, which would flap). */
const BACKLOG_RESUME_SHARE = 0.75;

export const DEFERRED_NOTICE = {
  code: 'RECOGNITION_DEFERRED',
  message:
    'every recognizer of this node is busy: audio is stored and acknowledged as usual, and transcribed (with its true times) as soon as one frees',
};

export class Deferral {
  /** When the session started waiting for a recognizer (ms), for the wait metric. */
  private since = 0;
  private deferred = false;
  /** Deferred only while this session's own recognizer loads (beginAside), not waiting for a
   * freed one: no notices, no wait metric. */
  private aside = false;
  /** The node's deferred backlog bound stopped this session's audio (accepting: false). */
  private held = false;

  constructor(
    private readonly ctx: SessionContext,
    private readonly session: DeferredSession,
    private readonly feed: RecognitionFeed,
    private readonly decoder: DecoderHold,
    private readonly replay: Replay,
    private readonly events: SessionEvents,
  ) {}

  /** True while the session's recognition runs behind its audio (waiting or catching up). */
  get active(): boolean {
    return this.deferred;
  }

  private get queue(): RecognizerQueue | undefined {
    return this.ctx.deps.deferral;
  }

  get budget(): BacklogBudget | undefined {
    return this.queue?.budget;
  }

  /** The node's deferred backlog bound stopped this session's audio (accepting: false). */
  get heldByBacklog(): boolean {
    return this.held;
  }

  /** The client's close (or the idle expiry's), while deferred and once the state machine
   * has the session closing: no more audio; the close itself waits in the feed behind the
   * audio before it. */
  closeWhenCaughtUp(expired: boolean): void {
    this.ctx.stopAccepting();
    this.feed.push({ kind: 'close', expired });
    this.ctx.log.info({ backlogSeconds: Number(this.feed.seconds.toFixed(1)) }, 'close waits for the deferred recognition to catch up');
  }

  /** A socket attached (after `ready`): it is told its recognition is deferred, and, when the
   * session takes no audio, why. */
  tellAttached(): void {
    if (this.deferred && !this.aside) this.events.emit(serverEvent.notice(DEFERRED_NOTICE));
    if (!this.ctx.accepting)
      this.events.emit(serverEvent.accepting({ accepting: false, reason: this.held ? 'RECOGNITION_BACKLOG' : 'INSUFFICIENT_CHARACTERS' }));
  }

  /** True while recognition waits for the session's own recognizer to load (beginAside). */
  get loadingAside(): boolean {
    return this.aside;
  }

  /** A session restored from a spool (taken over from another node, or after a restart) loads
   * its recognizer beside its queue (live-session.ts, loadAside): a model load takes a second
   * or more on a busy host, and meanwhile a socket is served and its audio acknowledged, held
   * in the feed as a deferred session's is. Not counted against the node's bound: no other
   * session's recognizer is waited for. */
  beginAside(): void {
    this.deferred = true;
    this.aside = true;
    this.since = Date.now();
  }

  /** The aside load failed: wait in the node's queue for a freed recognizer instead, when it
   * has room (true); else the session is no longer deferred (false). */
  asideFailed(): boolean {
    this.aside = false;
    const queue = this.queue;
    if (queue?.budget.hasRoom()) {
      this.defer(queue);
      return true;
    }
    this.deferred = false;
    return false;
  }

  /** A recognizer for an attaching socket, or, when every one is busy and the node's backlog
   * has room, deferred recognition: the socket is served and its audio waits. */
  async openOrDefer(): Promise<void> {
    const queue = this.queue;
    // Sessions that waited first get the next free recognizer; this one queues behind them.
    if (queue?.hasWaiters() && queue.budget.hasRoom()) return this.defer(queue);
    try {
      await this.decoder.open();
    } catch (err) {
      if (!(err instanceof ScribedError && err.code === 'ENGINE_BUSY') || !queue?.budget.hasRoom()) throw err;
      this.defer(queue);
    }
  }

  /** Fair share (recognizer-queue.ts): the session gave its recognizer back between segments
   * for an account below its share, and waits like any deferred session. */
  yielded(): void {
    const queue = this.queue;
    if (!queue || this.deferred) return;
    this.ctx.metrics.recognizerYields.inc();
    this.defer(queue);
    this.events.emit(serverEvent.notice(DEFERRED_NOTICE));
  }

  private defer(queue: RecognizerQueue): void {
    this.deferred = true;
    this.feed.count(queue.budget);
    this.since = Date.now();
    this.ctx.metrics.recognitionDeferred.inc();
    this.ctx.log.info(
      { waiting: queue.waitingCount, backlogSeconds: Number(queue.budget.seconds.toFixed(1)) },
      'every recognizer busy: recognition deferred',
    );
    queue.wait(this.session);
  }

  /** Whether `seconds` more audio may wait; when not, the session stops taking audio until
   * the node's backlog drains (accepting: false, RECOGNITION_BACKLOG; the client keeps it). */
  admit(seconds: number): void {
    const budget = this.budget;
    // Loading aside, the session waits for no other's recognizer: the node's bound is not its.
    if (!this.deferred || this.aside || !budget || budget.fits(seconds)) return;
    if (!this.held) {
      this.held = true;
      this.ctx.stopAccepting();
      this.ctx.log.warn({ backlogSeconds: Number(budget.seconds.toFixed(1)) }, 'deferred backlog bound reached: not accepting');
      this.events.emit(serverEvent.accepting({ accepting: false, reason: 'RECOGNITION_BACKLOG' }));
    }
    throw new ScribedError(
      'NOT_ACCEPTING',
      "the node's recognizers are behind and its backlog is at its bound; wait for an accepting event",
    );
  }

  /** Room in the node's backlog again (or caught up, `force`): a held session accepts audio. */
  async acceptAgain(force: boolean): Promise<void> {
    const ctx = this.ctx;
    const budget = this.budget;
    if (!this.held || !budget) return;
    if (!force && budget.seconds > budget.boundSeconds * BACKLOG_RESUME_SHARE) return;
    this.held = false;
    if (ctx.closing || ctx.state !== 'RECORDING' || !ctx.socket) return;
    const accepting = await ctx.reopen(false);
    this.events.emit(serverEvent.accepting(accepting ? { accepting: true } : { accepting: false, reason: 'INSUFFICIENT_CHARACTERS' }));
  }

  /** The queue offers a recognizer: take it, decode restored audio, and start feeding. */
  async tryCatchUp(): Promise<'started' | 'busy' | 'gone'> {
    const ctx = this.ctx;
    if (!this.deferred || ctx.moved || ctx.state === 'CLOSED') return 'gone';
    if (!ctx.stream) {
      try {
        await this.decoder.open();
      } catch (err) {
        // Busy, or an engine that failed to start a decoder: asked again on the next turn.
        if (!(err instanceof ScribedError && err.code === 'ENGINE_BUSY'))
          ctx.log.warn({ err }, 'could not open a recognizer for the deferred session');
        return 'busy';
      }
    }
    const waited = (Date.now() - this.since) / 1000;
    if (!this.aside) ctx.metrics.recognitionWait.observe(waited);
    ctx.log.info(
      { waitedSeconds: Number(waited.toFixed(2)), backlogSeconds: Number(this.feed.seconds.toFixed(1)) },
      'recognizer free: catching up',
    );
    // Audio recovered from the spool after a restart comes before the backlog.
    if (!(await this.replay.feed())) return 'gone';
    this.feed.start();
    return 'started';
  }

  /** The feed ran dry while deferred: recognition follows the audio live again. False when
   * the session was not (or no longer is) catching up. */
  async caughtUp(): Promise<boolean> {
    if (!this.deferred || !this.feed.empty || this.ctx.state === 'CLOSED') return false;
    const wasAside = this.aside;
    this.end();
    this.ctx.log.info('deferred recognition caught up');
    if (!wasAside)
      this.events.emit(
        serverEvent.notice({
          code: 'RECOGNITION_CAUGHT_UP',
          message: 'recognition has caught up with the audio; results follow it live again',
        }),
      );
    await this.acceptAgain(true);
    return true;
  }

  /** The session no longer waits: the queue forgets it; audio still waiting is dropped from
   * the feed (it is in the spool) and the node's budget gets it back. Returns the seconds. */
  end(): number {
    if (!this.deferred) return 0;
    this.deferred = false;
    this.aside = false;
    let dropped = 0;
    for (const item of this.feed.clear()) if (item.kind === 'audio') dropped += item.samples.length / this.ctx.rate;
    this.feed.uncount();
    this.queue?.done(this.session);
    return dropped;
  }
}
