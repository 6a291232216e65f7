// The pool's two units (src/engine/pool.ts): a recognition worker thread (DecoderThread), and
// one decoder hosted on it (Slot). Requests go to the thread as messages, each answered once
// (src/engine/worker.ts); a thread that crashes, exits or is terminated fails every call in
// flight and every decoder it hosts, and takes no more calls.
import type { Worker } from 'node:worker_threads';
import { ScribedError, toScribedError } from '../core/errors.js';
import { siblingModule, startWorker } from '../threads/start-worker.js';
import type { AudioProfile } from './types.js';
import type { DecoderRequest, WorkerReply, WorkerRequest } from './worker.js';

interface Pending {
  resolve(v: unknown): void;
  reject(e: unknown): void;
}

const workerUrl = siblingModule(import.meta.url, 'worker');

/** One recognition worker thread and the decoders it hosts. */
export class DecoderThread {
  readonly worker: Worker;
  state: 'alive' | 'dead' = 'alive';
  readonly slots = new Set<Slot>();
  /** Decoders being loaded or opened on this thread: a load holds the thread for a while
   * (about 0.2 CPU s for a pocketsphinx decoder over the shared models), which the heartbeat must not take for a hang. */
  loading = 0;
  /** performance.now() when the last load ended. */
  loadedAt = 0;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private failure: ScribedError | null = null;
  onDeath: ((thread: DecoderThread) => void) | null = null;

  constructor() {
    this.worker = startWorker(workerUrl);
    this.worker.on('message', (reply: WorkerReply) => {
      const p = this.pending.get(reply.id);
      if (p === undefined) return;
      this.pending.delete(reply.id);
      if (reply.ok) p.resolve(reply.result);
      else p.reject(toScribedError(reply.error));
    });
    this.worker.on('error', (err) => this.die(`recognition worker crashed: ${err.message}`, err));
    this.worker.on('exit', (code) => this.die(`recognition worker exited (code ${code})`));
  }

  /** Streams (busy decoders) on this thread: what "least loaded" compares. */
  busy(): number {
    let n = 0;
    for (const s of this.slots) if (s.state === 'busy') n++;
    return n;
  }

  /** `transfer`: buffers moved to the worker, not copied (they are detached here). */
  call<T>(decoder: number, req: DecoderRequest, transfer: ArrayBuffer[] = []): Promise<T> {
    if (this.failure !== null) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.worker.postMessage({ ...req, id, decoder } as WorkerRequest, transfer);
    });
  }

  /** A call that loads or opens a decoder (see `loading`). */
  async load<T>(decoder: number, req: DecoderRequest): Promise<T> {
    this.loading++;
    try {
      return await this.call<T>(decoder, req);
    } finally {
      this.loading--;
      this.loadedAt = performance.now();
    }
  }

  die(reason: string, cause?: unknown): void {
    if (this.state === 'dead') return;
    this.state = 'dead';
    this.failure = new ScribedError('ENGINE_FAILED', reason, cause === undefined ? undefined : { cause });
    for (const p of this.pending.values()) p.reject(this.failure);
    this.pending.clear();
    this.onDeath?.(this);
    for (const s of [...this.slots]) s.lost(this.failure);
    this.slots.clear();
  }

  async terminate(reason: string): Promise<void> {
    this.die(reason);
    await this.worker.terminate();
  }
}

let nextDecoderId = 1;

/** One decoder, hosted by a DecoderThread. */
export class Slot {
  readonly thread: DecoderThread;
  readonly id = nextDecoderId++;
  readonly profile: AudioProfile;
  state: 'idle' | 'busy' | 'dead' = 'busy';
  onDeath: ((slot: Slot) => void) | null = null;
  /** Listeners of the stream currently bound to this slot (see RecognitionStream.onLost). */
  lostListeners: Array<(err: Error) => void> = [];
  /** The decoder was changed for one stream (vocabulary hints): never lend it again. */
  retire = false;

  constructor(thread: DecoderThread, profile: AudioProfile) {
    this.thread = thread;
    this.profile = profile;
    thread.slots.add(this);
  }

  call<T>(req: DecoderRequest, transfer: ArrayBuffer[] = []): Promise<T> {
    return this.thread.call<T>(this.id, req, transfer);
  }

  load<T>(req: DecoderRequest): Promise<T> {
    return this.thread.load<T>(this.id, req);
  }

  /** The thread died under this decoder. */
  lost(failure: ScribedError): void {
    if (this.state === 'dead') return;
    this.state = 'dead';
    this.onDeath?.(this);
    const listeners = this.lostListeners.splice(0);
    for (const l of listeners) l(failure);
  }

  /** Free this decoder on its thread (the thread and its other decoders carry on). */
  destroy(): void {
    if (this.state === 'dead') return;
    this.state = 'dead';
    this.lostListeners = [];
    this.thread.slots.delete(this);
    this.onDeath?.(this);
    this.call({ type: 'destroy' }).catch(() => undefined);
  }
}
