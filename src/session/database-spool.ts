// The shared spool (PostgreSQL mode, docs/scaling.md): a live session's acknowledged audio is
// written to the database, where any node can read it, before its ack goes out. It does what
// the file spool (audio-spool.ts) does for one node, through the same SessionSpool methods:
//
// - append() queues a frame (frames that follow each other become one chunk row, each frame's
//   length kept, so a replay feeds the recognizer the frames as they came);
// - whenDurable() resolves once a group commit holding everything queued so far committed:
//   the first frame after a commit starts a window of `windowMs`, and one transaction then
//   writes every frame of the window (and any keepFrom/clear queued between them, in order);
// - each transaction is fenced: it commits only while the session row still names this node
//   and epoch, so a node that lost the session can no longer add to its spool, and its acks
//   fail (SESSION_MOVED) instead of going out.
//
// Unlike the file spool, an append is not durable until its commit: `durableEnd` says how far
// the committed spool reaches, and the session saves that, not its cursor, as progress, and
// waits for the commit before it persists a final past it.
import type { Logger } from 'pino';
import { encodePcm16le } from '../core/audio/encodings.js';
import type { SessionFence, SpoolOp, Store } from '../store/store.js';
import type { SessionSpool } from './audio-spool.js';

export interface DatabaseSpoolOptions {
  store: Store;
  /** Group-commit window (the file spool's fsync window, SCRIBED_SPOOL_FSYNC_MS). */
  windowMs: number;
  leaseMs: number;
  log?: Logger;
}

export class DatabaseSpool implements SessionSpool {
  readonly shared = true;
  private queued: SpoolOp[] = [];
  /** Waiters covered by the next commit that starts. */
  private waiting: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> | null = null;
  private closed = false;
  private queuedEnd: bigint | null = null;
  private committedEnd: bigint;

  constructor(
    readonly sessionId: string,
    private readonly fence: () => SessionFence | null,
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
    if (this.queued.length === 0 && !this.writing) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.schedule();
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

  /** The session is closed: its spool goes (its transcript is persisted). */
  remove(): void {
    this.close();
    void this.opts.store.deleteSpool(this.sessionId).catch((err: unknown) => this.opts.log?.warn({ err, sessionId: this.sessionId }, 'could not delete the spool'));
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.queued = [];
    for (const w of this.waiting.splice(0)) w.resolve();
  }

  private queue(op: SpoolOp): void {
    if (this.closed) return;
    this.queued.push(op);
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.writing || this.closed) return;
    if (this.queued.length === 0 && this.waiting.length === 0) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.writing = this.commit().finally(() => {
        this.writing = null;
        this.schedule();
      });
    }, Math.max(0, this.opts.windowMs));
  }

  private async commit(): Promise<void> {
    const ops = this.queued.splice(0);
    const waiters = this.waiting.splice(0);
    const end = this.queuedEnd;
    if (ops.length === 0) {
      for (const w of waiters) w.resolve();
      return;
    }
    const fence = this.fence();
    try {
      if (!fence) throw new Error(`session ${this.sessionId} is not owned by this node`);
      await this.opts.store.writeSpool(fence, ops, new Date(), this.opts.leaseMs);
      if (end !== null && end > this.committedEnd) this.committedEnd = end;
      for (const w of waiters) w.resolve();
    } catch (err) {
      // Nothing of this commit is stored: its frames are not acknowledged, and the session
      // gives the socket up (the client resumes and sends them again).
      for (const w of waiters) w.reject(err as Error);
    }
  }
}

/** The shared spools of a node: one DatabaseSpool per live session. */
export class DatabaseSpools {
  constructor(private readonly opts: DatabaseSpoolOptions) {}

  open(sessionId: string, fence: () => SessionFence | null, capturedSamples: bigint): DatabaseSpool {
    return new DatabaseSpool(sessionId, fence, this.opts, capturedSamples);
  }
}
