// A live session leaving this node without being closed: it moved on (a resume elsewhere,
// another node adopted it, a write found its fence gone), its shared spool failed, or, paused
// and idle on a shared store, it is given up so any node can claim it. Nothing is finalized:
// the node that serves it next replays what no segment covers from the spool.
import { ScribedError } from '../core/errors.js';
import { wsError } from '../core/envelope.js';
import { CLOSE_CODES } from '../core/protocol.js';
import type { DecoderHold } from './decoder-hold.js';
import type { Deferral } from './deferral.js';
import type { RecognitionFeed } from './recognition-feed.js';
import type { SessionEvents } from './session-events.js';
import type { SessionContext } from './session-context.js';

export class Departure {
  constructor(
    private readonly ctx: SessionContext,
    private readonly parts: { events: SessionEvents; deferral: Deferral; feed: RecognitionFeed; decoder: DecoderHold },
    private readonly hooks: {
      /** Stop feeding and give the decoder back. */
      release(): Promise<void>;
      /** The session left: the registry stops keeping it. */
      left(): void;
    },
  ) {}

  /** Stop at once without finalizing; the socket closes with 4000 (SESSION_MOVED) so the
   * client resumes, or with 1011 (INTERNAL) when the session is given up on a failure. */
  async dropMoved(reason: string, code: 'SESSION_MOVED' | 'INTERNAL' = 'SESSION_MOVED'): Promise<void> {
    const ctx = this.ctx;
    const { events, deferral, feed, decoder } = this.parts;
    if (ctx.moved) return;
    ctx.moved = true;
    decoder.cancel();
    ctx.accepting = false;
    const socket = ctx.socket;
    ctx.socket = null;
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
    await this.hooks.release().catch(() => undefined);
    ctx.log.info({ reason, epoch: ctx.fence?.epoch }, 'session left this node: dropped without finalizing');
    this.hooks.left();
  }

  /** The shared spool could not store acknowledged audio: the session is given up without
   * acknowledging it (INTERNAL, close 1011); its state in the store is what the next resume,
   * on any node, goes on from. */
  async spoolFailed(err: unknown): Promise<void> {
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
  async giveUp(): Promise<void> {
    const ctx = this.ctx;
    if (ctx.moved || !ctx.fence) return;
    await ctx.spool?.whenDurable();
    await ctx.store.releaseSession(ctx.fence);
    ctx.moved = true;
    this.parts.events.closeWatchers(CLOSE_CODES.superseded, 'SESSION_MOVED', wsError(new ScribedError('SESSION_MOVED', 'the paused session was released to any node; watch it again once a stream socket attaches'), true));
    ctx.spool?.close();
    ctx.log.info('idle session released to any node');
    this.hooks.left();
  }
}
