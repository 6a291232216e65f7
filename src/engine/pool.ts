// Decoder pool: a few recognition worker threads (one per core by default), each hosting
// several decoders and decoding their work round-robin (src/engine/worker.ts), so native
// decoding never blocks the event loop and a node pays one thread's memory per core, not per
// call. Released decoders stay warm (model loaded) and are reused by the next stream of the
// same profile; a new decoder goes to the least-loaded thread. A thread that dies fails the
// streams of the decoders on it, and is replaced lazily.
//
// Here: the checkout (which decoder, on which thread, serves an open()) and the pool's
// bounds. The thread and decoder wrappers: src/engine/decoder-thread.ts; the stream a
// checked-out decoder serves: src/engine/decoder-stream.ts, with batched decoding in
// src/engine/batching.ts.
import os from 'node:os';
import { ScribedError, toScribedError } from '../core/errors.js';
import { decodeBacklogSeconds, type DecodeBacklog } from './batching.js';
import { DecoderThread, Slot } from './decoder-thread.js';
import { decoderStream, type StreamContext } from './decoder-stream.js';
import { decoderThreadsSetting } from './environment.js';
import { missingKeyphraseWords } from './keyphrase.js';
import type {
  AudioProfile,
  BackendConfig,
  Engine,
  EngineCapacity,
  EngineInfo,
  EngineKind,
  Keyphrase,
  RecognitionStream,
  StreamRequest,
} from './types.js';
import type { InitReply, OpenReply } from './worker.js';

export { MAX_DECODE_BACKLOG_MS } from './batching.js';
export { kStall, kWorker } from './decoder-stream.js';

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

/** The number of decoder threads: the option, SCRIBED_DECODER_THREADS, or the usable cores. */
export function decoderThreads(option?: number): number {
  const env = decoderThreadsSetting();
  const n = option ?? (env !== undefined && env !== '' ? Number(env) : os.availableParallelism());
  if (!Number.isInteger(n) || n < 1) {
    throw new RangeError(`decoder threads must be a positive integer (got ${option ?? env})`);
  }
  return n;
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
  const backlogTotal: DecodeBacklog = new Map();

  const backendConfig = (profile: AudioProfile, keyphrases?: readonly Keyphrase[]): BackendConfig => ({
    engine: opts.engine,
    profile,
    ...(keyphrases && keyphrases.length > 0 ? { keyphrases } : {}),
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
  async function spawn(profile: AudioProfile, inputRate: number, keyphrases?: readonly Keyphrase[]): Promise<Slot> {
    const slot = new Slot(leastLoadedThread(), profile);
    slot.onDeath = (s) => slots.delete(s);
    slots.add(slot);
    try {
      const r = await slot.load<InitReply>({ type: 'init', backend: backendConfig(profile, keyphrases), inputRate });
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

  const streamContext: StreamContext = { backlogTotal, closed: () => closed, logger: opts.logger };

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
      const spotting = req.keyphrases !== undefined && req.keyphrases.length > 0;
      // A warm decoder of this profile, on the thread with the fewest streams (a keyphrase
      // search is always a decoder of its own: its list is made with it).
      let slot: Slot | undefined;
      for (const s of spotting ? [] : slots) {
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
        slot = await spawn(req.profile, req.inputRate, req.keyphrases);
        // A keyphrase search serves its own list only: it leaves the pool with its stream.
        if (spotting) slot.retire = true;
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
      return decoderStream(slot, req, opened, streamContext);
    },
    // Phrase spotting is pocketsphinx's keyphrase search (keyphrase.ts).
    ...(opts.engine === 'pocketsphinx'
      ? { missingKeyphraseWords: (phrases: readonly string[]) => missingKeyphraseWords(backendConfig('telephony'), phrases) }
      : {}),
    decodeBacklogSeconds(): number {
      return decodeBacklogSeconds(backlogTotal);
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
