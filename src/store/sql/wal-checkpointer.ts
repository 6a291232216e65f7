// Checkpoints of the SQLite store's write-ahead log, on a thread of their own.
//
// A checkpoint copies the WAL's pages into the database file and syncs both; SQLite runs one
// inside whichever COMMIT passes wal_autocheckpoint pages, synchronously, so on the server's
// one connection a slow disk would stall every socket of the node for as long as the syncs
// take (seen here: 1.7 s). The server's connection therefore never checkpoints
// (wal_autocheckpoint = 0) and this thread, with its own connection to the file, does so every
// `intervalMs` after the server wrote. The thread starts at the first checkpoint, so a
// short-lived process (the operator CLI) never starts one; its last connection to close does
// SQLite's final checkpoint as usual.
import { once } from 'node:events';
import type { Worker } from 'node:worker_threads';
import { siblingModule, startWorker } from '../../threads/start-worker.js';
import type { CheckpointerData, CheckpointerReply, CheckpointerRequest } from './wal-checkpointer-thread.js';

const entry = siblingModule(import.meta.url, 'wal-checkpointer-thread');

export const DEFAULT_CHECKPOINT_INTERVAL_MS = 5_000;

export class WalCheckpointer {
  private worker: Worker | null = null;
  private dirty = false;
  private inFlight = false;
  private closed = false;
  private readonly timer: NodeJS.Timeout;
  /** Checkpoints the thread has finished (for tests and diagnostics). */
  completed = 0;

  /** `onFailure`: the thread could not start or died; the caller checkpoints inline again. */
  constructor(
    private readonly data: CheckpointerData,
    intervalMs: number,
    private readonly onFailure: (reason: string) => void,
  ) {
    this.timer = setInterval(() => this.checkpoint(), intervalMs);
    this.timer.unref();
  }

  /** The server's connection appended to the WAL. */
  wrote(): void {
    this.dirty = true;
  }

  private checkpoint(): void {
    if (!this.dirty || this.inFlight || this.closed) return;
    this.dirty = false;
    this.inFlight = true;
    this.thread().postMessage({ type: 'checkpoint' } satisfies CheckpointerRequest);
  }

  private thread(): Worker {
    if (this.worker !== null) return this.worker;
    const w = startWorker(entry, { workerData: this.data });
    w.unref();
    w.on('message', (r: CheckpointerReply) => {
      if (r.type === 'checkpointed') this.completed++;
      if (r.type === 'failed') this.dirty = true; // try again at the next tick
      if (r.type !== 'closed') this.inFlight = false;
    });
    w.on('error', (err) => this.fail(`WAL checkpoint thread failed: ${err.message}`));
    w.on('exit', (code) => {
      if (!this.closed) this.fail(`WAL checkpoint thread exited (code ${code})`);
    });
    this.worker = w;
    return w;
  }

  private fail(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    this.onFailure(reason);
  }

  /** Stop checkpointing and close the thread's connection (before the server's own closes). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    const w = this.worker;
    if (w === null) return;
    const exited = once(w, 'exit');
    // The thread is unref'd so it never keeps a process alive; waiting for its exit it must:
    // otherwise a process with nothing else left (a bench after its service stopped) ends
    // here, silently, with this promise and everything after it never settled.
    w.ref();
    w.postMessage({ type: 'close' } satisfies CheckpointerRequest);
    await exited;
  }
}
