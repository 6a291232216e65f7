// Recognition worker thread: owns one native decoder (a DecoderBackend) and one resampler.
// The pool talks to it by messages; each request carries an id and gets exactly one reply.
// Requests are handled strictly one after another, in arrival order.
import { parentPort } from 'node:worker_threads';
import type { ErrorCode } from '../core/errors.js';
import { isErrorCode } from '../core/errors.js';
import { StreamResampler } from './resampler.js';
import type { AcceptResult, BackendConfig, BackendFactory, DecoderBackend, FinalResult, VocabularyResult } from './types.js';
import { SileroDetector, VAD_RATE } from '../vad/silero.js';

export type WorkerRequest =
  | { id: number; type: 'init'; backend: BackendConfig; inputRate: number }
  | { id: number; type: 'open'; inputRate: number; vad?: { threshold: number } | null; vocabularyHints?: string[] }
  | { id: number; type: 'accept'; samples: Int16Array }
  /** Voice activity flags (one per 32 ms window completed) for samples at the input rate. */
  | { id: number; type: 'detect'; samples: Int16Array }
  /** Heartbeat: answered at once when the worker is not stuck. */
  | { id: number; type: 'ping' }
  /** Test hook: block this thread for `ms`, as a hung native call would. */
  | { id: number; type: 'stall'; ms: number }
  | { id: number; type: 'finish' }
  /** The backend's channel state (null when it keeps none); between utterances only. */
  | { id: number; type: 'getChannel' }
  | { id: number; type: 'setChannel'; state: number[] }
  | { id: number; type: 'destroy' };

export interface OpenReply {
  vocabulary: VocabularyResult | null;
}

export interface InitReply {
  engineRate: number;
  notices: string[];
}

export type WorkerReply =
  | { id: number; ok: true; result: unknown }
  | { id: number; ok: false; error: { code: ErrorCode; message: string } };

/** Engine-rate samples decoded between two turns of the event loop (50 ms at 16 kHz): a
 * heartbeat ping waits for at most one such piece. */
const DECODE_PIECE = 800;

let backend: DecoderBackend | null = null;
let resampler: StreamResampler | null = null;
let inputRate = 0;
/** True while an utterance has samples the decoder has not closed yet. */
let uttOpen = false;
/** Input samples fed to the open utterance (the extent a partial covers). */
let uttSamples = 0;
/** Voice activity detector of the current stream (segmentCommitMode "vad"), with its own
 * resampler: the decoder only hears the audio the segmenter keeps, the detector hears all. */
let detector: SileroDetector | null = null;
let vadResampler: StreamResampler | null = null;

async function useRate(rate: number): Promise<void> {
  if (backend === null) throw new Error('worker not initialised');
  if (resampler !== null && resampler.inRate === rate) {
    resampler.reset();
  } else {
    resampler?.destroy();
    resampler = await StreamResampler.create(rate, backend.engineRate);
  }
  inputRate = rate;
}

async function handle(msg: WorkerRequest): Promise<unknown> {
  switch (msg.type) {
    case 'init': {
      if (backend !== null) throw new Error('worker already initialised');
      const mod = (await import(`./backends/${msg.backend.engine}.js`)) as { createBackend: BackendFactory };
      backend = mod.createBackend(msg.backend);
      await useRate(msg.inputRate);
      const notices = (backend as { notices?: readonly string[] }).notices;
      return { engineRate: backend.engineRate, notices: notices ? [...notices] : [] } satisfies InitReply;
    }
    case 'open': {
      const b = need();
      // A warm decoder may hold the previous session's half utterance: drop it.
      if (uttOpen) {
        b.endUtterance();
        uttOpen = false;
      }
      uttSamples = 0;
      (b as { resetStream?: () => void }).resetStream?.();
      await useRate(msg.inputRate);
      await useVad(msg.vad ?? null, msg.inputRate);
      const hints = msg.vocabularyHints ?? [];
      const withVocabulary = b as { setVocabulary?: (h: string[]) => VocabularyResult };
      const vocabulary = hints.length > 0 && withVocabulary.setVocabulary ? withVocabulary.setVocabulary(hints) : null;
      return { vocabulary } satisfies OpenReply;
    }
    case 'detect': {
      if (detector === null || vadResampler === null) throw new Error('no voice activity detector on this stream');
      return detector.push(vadResampler.push(msg.samples));
    }
    case 'ping':
      return null;
    case 'stall': {
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, msg.ms);
      return null;
    }
    case 'accept': {
      const b = need();
      let cpuMs = 0;
      let t0 = performance.now();
      const samples = resampler!.push(msg.samples);
      // Worker threads have no per-thread CPU clock in Node 20; the calls are synchronous and
      // CPU-bound, so their wall time on this thread is the decoder's CPU time. Long input is
      // decoded in pieces with a turn of the event loop between them, so heartbeat pings are
      // answered while a large frame is being decoded (within one piece).
      let partial = '';
      for (let at = 0; at === 0 || at < samples.length; at += DECODE_PIECE) {
        if (at > 0) {
          cpuMs += performance.now() - t0;
          await new Promise((resolve) => setImmediate(resolve));
          t0 = performance.now();
        }
        const last = at + DECODE_PIECE >= samples.length;
        partial = b.process(samples.subarray(at, at + DECODE_PIECE), last);
      }
      uttOpen = true;
      uttSamples += msg.samples.length;
      return { partial, partialSamples: uttSamples, cpuMs: cpuMs + performance.now() - t0, decodedSamples: msg.samples.length } satisfies AcceptResult;
    }
    case 'finish': {
      const b = need();
      const tail = resampler!.flush();
      if (tail.length > 0) b.process(tail);
      const r = b.endUtterance();
      uttOpen = false;
      uttSamples = 0;
      const scale = inputRate / b.engineRate;
      const result: FinalResult = {
        channelState: b.getChannelState?.() ?? null,
        text: r.text,
        words: r.words.map((w) => ({
          word: w.word,
          startSample: Math.round(w.startSample * scale),
          endSample: Math.round(w.endSample * scale),
          confidence: w.confidence,
        })),
      };
      return result;
    }
    case 'getChannel': {
      const b = need();
      if (uttOpen) throw new Error('channel state read inside an utterance');
      return b.getChannelState?.() ?? null;
    }
    case 'setChannel': {
      const b = need();
      if (uttOpen) throw new Error('channel state set inside an utterance');
      return b.setChannelState?.(msg.state) ?? false;
    }
    case 'destroy': {
      backend?.destroy();
      backend = null;
      resampler?.destroy();
      resampler = null;
      return null;
    }
    default:
      throw new Error(`unknown request ${(msg as { type: string }).type}`);
  }
}

async function useVad(vad: { threshold: number } | null, rate: number): Promise<void> {
  if (vad === null) {
    detector?.destroy();
    detector = null;
    vadResampler?.destroy();
    vadResampler = null;
    return;
  }
  if (detector !== null && detector.threshold === vad.threshold) {
    detector.reset();
  } else {
    detector?.destroy();
    detector = new SileroDetector(vad.threshold);
  }
  vadResampler?.destroy();
  vadResampler = await StreamResampler.create(rate, VAD_RATE);
}

function need(): DecoderBackend {
  if (backend === null) throw new Error('worker not initialised');
  return backend;
}

function toWire(err: unknown): { code: ErrorCode; message: string } {
  const code = (err as { code?: unknown } | null)?.code;
  const message = err instanceof Error ? err.message : String(err);
  return { code: isErrorCode(code) ? code : 'ENGINE_FAILED', message };
}

if (parentPort !== null) {
  const port = parentPort;
  let chain: Promise<void> = Promise.resolve();
  port.on('message', (msg: WorkerRequest) => {
    // Heartbeat pings are answered as soon as this thread is free, ahead of queued work: they
    // test that the thread runs, not how much work is waiting.
    if (msg.type === 'ping') {
      port.postMessage({ id: msg.id, ok: true, result: null } satisfies WorkerReply);
      return;
    }
    chain = chain.then(async () => {
      let reply: WorkerReply;
      try {
        reply = { id: msg.id, ok: true, result: await handle(msg) };
      } catch (err) {
        reply = { id: msg.id, ok: false, error: toWire(err) };
      }
      port.postMessage(reply);
    });
  });
}
