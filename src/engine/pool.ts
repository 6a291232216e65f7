// Decoder pool: one worker thread per decoder, so native decoding never blocks the event loop.
// Released decoders stay warm (model loaded) and are reused by the next stream of the same
// profile; a worker that dies fails only the stream bound to it and is replaced lazily.
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { ScribedError, toScribedError } from '../core/errors.js';
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
import type { InitReply, OpenReply, WorkerReply, WorkerRequest } from './worker.js';

export interface EngineOptions {
  engine: EngineKind;
  maxDecoders: number;
  modelDir?: string;
  assetsDir?: string;
  logger?: { warn(msg: string): void; info(msg: string): void };
}

/** Test hook: the worker thread behind a stream (e.g. to terminate it on purpose). */
export const kWorker: unique symbol = Symbol('scribed.engine.worker');
/** Test hook: make the worker behind a stream stop answering for `ms` (a hung native call). */
export const kStall: unique symbol = Symbol('scribed.engine.stall');

type Distribute<T> = T extends unknown ? Omit<T, 'id'> : never;
type Request = Distribute<WorkerRequest>;

interface Pending {
  resolve(v: unknown): void;
  reject(e: unknown): void;
}

const fromSource = import.meta.url.endsWith('.ts');
const workerUrl = new URL(fromSource ? './worker.ts' : './worker.js', import.meta.url);

/** Start the worker script; from TypeScript source it needs tsx's loader in the thread. */
function startWorker(): Worker {
  if (!fromSource) return new Worker(workerUrl);
  // Node 20 ignores `execArgv: ['--import', 'tsx']` for a worker's own entry module ("Unknown
  // file extension .ts"), so a tiny bootstrap registers tsx's ESM hooks, then imports the
  // TypeScript entry. The execArgv still lets nested imports resolve under the same loader.
  const tsxDir = path.dirname(createRequire(import.meta.url).resolve('tsx/package.json'));
  const api = pathToFileURL(path.join(tsxDir, 'dist', 'esm', 'api', 'index.mjs')).href;
  const boot = `import(${JSON.stringify(api)}).then((m) => { m.register(); return import(${JSON.stringify(workerUrl.href)}); });`;
  return new Worker(boot, { eval: true, execArgv: ['--import', 'tsx'] });
}

/** One worker thread holding one decoder. */
class Slot {
  readonly worker: Worker;
  readonly profile: AudioProfile;
  state: 'idle' | 'busy' | 'dead' = 'busy';
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private failure: ScribedError | null = null;
  onDeath: ((slot: Slot) => void) | null = null;
  /** Listeners of the stream currently bound to this slot (see RecognitionStream.onLost). */
  lostListeners: Array<(err: Error) => void> = [];
  /** The decoder was changed for one stream (vocabulary hints): never lend it again. */
  retire = false;

  constructor(profile: AudioProfile) {
    this.profile = profile;
    this.worker = startWorker();
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

  call<T>(req: Request, transfer: ArrayBuffer[] = []): Promise<T> {
    if (this.failure !== null) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.worker.postMessage({ ...req, id } as WorkerRequest, transfer);
    });
  }

  die(reason: string, cause?: unknown): void {
    if (this.state === 'dead') return;
    this.state = 'dead';
    this.failure = new ScribedError('ENGINE_FAILED', reason, cause === undefined ? undefined : { cause });
    for (const p of this.pending.values()) p.reject(this.failure);
    this.pending.clear();
    this.onDeath?.(this);
    const listeners = this.lostListeners.splice(0);
    for (const l of listeners) l(this.failure);
  }

  async terminate(reason: string): Promise<void> {
    this.die(reason);
    await this.worker.terminate();
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
  const info: EngineInfo = { name: opts.engine, sampleRate: 16_000, languages: ['en'], detectsLanguage: false };
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

  /** Start a worker and load its decoder; the slot counts against maxDecoders at once. */
  async function spawn(profile: AudioProfile, inputRate: number): Promise<Slot> {
    const slot = new Slot(profile);
    slot.onDeath = (s) => slots.delete(s);
    slots.add(slot);
    try {
      const r = await slot.call<InitReply>({ type: 'init', backend: backendConfig(profile), inputRate });
      info.sampleRate = r.engineRate;
      for (const n of r.notices) {
        if (!noticed.has(n)) {
          noticed.add(n);
          opts.logger?.warn(n);
        }
      }
    } catch (err) {
      await slot.terminate('decoder failed to start');
      throw err instanceof ScribedError ? err : toScribedError(err);
    }
    if (closed) {
      await slot.terminate('engine closed');
      throw new ScribedError('ENGINE_FAILED', 'engine closed');
    }
    return slot;
  }

  /** The keepalive: a ping is kept in flight; the worker answers pings between pieces of
   * work (every 50 ms of audio decoded), so one that has not answered within `intervalMs` is
   * stuck, and is terminated, which fails the stream like a crash (ENGINE_FAILED). */
  function startHeartbeat(slot: Slot, intervalMs: number): () => void {
    let pingSentAt: number | null = null;
    const tick = (): void => {
      if (slot.state === 'dead' || closed) return;
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
      if (now - pingSentAt > intervalMs) {
        opts.logger?.warn(`recognition worker missed its heartbeat (${intervalMs} ms): terminating it`);
        void slot.terminate(`recognition worker stopped answering (no heartbeat reply within ${intervalMs} ms)`);
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
    // Calls are queued on the worker in order; `tail` lets release() wait for them.
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
      [kWorker]: slot.worker,
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
        if (slot.retire) {
          slots.delete(slot);
          void slot.terminate('decoder retired after vocabulary hints');
        } else if (slot.state === 'busy' && !closed) slot.state = 'idle';
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
      opts.logger?.info(`${opts.engine} engine ready (${opts.maxDecoders} decoder(s) max)`);
    },
    ready(): boolean {
      return started && !closed;
    },
    async open(req: StreamRequest): Promise<RecognitionStream> {
      if (closed) throw new ScribedError('ENGINE_FAILED', 'engine closed');
      if (!Number.isInteger(req.inputRate) || req.inputRate <= 0) {
        throw new ScribedError('VALIDATION_FAILED', `inputRate must be a positive integer (got ${req.inputRate})`);
      }
      let slot: Slot | undefined;
      for (const s of slots) {
        if (s.state === 'idle' && s.profile === req.profile) {
          slot = s;
          break;
        }
      }
      if (slot === undefined) {
        if (slots.size >= opts.maxDecoders) {
          // Full: recycle an idle decoder of the other profile, if any.
          const other = [...slots].find((s) => s.state === 'idle');
          if (other === undefined) throw new ScribedError('ENGINE_BUSY');
          slots.delete(other);
          void other.terminate('recycled for another profile');
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
        opened = await slot.call<OpenReply>({ type: 'open', inputRate: req.inputRate, vad: req.vad ?? null, vocabularyHints: hints });
      } catch (err) {
        await slot.terminate('open failed');
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
      const all = [...slots];
      slots.clear();
      await Promise.all(all.map((s) => s.terminate('engine closed')));
    },
  };
}
