// Decoder pool: a few recognition worker threads (one per core by default), each hosting
// several decoders and decoding their work round-robin (src/engine/worker.ts), so native
// decoding never blocks the event loop and a node pays one thread's memory per core, not per
// call. Released decoders stay warm (model loaded) and are reused by the next stream of the
// same profile; a new decoder goes to the least-loaded thread. A thread that dies fails the
// streams of the decoders on it, and is replaced lazily.
import os from 'node:os';
import type { Worker } from 'node:worker_threads';
import { ScribedError, toScribedError } from '../core/errors.js';
import { siblingModule, startWorker } from '../threads/start-worker.js';
import type {
  AcceptResult,
  AudioProfile,
  BackendConfig,
  Engine,
  EngineCapacity,
  EngineInfo,
  EngineKind,
  FinalResult,
  RecognitionStream,
  StreamRequest,
} from './types.js';
import type { DecoderRequest, InitReply, OpenReply, WorkerReply, WorkerRequest } from './worker.js';

export interface EngineOptions {
  engine: EngineKind;
  maxDecoders: number;
  /** Recognition worker threads the decoders share (at most maxDecoders are started). Default:
   * SCRIBED_DECODER_THREADS, else the cores this process may use (os.availableParallelism()). */
  threads?: number;
  modelDir?: string;
  assetsDir?: string;
  logger?: { warn(msg: string): void; info(msg: string): void };
}

/** Test hook: the worker thread behind a stream (e.g. to terminate it on purpose). */
export const kWorker: unique symbol = Symbol('scribed.engine.worker');
/** Test hook: make the worker behind a stream stop answering for `ms` (a hung native call). */
export const kStall: unique symbol = Symbol('scribed.engine.stall');

type Request = DecoderRequest;

interface Pending {
  resolve(v: unknown): void;
  reject(e: unknown): void;
}

const workerUrl = siblingModule(import.meta.url, 'worker');

/** The number of decoder threads: the option, SCRIBED_DECODER_THREADS, or the usable cores. */
export function decoderThreads(option?: number): number {
  const env = process.env.SCRIBED_DECODER_THREADS;
  const n = option ?? (env !== undefined && env !== '' ? Number(env) : os.availableParallelism());
  if (!Number.isInteger(n) || n < 1) {
    throw new RangeError(`decoder threads must be a positive integer (got ${option ?? env})`);
  }
  return n;
}

/** One recognition worker thread and the decoders it hosts. */
class DecoderThread {
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

  call<T>(decoder: number, req: Request, transfer: ArrayBuffer[] = []): Promise<T> {
    if (this.failure !== null) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.worker.postMessage({ ...req, id, decoder } as WorkerRequest, transfer);
    });
  }

  /** A call that loads or opens a decoder (see `loading`). */
  async load<T>(decoder: number, req: Request): Promise<T> {
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
class Slot {
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

  call<T>(req: Request, transfer: ArrayBuffer[] = []): Promise<T> {
    return this.thread.call<T>(this.id, req, transfer);
  }

  load<T>(req: Request): Promise<T> {
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

/** Batched decoding (StreamRequest.decodeBatchMs): how far decoding may fall behind the
 * accepted audio before accept() waits for it (the caller's acknowledgements then slow
 * down and its client buffers). */
export const MAX_DECODE_BACKLOG_MS = 60_000;

type Enqueue = <T>(r: Request, transfer?: ArrayBuffer[]) => Promise<T>;

/** accept()/finish() of a stream with batched decoding, or null when the request decodes
 * each accept() at once. Batches go to the worker in order and are not awaited; their
 * results update the latest partial, and a failed batch fails the next call. */
function batchingFor(req: StreamRequest, enqueue: Enqueue, backlogTotal: { seconds: number }): Pick<RecognitionStream, 'accept' | 'finish' | 'onPartial'> | null {
  if (!req.decodeBatchMs || req.decodeBatchMs <= 0) return null;
  const batchSamples = Math.max(1, Math.round((req.decodeBatchMs * req.inputRate) / 1000));
  const maxBacklog = Math.round((MAX_DECODE_BACKLOG_MS * req.inputRate) / 1000);
  let gathered: Int16Array[] = [];
  let gatheredSamples = 0;
  /** Batches sent and not answered yet, oldest first, with their sizes. */
  const inFlight: Array<{ done: Promise<void>; samples: number }> = [];
  let backlog = 0;
  let latest = { partial: '', partialSamples: 0 };
  let cpuMs = 0;
  let decodedSamples = 0;
  let failure: unknown = null;
  let partialListener: ((p: Pick<AcceptResult, 'partial' | 'partialSamples'>) => void) | null = null;
  /** Counts finish() calls: a batch's partial is reported only in its own utterance. */
  let utterance = 0;

  const send = (): void => {
    if (gatheredSamples === 0) return;
    const batch = new Int16Array(gatheredSamples);
    let at = 0;
    for (const part of gathered) {
      batch.set(part, at);
      at += part.length;
    }
    gathered = [];
    gatheredSamples = 0;
    const ofUtterance = utterance;
    const entry = {
      samples: batch.length,
      done: enqueue<AcceptResult>({ type: 'accept', samples: batch }, [batch.buffer]).then(
        (r) => {
          cpuMs += r.cpuMs;
          decodedSamples += r.decodedSamples;
          if (ofUtterance !== utterance || r.partial === latest.partial) return;
          latest = { partial: r.partial, partialSamples: r.partialSamples };
          partialListener?.(latest);
        },
        (err: unknown) => {
          failure ??= err;
        },
      ),
    };
    backlog += entry.samples;
    backlogTotal.seconds += entry.samples / req.inputRate;
    inFlight.push(entry);
    void entry.done.then(() => {
      backlog -= entry.samples;
      backlogTotal.seconds -= entry.samples / req.inputRate;
      inFlight.splice(inFlight.indexOf(entry), 1);
    });
  };

  return {
    async accept(samples: Int16Array): Promise<AcceptResult> {
      if (failure !== null) throw failure;
      gathered.push(samples.slice());
      gatheredSamples += samples.length;
      if (gatheredSamples >= batchSamples) send();
      while (backlog > maxBacklog && inFlight.length > 0) await inFlight[0]!.done;
      if (failure !== null) throw failure;
      // Partials go to the onPartial listener as batches are decoded.
      const result: AcceptResult = { partial: '', partialSamples: 0, cpuMs, decodedSamples };
      cpuMs = 0;
      decodedSamples = 0;
      return result;
    },
    async finish(): Promise<FinalResult> {
      if (failure !== null) throw failure;
      send();
      utterance += 1;
      latest = { partial: '', partialSamples: 0 };
      // The worker answers in order: every batch is decoded before the utterance ends.
      const final = await enqueue<FinalResult>({ type: 'finish' });
      if (failure !== null) throw failure;
      return final;
    },
    onPartial(listener) {
      partialListener = listener;
    },
  };
}

export function createEngine(opts: EngineOptions): Engine {
  if (!Number.isInteger(opts.maxDecoders) || opts.maxDecoders < 1) {
    throw new RangeError(`maxDecoders must be a positive integer (got ${opts.maxDecoders})`);
  }
  const maxThreads = Math.min(decoderThreads(opts.threads), opts.maxDecoders);
  const info: EngineInfo = { name: opts.engine, sampleRate: 16_000, languages: ['en'], detectsLanguage: false };
  const threads = new Set<DecoderThread>();
  const slots = new Set<Slot>();
  let started = false;
  let closed = false;
  const noticed = new Set<string>();
  /** Audio sent to decoders in batches and not decoded yet, over all streams. */
  const backlogTotal = { seconds: 0 };

  const backendConfig = (profile: AudioProfile): BackendConfig => ({
    engine: opts.engine,
    profile,
    ...(opts.modelDir !== undefined ? { modelDir: opts.modelDir } : {}),
    ...(opts.assetsDir !== undefined ? { assetsDir: opts.assetsDir } : {}),
  });

  /** The thread for a new decoder: the one with the fewest streams, then the fewest decoders;
   * a thread not started yet counts as none of either, so the first decoders spread over the
   * cores (up to maxThreads) before any thread hosts two. */
  function leastLoadedThread(): DecoderThread {
    let best: DecoderThread | null = null;
    for (const t of threads) {
      if (t.state !== 'alive') continue;
      if (best === null || t.busy() < best.busy() || (t.busy() === best.busy() && t.slots.size < best.slots.size)) best = t;
    }
    if (best !== null && (threads.size >= maxThreads || (best.busy() === 0 && best.slots.size === 0))) return best;
    const t = new DecoderThread();
    t.onDeath = (dead) => threads.delete(dead);
    threads.add(t);
    return t;
  }

  /** The fewest streams a thread has (0 while another thread may be started). */
  function fewestStreams(): number {
    let min = threads.size < maxThreads ? 0 : Number.POSITIVE_INFINITY;
    for (const t of threads) if (t.state === 'alive') min = Math.min(min, t.busy());
    return min;
  }

  /** Load a decoder on the least-loaded thread; the slot counts against maxDecoders at once. */
  async function spawn(profile: AudioProfile, inputRate: number): Promise<Slot> {
    const slot = new Slot(leastLoadedThread(), profile);
    slot.onDeath = (s) => slots.delete(s);
    slots.add(slot);
    try {
      const r = await slot.load<InitReply>({ type: 'init', backend: backendConfig(profile), inputRate });
      info.sampleRate = r.engineRate;
      for (const n of r.notices) {
        if (!noticed.has(n)) {
          noticed.add(n);
          opts.logger?.warn(n);
        }
      }
    } catch (err) {
      slot.destroy();
      throw err instanceof ScribedError ? err : toScribedError(err);
    }
    if (closed) {
      slot.destroy();
      throw new ScribedError('ENGINE_FAILED', 'engine closed');
    }
    return slot;
  }

  /** The keepalive: a ping is kept in flight; the thread answers pings between turns of work
   * (at most TURN_SAMPLES of one decoder's audio), so one that has not answered within
   * `intervalMs` is stuck, and is terminated, which fails its streams like a crash
   * (ENGINE_FAILED). Loading a decoder holds a thread longer than a turn: while one loads the
   * clock is stopped. */
  function startHeartbeat(slot: Slot, intervalMs: number): () => void {
    let pingSentAt: number | null = null;
    const thread = slot.thread;
    const tick = (): void => {
      if (thread.state === 'dead' || slot.state === 'dead' || closed) return;
      const now = performance.now();
      if (pingSentAt === null) {
        pingSentAt = now;
        slot.call({ type: 'ping' }).then(
          () => {
            pingSentAt = null;
          },
          () => undefined,
        );
        return;
      }
      if (thread.loading > 0) return;
      if (now - Math.max(pingSentAt, thread.loadedAt) > intervalMs) {
        opts.logger?.warn(`recognition worker missed its heartbeat (${intervalMs} ms): terminating it`);
        void thread.terminate(`recognition worker stopped answering (no heartbeat reply within ${intervalMs} ms)`);
      }
    };
    const timer = setInterval(tick, Math.max(50, Math.min(250, intervalMs / 4)));
    timer.unref();
    tick();
    return () => clearInterval(timer);
  }

  function makeStream(slot: Slot, req: StreamRequest, opened: OpenReply): RecognitionStream {
    const inputRate = req.inputRate;
    let released = false;
    let tail: Promise<unknown> = Promise.resolve();
    const stopHeartbeat = req.heartbeatIntervalMs ? startHeartbeat(slot, req.heartbeatIntervalMs) : () => undefined;
    slot.lostListeners = [];
    // Calls are queued on the decoder in order; `tail` lets release() wait for them.
    const enqueue = <T>(r: Request, transfer: ArrayBuffer[] = []): Promise<T> => {
      if (released) return Promise.reject(new ScribedError('ENGINE_FAILED', 'stream already released'));
      const p = slot.call<T>(r, transfer);
      tail = p.catch(() => undefined);
      return p;
    };
    const batching = batchingFor(req, enqueue, backlogTotal);
    return {
      inputRate,
      vocabulary: opened.vocabulary,
      [kWorker]: slot.thread.worker,
      [kStall]: (ms: number) => slot.call({ type: 'stall', ms }),
      accept(samples: Int16Array): Promise<AcceptResult> {
        if (batching !== null) return batching.accept(samples);
        // Posting a view clones its whole underlying buffer: send a compact copy, moved
        // rather than copied again, and leave the caller's buffer alone.
        const copy = samples.slice();
        return enqueue<AcceptResult>({ type: 'accept', samples: copy }, [copy.buffer]);
      },
      detect(samples: Int16Array): Promise<Uint8Array> {
        const copy = samples.slice();
        return enqueue<Uint8Array>({ type: 'detect', samples: copy }, [copy.buffer]);
      },
      finish(): Promise<FinalResult> {
        if (batching !== null) return batching.finish();
        return enqueue<FinalResult>({ type: 'finish' });
      },
      channelState(): Promise<number[] | null> {
        return enqueue<number[] | null>({ type: 'getChannel' });
      },
      setChannelState(state: readonly number[]): Promise<boolean> {
        return enqueue<boolean>({ type: 'setChannel', state: [...state] });
      },
      onPartial(listener): void {
        batching?.onPartial(listener);
      },
      onLost(listener: (err: Error) => void): void {
        if (released) return;
        slot.lostListeners.push((err) => {
          if (!released && !closed) listener(err);
        });
      },
      async release(): Promise<void> {
        if (released) return;
        released = true;
        stopHeartbeat();
        slot.lostListeners = [];
        await tail;
        if (slot.retire) slot.destroy();
        else if (slot.state === 'busy' && !closed) slot.state = 'idle';
      },
    } as RecognitionStream;
  }

  return {
    info,
    async start(): Promise<void> {
      if (closed) throw new ScribedError('ENGINE_FAILED', 'engine closed');
      if (started) return;
      const slot = await spawn('wideband', info.sampleRate);
      slot.state = 'idle';
      started = true;
      opts.logger?.info(`${opts.engine} engine ready (${opts.maxDecoders} decoder(s) max on ${maxThreads} thread(s))`);
    },
    ready(): boolean {
      return started && !closed;
    },
    async open(req: StreamRequest): Promise<RecognitionStream> {
      if (closed) throw new ScribedError('ENGINE_FAILED', 'engine closed');
      if (!Number.isInteger(req.inputRate) || req.inputRate <= 0) {
        throw new ScribedError('VALIDATION_FAILED', `inputRate must be a positive integer (got ${req.inputRate})`);
      }
      // A warm decoder of this profile, on the thread with the fewest streams.
      let slot: Slot | undefined;
      for (const s of slots) {
        if (s.state === 'idle' && s.profile === req.profile && (slot === undefined || s.thread.busy() < slot.thread.busy())) slot = s;
      }
      if (slot !== undefined && slot.thread.busy() > fewestStreams()) {
        // Reusing it would leave its thread two streams ahead of another (after a thread died,
        // say): a decoder on the emptier thread instead, new if the pool has room, else this one
        // recycled there, so streams stay spread within one. Rare: released decoders idle where
        // streams ended, where streams are fewer; and a load holds its thread (~0.2 s CPU).
        if (slots.size >= opts.maxDecoders) slot.destroy();
        slot = undefined;
      }
      if (slot === undefined) {
        if (slots.size >= opts.maxDecoders) {
          // Full: recycle an idle decoder of the other profile, if any.
          const other = [...slots].find((s) => s.state === 'idle');
          if (other === undefined) throw new ScribedError('ENGINE_BUSY');
          other.destroy();
        }
        slot = await spawn(req.profile, req.inputRate);
      } else {
        slot.state = 'busy';
      }
      let opened: OpenReply;
      const hints = req.vocabularyHints ?? [];
      // The dictionary and search a hint adds stay on the decoder: it serves this stream only.
      if (hints.length > 0) slot.retire = true;
      try {
        opened = await slot.load<OpenReply>({ type: 'open', inputRate: req.inputRate, vad: req.vad ?? null, vocabularyHints: hints });
      } catch (err) {
        slot.destroy();
        throw err instanceof ScribedError ? err : toScribedError(err);
      }
      return makeStream(slot, req, opened);
    },
    decodeBacklogSeconds(): number {
      return Math.max(0, backlogTotal.seconds);
    },
    capacity(): EngineCapacity {
      // A slot is 'busy' from spawn until release, so starting decoders count; dead slots have
      // left the set; an idle slot of the other profile is recycled by open(), so it is free.
      let busy = 0;
      for (const s of slots) if (s.state === 'busy') busy++;
      return { decoders: opts.maxDecoders, busy };
    },
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      const all = [...threads];
      threads.clear();
      slots.clear();
      await Promise.all(all.map((t) => t.terminate('engine closed')));
    },
  };
}
