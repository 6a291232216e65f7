// The session's writes to the store, each through its fence (docs/scaling.md): a write the
// store refuses because the session moved on (another node, a newer epoch) drops the session
// here and fails with SESSION_MOVED, so nothing more is written for it.
import { ScribedError } from '../core/errors.js';
import type { SegmentRecord, SessionFence, SessionState, TranscriptionStatus } from '../store/store.js';
import type { SessionContext } from './session-context.js';
import { DatabaseSpool } from './database-spool.js';

export class FencedWrites {
  private lastSavedAt = 0;

  constructor(
    private readonly ctx: SessionContext,
    /** A write found the fence gone: the session is dropped from this node. */
    private readonly fencedOff: (reason: string) => Promise<void>,
  ) {}

  async write(write: (fence: SessionFence) => Promise<boolean>): Promise<void> {
    if (this.ctx.moved) throw new ScribedError('SESSION_MOVED');
    const fence = this.ctx.fence;
    if (!fence) throw new ScribedError('INTERNAL', `session ${this.ctx.id} is written before this node claimed it`);
    if (await write(fence)) return;
    await this.fencedOff('fenced write');
    throw new ScribedError('SESSION_MOVED');
  }

  setState(state: SessionState, status: TranscriptionStatus): Promise<void> {
    return this.write((f) => this.ctx.store.setFencedSessionState(f, state, status));
  }

  appendFinal(segment: SegmentRecord): Promise<void> {
    return this.write((f) => this.ctx.store.appendFencedSegment(f, segment));
  }

  /** Progress (cursor, Characters charged, next segment index), at most once a second unless
   * forced. */
  async saveProgress(force: boolean): Promise<void> {
    const now = Date.now();
    if (!force && now - this.lastSavedAt < 1000) return;
    this.lastSavedAt = now;
    const ctx = this.ctx;
    // A shared spool's appends are durable at commit: progress never runs ahead of it, so a
    // node that takes over after a crash asks the client for exactly what was not stored.
    const durable = ctx.spool?.durableEnd ?? null;
    const captured = durable !== null && durable < ctx.cursor.capturedSamples ? durable : ctx.cursor.capturedSamples;
    const progress = { capturedSamples: captured, charactersCharged: ctx.charged, nextSegmentIndex: ctx.nextSegmentIndex };
    // On the shared spool the save rides the node's next group commit (spool-committer.ts).
    const spool = ctx.spool;
    await this.write((f) => (spool instanceof DatabaseSpool ? spool.saveProgress(f, progress) : ctx.store.saveFencedProgress(f, progress)));
  }
}
