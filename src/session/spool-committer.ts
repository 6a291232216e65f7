// The node's group commit of the shared spool (docs/scaling.md, "Group commit"). Every
// session's DatabaseSpool queues its frames, keepFrom/clear and progress here; once a window
// (`windowMs` from the first request after the last commit), ONE transaction
// (store.writeSpools) writes what every session of the node queued, so a node asks PostgreSQL
// for about 1000 / windowMs transactions a second however many calls it carries (each session
// its own transaction per window before: 20 a second per call at 50 ms).
//
// The store fences each session inside that transaction: the sessions whose fence held are
// committed, a session that lost its fence gets SESSION_MOVED, and a session whose row another
// transaction held is offered again in the next window. One session's trouble never holds up
// the others' acknowledgements.
import type { Logger } from 'pino';
import type { SessionFence, SessionProgress, SpoolBatch, SpoolCommitOutcome, Store } from '../store/store.js';

/** What a spool hands to the commit that takes it. */
export interface TakenBatch {
  batch: SpoolBatch;
}

/** A spool the committer serves (database-spool.ts). */
export interface CommitMember<T extends TakenBatch = TakenBatch> {
  readonly sessionId: string;
  /** Everything queued since the last commit, or null when there is nothing to write (the
   * member settles its own waiters then). */
  take(): T | null;
  /** The outcome of the commit that took `taken`. */
  settle(taken: T, result: CommitResult): void;
}

export type CommitResult = { kind: 'written' } | { kind: 'busy' } | { kind: 'fenced' } | { kind: 'failed'; error: Error };

export interface SpoolCommitterOptions {
  store: Pick<Store, 'writeSpools'>;
  /** The group-commit window (SCRIBED_SPOOL_FSYNC_MS). */
  windowMs: number;
  log?: Logger;
}

/** Windows in a row a failing commit is tried before its sessions' acks fail. */
export const WINDOW_ATTEMPTS = 3;

export class SpoolCommitter {
  private readonly pending = new Set<CommitMember>();
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> | null = null;
  /** Commits so far (one transaction each): for tests and the bench's arithmetic. */
  commits = 0;
  private failedInARow = 0;

  constructor(private readonly opts: SpoolCommitterOptions) {}

  /** `member` has something for the next commit. */
  request(member: CommitMember): void {
    this.pending.add(member);
    this.schedule();
  }

  /** Resolves once no commit is in flight (the one running now, if any, has settled). */
  idle(): Promise<void> {
    return this.writing ?? Promise.resolve();
  }

  private schedule(): void {
    if (this.timer || this.writing || this.pending.size === 0) return;
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.writing = this.commit().finally(() => {
          this.writing = null;
          this.schedule();
        });
      },
      Math.max(0, this.opts.windowMs),
    );
  }

  private async commit(): Promise<void> {
    const taken: Array<{ member: CommitMember; taken: TakenBatch }> = [];
    for (const member of this.pending) {
      const t = member.take();
      if (t) taken.push({ member, taken: t });
    }
    this.pending.clear();
    if (taken.length === 0) return;
    let outcome: SpoolCommitOutcome;
    try {
      this.commits += 1;
      outcome = await this.opts.store.writeSpools(taken.map((t) => t.taken.batch));
    } catch (err) {
      if (refusedByData(err)) {
        // One session's rows made the database refuse the statement (a constraint, a
        // trigger): each session on its own, so only that one fails; trying the same rows
        // again would be refused again.
        this.opts.log?.warn({ err, sessions: taken.length }, 'spool group commit refused; committing each session alone');
        if (taken.length === 1) taken[0]!.member.settle(taken[0]!.taken, { kind: 'failed', error: err as Error });
        else await Promise.all(taken.map((t) => this.commitAlone(t.member, t.taken)));
        return;
      }
      // A window shared by every session must not drop them all for one passing failure (a
      // connection lost, the pool's connect timeout while debits hold every connection): the
      // batches go into the next window (writing them twice changes nothing), up to
      // WINDOW_ATTEMPTS windows in a row. Then nothing of them is stored: no frame is
      // acknowledged, and each session gives its socket up (the client resumes and sends
      // them again), as when the database is gone.
      this.failedInARow += 1;
      const giveUp = this.failedInARow >= WINDOW_ATTEMPTS;
      this.opts.log?.warn(
        { err, sessions: taken.length, attempt: this.failedInARow },
        giveUp ? 'spool group commit failed' : 'spool group commit failed; trying again next window',
      );
      if (giveUp) this.failedInARow = 0;
      for (const t of taken) t.member.settle(t.taken, giveUp ? { kind: 'failed', error: err as Error } : { kind: 'busy' });
      return;
    }
    this.failedInARow = 0;
    this.settleAll(taken, outcome);
  }

  private async commitAlone(member: CommitMember, taken: TakenBatch): Promise<void> {
    let outcome: SpoolCommitOutcome;
    try {
      this.commits += 1;
      outcome = await this.opts.store.writeSpools([taken.batch]);
    } catch (err) {
      member.settle(taken, { kind: 'failed', error: err as Error });
      return;
    }
    this.settleAll([{ member, taken }], outcome);
  }

  private settleAll(taken: ReadonlyArray<{ member: CommitMember; taken: TakenBatch }>, outcome: SpoolCommitOutcome): void {
    const results = new Map<string, CommitResult>();
    for (const id of outcome.written) results.set(id, { kind: 'written' });
    for (const id of outcome.fenced) results.set(id, { kind: 'fenced' });
    for (const id of outcome.busy) results.set(id, { kind: 'busy' });
    for (const x of outcome.invalid) results.set(x.sessionId, { kind: 'failed', error: new RangeError(x.reason) });
    for (const t of taken) {
      const r = results.get(t.member.sessionId) ?? {
        kind: 'failed',
        error: new Error(`spool commit did not answer for session ${t.member.sessionId}`),
      };
      t.member.settle(t.taken, r);
    }
  }
}

/** True when the database refused the statement for what it held (PostgreSQL SQLSTATE of a
 * data, constraint or raised error; SQLite's constraint errors), not because it could not be
 * reached or ran out of room: then committing sessions one by one isolates the culprit. */
export function refusedByData(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  if (code.startsWith('SQLITE_CONSTRAINT')) return true;
  return /^(22|23|P0|42)/.test(code);
}

/** Two progress saves of one session as one: each cursor the larger. */
export function mergeProgress(a: SessionProgress, b: SessionProgress): SessionProgress {
  const max = <T extends bigint | number>(x: T | undefined, y: T | undefined): T | undefined =>
    x === undefined ? y : y === undefined ? x : x > y ? x : y;
  const out: SessionProgress = { capturedSamples: a.capturedSamples > b.capturedSamples ? a.capturedSamples : b.capturedSamples };
  const charged = max(a.charactersCharged, b.charactersCharged);
  const next = max(a.nextSegmentIndex, b.nextSegmentIndex);
  if (charged !== undefined) out.charactersCharged = charged;
  if (next !== undefined) out.nextSegmentIndex = next;
  return out;
}

export const sameFence = (a: SessionFence, b: SessionFence): boolean =>
  a.sessionId === b.sessionId && a.epoch === b.epoch && a.node === b.node;
