// How a live session ends on this node: one way in, `SessionEnd.end(reason)`, for every
// reason there is, each the state machine's event (src/core/session-state.ts: `close`,
// `shutdown`, `leave`), its effects carried out, then what that end tells the socket, the
// watchers and the store:
//   closed       the client's close, POST .../close, a deferred close once caught up, or the
//                idle expiry (session-expiry.ts): CLOSED, the History row COMPLETED with its
//                endReason (`session.closed`, or `session.expired` once expireIdle set it),
//                `closed` sent, the socket closed 1000
//   shutdown     the node stops: PAUSED, progress durable, the claim let go, the socket closed
//                1012 so the client resumes (through the balancer, on any node)
//   moved        it moved on (a resume elsewhere, another node adopted it, a write found the
//                fence gone): LEFT without finalizing, the socket closed 4000 (SESSION_MOVED);
//                the next node replays what no segment covers from the spool
//   spoolFailed  the shared spool could not store acknowledged audio: LEFT, the socket
//                closed 1011 (INTERNAL), the store's state is what the next resume goes on from
//   givenUp      paused and idle on a shared store, nothing held in memory: LEFT, released to
//                any node (the next socket's node claims it)
//   expired      the idle expiry (session-expiry.ts): as `closed`, the History row's endReason
//                `session.expired`
// A socket's departure ends the session's time on that socket, not the session, and goes the
// same way (the machine's `socketLost`; a RECORDING session pauses, watchers are told):
//   socketLost   the client's socket went away
//   socketDropped the server lets the socket go with 1011 so the client resumes (its recognizer
//                was lost, or its audio could not be stored); frames still queued from it are
//                dropped, they were not acknowledged
// A drain's handover is `moved` (server/drain.ts: the client resumed elsewhere).
import { ScribedError } from '../core/errors.js';
import { wsError } from '../core/envelope.js';
import { CLOSE_CODES, serverEvent, type FinalTrigger } from '../core/protocol.js';
import type { LiveEvent, SessionEffect } from '../core/session-state.js';
import type { SessionEndReason } from '../core/session-status.js';
import type { DecoderHold } from './decoder-hold.js';
import type { Deferral } from './deferral.js';
import type { FencedWrites } from './fenced-writes.js';
import type { RecognitionFeed } from './recognition-feed.js';
import type { SessionEvents } from './session-events.js';
import type { SessionContext, SessionSocket } from './session-context.js';

export type EndReason =
  | { reason: 'closed' }
  | { reason: 'expired' }
  | { reason: 'shutdown' }
  | { reason: 'moved'; detail: string }
  | { reason: 'spoolFailed'; err: unknown }
  | { reason: 'givenUp' }
  | { reason: 'socketLost'; socket: SessionSocket }
  | { reason: 'socketDropped'; code: 'ENGINE_FAILED' | 'INTERNAL' };

export class SessionEnd {
  constructor(
    private readonly ctx: SessionContext,
    private readonly parts: {
      events: SessionEvents;
      deferral: Deferral;
      feed: RecognitionFeed;
      decoder: DecoderHold;
      writes: FencedWrites;
    },
    private readonly hooks: {
      /** The state machine applied (LiveSession.apply): the effects it names. */
      apply(event: LiveEvent): SessionEffect[];
      /** Those effects carried out (session-effects.ts). */
      carryOut(effects: SessionEffect[], trigger: FinalTrigger): Promise<void>;
      /** Stop feeding and give the decoder back. */
      release(): Promise<void>;
      /** The session is done here: the registry stops keeping it. */
      done(): void;
    },
  ) {}

  /** The one way a session ends here. Runs on the session's queue, except a fenced write's
   * `moved`, which stops the session from inside the work that found it. */
  end(how: EndReason): Promise<void> {
    switch (how.reason) {
      case 'closed':
        return this.close('session.closed');
      case 'expired':
        return this.close('session.expired');
      case 'shutdown':
        return this.shutdown();
      case 'moved':
        return this.dropMoved(how.detail, 'SESSION_MOVED');
      case 'spoolFailed':
        return this.spoolFailed(how.err);
      case 'givenUp':
        return this.giveUp();
      case 'socketLost':
        if (this.ctx.socket !== how.socket) return Promise.resolve();
        this.ctx.releaseSocket();
        return this.pause();
      case 'socketDropped':
        if (!this.ctx.socket) return Promise.resolve();
        this.ctx.releaseSocket()?.close(CLOSE_CODES.internal, how.code);
        return this.pause();
    }
  }

  /** The socket is gone: a RECORDING session pauses (its decoder held a while). */
  private async pause(): Promise<void> {
    const ctx = this.ctx;
    if (ctx.state !== 'RECORDING') return;
    await this.hooks.carryOut(this.hooks.apply({ type: 'socketLost' }), 'pause');
    ctx.log.info({ capturedSamples: ctx.cursor.capturedSamples.toString() }, 'socket lost: session paused');
    // The stream socket's going sends it nothing; watchers are told the session paused.
    this.parts.events.snapshotToWatchers();
  }

  private async close(endReason: SessionEndReason): Promise<void> {
    const { ctx } = this;
    const { events } = this.parts;
    await this.hooks.carryOut(this.hooks.apply({ type: 'close' }), 'close');
    if (ctx.moved) throw new ScribedError('SESSION_MOVED');
    await ctx.spotter?.close(true);
    await this.saveLevels();
    await ctx.store.setTranscriptionStatus(ctx.transcriptionId, 'COMPLETED', ctx.cursor.capturedSamples, endReason);
    ctx.spool?.remove();
    events.emit(
      serverEvent.closed({ status: 'COMPLETED', capturedSamples: ctx.cursor.capturedSamples.toString(), segments: ctx.nextSegmentIndex }),
    );
    ctx.releaseSocket()?.close(CLOSE_CODES.normal, 'session closed');
    events.closeWatchers(CLOSE_CODES.normal, 'session closed');
    ctx.metrics.sessionsClosed.inc();
    ctx.log.info(
      { capturedSamples: ctx.cursor.capturedSamples.toString(), segments: ctx.nextSegmentIndex, endReason: endReason },
      endReason === 'session.expired' ? 'idle session expired: closed' : 'session closed',
    );
    this.hooks.done();
  }

  /** Server stopping: stop accepting, finalize and persist, tell the client to resume later. */
  private async shutdown(): Promise<void> {
    const { ctx } = this;
    const { events, deferral, decoder, writes } = this.parts;
    decoder.cancel();
    ctx.stopAccepting();
    if (ctx.state === 'CLOSED') return;
    // Deferred audio not recognized yet stays in the spool: the next start replays it.
    deferral.end();
    const effects = this.hooks.apply({ type: 'shutdown' });
    await this.hooks.carryOut(effects, 'shutdown');
    if (ctx.moved) return;
    if (!effects.includes('persist')) await writes.saveProgress(true);
    await ctx.spotter?.close(true);
    await this.saveLevels();
    await ctx.spool?.whenDurable();
    // Another node may take the session at once (the client resumes through the balancer).
    if (ctx.fence) await ctx.store.releaseSession(ctx.fence);
    events.emit(serverEvent.accepting({ accepting: false, reason: 'SERVER_SHUTDOWN' }));
    ctx.releaseSocket()?.close(CLOSE_CODES.serviceRestart, 'service restarting; resume later');
    events.closeWatchers(CLOSE_CODES.serviceRestart, 'service restarting; watch again later');
  }

  /** The leg's loudness so far, for its call's analytics (read when the call ends). A track
   * that cannot be stored costs the analytics their loudness, never the close. */
  private async saveLevels(): Promise<void> {
    const ctx = this.ctx;
    if (!ctx.levels || ctx.levels.empty) return;
    await ctx.store
      .saveLegLevels(ctx.transcriptionId, ctx.levels.track())
      .catch((err: unknown) => ctx.log.warn({ err }, "the leg's loudness track could not be stored"));
  }

  /** The machine's `leave`: false when the session had already left. */
  private leave(): boolean {
    if (this.ctx.moved) return false;
    this.hooks.apply({ type: 'leave' });
    return true;
  }

  /** Stop at once without finalizing; the socket closes with 4000 (SESSION_MOVED) so the
   * client resumes, or with 1011 (INTERNAL) when the session is given up on a failure. */
  private async dropMoved(reason: string, code: 'SESSION_MOVED' | 'INTERNAL'): Promise<void> {
    const ctx = this.ctx;
    const { events, deferral, feed, decoder } = this.parts;
    if (!this.leave()) return;
    decoder.cancel();
    ctx.stopAccepting();
    const socket = ctx.releaseSocket();
    if (socket) {
      socket.send(wsError(new ScribedError(code)));
      socket.close(code === 'INTERNAL' ? CLOSE_CODES.internal : CLOSE_CODES.superseded, code);
    }
    // Watchers reconnect and find the node that serves the session now.
    events.closeWatchers(CLOSE_CODES.superseded, 'SESSION_MOVED', wsError(new ScribedError('SESSION_MOVED'), true));
    ctx.spool?.close();
    deferral.end();
    // Audio not recognized yet is in the spool: the new owner replays it.
    feed.clear();
    void ctx.spotter?.close(false);
    await this.hooks.release().catch(() => undefined);
    ctx.log.info({ reason, epoch: ctx.fence?.epoch }, 'session left this node: dropped without finalizing');
    this.hooks.done();
  }

  /** The shared spool could not store acknowledged audio: given up without acknowledging it
   * (INTERNAL, close 1011); its state in the store is what the next resume goes on from. */
  private async spoolFailed(err: unknown): Promise<void> {
    const ctx = this.ctx;
    if (ctx.moved) return;
    ctx.log.error({ err }, 'spool commit failed; giving the session up without acknowledging');
    const fence = ctx.fence;
    const wasRecording = ctx.state === 'RECORDING';
    await this.dropMoved('spool commit failed', 'INTERNAL');
    // Best effort, the store may be what failed: paused and free for any node to claim.
    if (fence && wasRecording) await ctx.store.setFencedSessionState(fence, 'PAUSED', 'PAUSED').catch(() => false);
    if (fence) await ctx.store.releaseSession(fence).catch(() => undefined);
  }

  /** Shared store, nothing held in memory any more: the session's state is all in the store,
   * so the node lets it go (any node claims it at the next socket). */
  private async giveUp(): Promise<void> {
    const ctx = this.ctx;
    if (ctx.moved || !ctx.fence) return;
    await ctx.spool?.whenDurable();
    await ctx.store.releaseSession(ctx.fence);
    if (!this.leave()) return;
    this.parts.events.closeWatchers(
      CLOSE_CODES.superseded,
      'SESSION_MOVED',
      wsError(
        new ScribedError('SESSION_MOVED', 'the paused session was released to any node; watch it again once a stream socket attaches'),
        true,
      ),
    );
    ctx.spool?.close();
    void ctx.spotter?.close(false);
    ctx.log.info('idle session released to any node');
    this.hooks.done();
  }
}
