// The shared spool (PostgreSQL mode, docs/scaling.md): a live session's acknowledged audio is
// written to the database, where any node can read it, before its ack goes out. It does what
// the file spool (audio-spool.ts) does for one node, through the same SessionSpool methods:
//
// - append() queues a frame (frames that follow each other become one chunk row, each frame's
//   length kept, so a replay feeds the recognizer the frames as they came);
// - whenDurable() resolves once a group commit holding everything queued so far committed.
//   The commit is the node's (spool-committer.ts): the first request after a commit starts a
//   window of `windowMs`, and one transaction then writes what every session of the node
//   queued in it (frames, keepFrom/clear in order, progress);
// - each session is fenced inside that transaction: its part is written only while the
//   session row still names this node and epoch, so a node that lost the session can no longer
//   add to its spool, and its acks fail (SESSION_MOVED) instead of going out.
//
// Unlike the file spool, an append is not durable until its commit: `durableEnd` says how far
// the committed spool reaches, and the session saves that, not its cursor, as progress, and
// waits for the commit before it persists a final past it.
import type { Logger } from 'pino';
import { encodePcm16le } from '../core/audio/encodings.js';
import { ScribedError } from '../core/errors.js';
import type { SessionFence, SessionProgress, SpoolOp, Store } from '../store/store.js';
import type { SessionSpool } from './audio-spool.js';
import { mergeProgress, sameFence, SpoolCommitter, type CommitMember, type CommitResult, type TakenBatch } from './spool-committer.js';

export interface DatabaseSpoolOptions {
  store: Store;
  /** Group-commit window (the file spool's fsync window, SCRIBED_SPOOL_FSYNC_MS). */
  windowMs: number;
  leaseMs: number;
  log?: Logger;
}

interface Waiter {
  resolve: () => void;
  reject: (e: Error) => void;
}
interface ProgressWaiter {
  resolve: (saved: boolean) => void;
  reject: (e: Error) => void;
}
interface QueuedProgress {
  fence: SessionFence;
  progress: SessionProgress;
  waiters: ProgressWaiter[];
}
interface SpoolTaken extends TakenBatch {
  ops: SpoolOp[];
  end: bigint | null;
  waiters: Waiter[];
  progress: QueuedProgress | null;
}

export class DatabaseSpool implements SessionSpool, CommitMember<SpoolTaken> {
  readonly shared = true;
  private queued: SpoolOp[] = [];
  /** Waiters covered by the next commit that takes this spool. */
  private waiting: Waiter[] = [];
  private progress: QueuedProgress | null = null;
  /** The commit that took this spool and has not settled: its waiters, and when it settles. */
  private inFlight: { waiters: Waiter[]; settled: Promise<void>; done: () => void } | null = null;
  private closed = false;
  private queuedEnd: bigint | null = null;
  private committedEnd: bigint;

  constructor(
    readonly sessionId: string,
    private readonly fence: () => SessionFence | null,
    private readonly committer: SpoolCommitter,
    private readonly opts: DatabaseSpoolOptions,
    /** Where the stored audio ends when the session is loaded (its cursor then). */
    committedEnd: bigint,
  ) {
    this.committedEnd = committedEnd;
  }

  get durableEnd(): bigint {
    return this.committedEnd;
  }

  append(startSample: bigint, samples: Int16Array): void {
    if (this.closed) throw new Error(`spool of ${this.sessionId} is closed`);
    const pcm = Buffer.from(encodePcm16le(samples));
    const last = this.queued[this.queued.length - 1];
    if (last?.type === 'append' && this.queuedEnd === startSample) {
      last.chunk.frames.push(samples.length);
      last.chunk.pcm = Buffer.concat([last.chunk.pcm, pcm]);
    } else {
      this.queued.push({ type: 'append', chunk: { startSample, frames: [samples.length], pcm } });
    }
    this.queuedEnd = startSample + BigInt(samples.length);
  }

  whenDurable(): Promise<void> {
    if (this.queued.length === 0 && this.progress === null) {
      // Nothing new: what is in flight, if anything, is what the caller waits for.
      const inFlight = this.inFlight;
      if (!inFlight || this.closed) return Promise.resolve();
      return new Promise<void>((resolve, reject) => inFlight.waiters.push({ resolve, reject }));
    }
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.committer.request(this);
    });
  }

  /** Progress saved in the node's next group commit, with this session's frames; false when
   * the fence no longer held (as saveFencedProgress answers). */
  saveProgress(fence: SessionFence, progress: SessionProgress): Promise<boolean> {
    if (this.closed) return this.opts.store.saveFencedProgress(fence, progress);
    return new Promise<boolean>((resolve, reject) => {
      const q = this.progress;
      if (q && sameFence(q.fence, fence)) {
        q.progress = mergeProgress(q.progress, progress);
        q.waiters.push({ resolve, reject });
      } else {
        if (q) this.saveDirectly(q); // an older epoch's save: on its own fence
        this.progress = { fence, progress, waiters: [{ resolve, reject }] };
      }
      this.committer.request(this);
    });
  }

  clear(channelState: readonly number[] | null = null): void {
    this.queue({ type: 'clear', channelState });
  }

  keepFrom(fromSample: bigint, channelState: readonly number[] | null = null): void {
    this.queue({ type: 'keepFrom', fromSample, channelState });
  }

  /** Nothing to release: no descriptor is held between commits. */
  release(): void {}

  /** The session is closed: its spool goes (its transcript is persisted), once a commit in
   * flight has settled, so none of its rows lands after the delete. */
  remove(): void {
    this.close();
    const settled = this.inFlight?.settled ?? Promise.resolve();
    void settled
      .then(() => this.opts.store.deleteSpool(this.sessionId))
      .catch((err: unknown) => this.opts.log?.warn({ err, sessionId: this.sessionId }, 'could not delete the spool'));
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.queued = [];
    for (const w of this.waiting.splice(0)) w.resolve();
    if (this.progress) this.saveDirectly(this.progress);
    this.progress = null;
  }

  // ---------------------------------------------------------------- the committer's side

  take(): SpoolTaken | null {
    if (this.closed) return null;
    const ops = this.queued.splice(0);
    const waiters = this.waiting.splice(0);
    const queuedProgress = this.progress;
    this.progress = null;
    if (ops.length === 0 && queuedProgress === null) {
      for (const w of waiters) w.resolve();
      return null;
    }
    const fence = this.fence();
    if (!fence) {
      const err = new Error(`session ${this.sessionId} is not owned by this node`);
      for (const w of waiters) w.reject(err);
      if (queuedProgress) for (const w of queuedProgress.waiters) w.reject(err);
      return null;
    }
    // A save made under an earlier epoch of this node is written on its own fence.
    let progress = queuedProgress;
    if (progress && !sameFence(progress.fence, fence)) {
      this.saveDirectly(progress);
      progress = null;
    }
    let done!: () => void;
    const settled = new Promise<void>((r) => (done = r));
    this.inFlight = { waiters: [], settled, done };
    return { batch: { fence, ops, ...(progress ? { progress: progress.progress } : {}) }, ops, end: this.queuedEnd, waiters, progress };
  }

  settle(taken: SpoolTaken, result: CommitResult): void {
    const inFlight = this.inFlight;
    this.inFlight = null;
    const waiters = [...taken.waiters, ...(inFlight?.waiters ?? [])];
    const progressWaiters = taken.progress?.waiters ?? [];
    try {
      switch (result.kind) {
        case 'written':
          if (taken.end !== null && taken.end > this.committedEnd) this.committedEnd = taken.end;
          for (const w of waiters) w.resolve();
          for (const w of progressWaiters) w.resolve(true);
          return;
        case 'busy':
          // The row was held by another transaction: the same batch goes in the next window,
          // ahead of what was queued since.
          if (this.closed) {
            for (const w of waiters) w.resolve();
            if (taken.progress) this.saveDirectly(taken.progress);
            return;
          }
          this.requeue(taken, waiters);
          this.committer.request(this);
          return;
        case 'fenced': {
          // Nothing of this session's was stored: its frames are not acknowledged.
          const f = taken.batch.fence;
          const err = new ScribedError('SESSION_MOVED', `session ${f.sessionId} epoch ${f.epoch} is no longer served by node ${f.node}`);
          for (const w of waiters) w.reject(err);
          for (const w of progressWaiters) w.resolve(false);
          return;
        }
        case 'failed':
          // Nothing of this commit is stored: its frames are not acknowledged, and the session
          // gives the socket up (the client resumes and sends them again).
          for (const w of waiters) w.reject(result.error);
          for (const w of progressWaiters) w.reject(result.error);
          return;
      }
    } finally {
      inFlight?.done();
    }
  }

  private requeue(taken: SpoolTaken, waiters: Waiter[]): void {
    this.queued.unshift(...taken.ops);
    this.waiting.unshift(...waiters);
    const p = taken.progress;
    if (!p) return;
    const q = this.progress;
    if (q && sameFence(q.fence, p.fence)) {
      q.progress = mergeProgress(p.progress, q.progress);
      q.waiters.unshift(...p.waiters);
    } else if (q) this.saveDirectly(p);
    else this.progress = p;
  }

  private saveDirectly(q: QueuedProgress): void {
    this.opts.store.saveFencedProgress(q.fence, q.progress).then(
      (saved) => {
        for (const w of q.waiters) w.resolve(saved);
      },
      (err: unknown) => {
        for (const w of q.waiters) w.reject(err as Error);
      },
    );
  }

  private queue(op: SpoolOp): void {
    if (this.closed) return;
    this.queued.push(op);
    this.committer.request(this);
  }
}

/** The shared spools of a node: one DatabaseSpool per live session, one committer for all. */
export class DatabaseSpools {
  readonly committer: SpoolCommitter;

  constructor(private readonly opts: DatabaseSpoolOptions) {
    this.committer = new SpoolCommitter({ store: opts.store, windowMs: opts.windowMs, log: opts.log });
  }

  open(sessionId: string, fence: () => SessionFence | null, capturedSamples: bigint): DatabaseSpool {
    return new DatabaseSpool(sessionId, fence, this.committer, this.opts, capturedSamples);
  }
}
