// Recognition worker thread: hosts several native decoders (DecoderBackends), each with its own
// resampler and state, and decodes their pending work round-robin (one thread per core instead
// of one thread per decoder: docs/engines.md, "Pool and threads").
//
// The pool talks to it by messages; each request carries an id and a decoder number and gets
// exactly one reply. A decoder's requests are handled strictly in arrival order; different
// decoders' requests interleave in turns. A turn is one request, or up to TURN_SAMPLES of an
// `accept` (a long batch is split, so one decoder's backlog cannot starve the others), and the
// thread's event loop runs between turns (new batches and heartbeat pings get in).
//
// Finals first: a decoder with a `finish` queued behind at most FINAL_FIRST_AUDIO_S of audio
// takes its turns ahead of the round until that utterance is final. A caller waits on a final
// (a commit, a call's end); a partial only refreshes what a caller already has. Near a full
// thread, taking turns round-robin made a commit wait about two rounds of every other
// decoder's batches (one before its last batch, one before its finish); finals first, it waits
// for the turn in progress. The others lose nothing but the order: the same turns are decoded,
// and each of their finals goes first too. The bound keeps a decoder with much audio before
// its finish (deferred audio catching up, a batch job's long accept) in the round: it goes
// first only for its last 2 s (0.5-0.6 s of decoding here), so the others' partials never
// stop for longer. A live stream near a full thread has a few batches queued at its commit:
// at 0.5 s, 6 streams on 2 cores kept a commit-to-final p95 of 1.4 s; at 2 s, 275 ms.
import { parentPort } from 'node:worker_threads';
import type { ErrorCode } from '../core/errors.js';
import { isErrorCode } from '../core/errors.js';
import { StreamResampler } from './resampler.js';
import type { AcceptResult, BackendConfig, BackendFactory, DecoderBackend, FinalResult, VocabularyResult } from './types.js';
import { SileroDetector, VAD_RATE } from '../vad/silero.js';

/** What a request asks of one hosted decoder. */
export type DecoderRequest =
  /** Load a decoder under this request's decoder number (the first request of a decoder). */
  | { type: 'init'; backend: BackendConfig; inputRate: number }
  | { type: 'open'; inputRate: number; vad?: { threshold: number } | null; vocabularyHints?: string[] }
  | { type: 'accept'; samples: Int16Array }
  /** Voice activity flags (one per 32 ms window completed) for samples at the input rate. */
  | { type: 'detect'; samples: Int16Array }
  /** Heartbeat: answered by the thread at once, ahead of queued work (the decoder number is
   * not used: it tests the thread). */
  | { type: 'ping' }
  /** The stream was released without its results wanted (its session moved to another node):
   * its `accept`s not begun yet are answered at once as decoding nothing, ahead of queued work
   * like a ping, instead of decoding audio for no one (a backlog may hold a minute of it). */
  | { type: 'drop' }
  /** Test hook: block this thread (every decoder on it) for `ms`, as a hung native call would;
   * queued behind the decoder's earlier requests. */
  | { type: 'stall'; ms: number }
  | { type: 'finish' }
  /** The backend's channel state (null when it keeps none); between utterances only. */
  | { type: 'getChannel' }
  | { type: 'setChannel'; state: number[] }
  /** Free the decoder; its number is unknown to the thread afterwards. */
  | { type: 'destroy' };

type WithIds<T> = T extends unknown ? T & { id: number; decoder: number } : never;
export type WorkerRequest = WithIds<DecoderRequest>;

export interface OpenReply {
  vocabulary: VocabularyResult | null;
}

export interface InitReply {
  engineRate: number;
  notices: string[];
}

export type WorkerReply =
  { id: number; ok: true; result: unknown } | { id: number; ok: false; error: { code: ErrorCode; message: string } };

/** Engine-rate samples one decoder decodes in one turn (250 ms at 16 kHz: a default live batch,
 * SCRIBED_DECODE_BATCH_MS 200, is one turn whatever the resampler's rounding; a turn costs
 * 50-90 ms of CPU here). Longer input is split across turns, so the others' batches and heartbeat
 * pings wait for at most one such piece per decoder with work. */
export const TURN_SAMPLES = 4000;

/** Finals first (see the top): the most audio, in seconds, a decoder may still have to decode
 * before a queued `finish` and go ahead of the round: a live commit's backlog on a busy thread. */
export const FINAL_FIRST_AUDIO_S = 2;

/** One decoder hosted by this thread, with the state of the stream it serves. */
interface Hosted {
  readonly id: number;
  backend: DecoderBackend | null;
  resampler: StreamResampler | null;
  inputRate: number;
  /** True while an utterance has samples the decoder has not closed yet. */
  uttOpen: boolean;
  /** Input samples fed to the open utterance (the extent a partial covers). */
  uttSamples: number;
  /** Voice activity detector of the current stream (segmentCommitMode "vad"), with its own
   * resampler: the decoder only hears the audio the segmenter keeps, the detector hears all. */
  detector: SileroDetector | null;
  vadResampler: StreamResampler | null;
  /** Requests not answered yet, oldest first; the head may be an accept part-decoded. */
  queue: Job[];
}

interface Job {
  msg: WorkerRequest;
  /** accept: the input resampled to the engine rate (on its first turn), how far it is
   * decoded, and the decoder time spent on it so far. */
  samples?: Int16Array;
  at: number;
  cpuMs: number;
}

const hosted = new Map<number, Hosted>();
/** Decoders with queued requests, in turn order. */
const ready: Hosted[] = [];
let pumping = false;

function useRate(h: Hosted, rate: number): void {
  const b = need(h);
  if (h.resampler !== null && h.resampler.inRate === rate) {
    h.resampler.reset();
  } else {
    h.resampler?.destroy();
    h.resampler = new StreamResampler(rate, b.engineRate);
  }
  h.inputRate = rate;
}

async function handle(h: Hosted, msg: WorkerRequest): Promise<unknown> {
  switch (msg.type) {
    case 'init': {
      if (h.backend !== null) throw new Error('decoder already initialised');
      // A keyphrase search (phrase spotting) is a backend of its own: keyphrase.ts.
      const spotting = (msg.backend.keyphrases?.length ?? 0) > 0;
      const mod = (await import(spotting ? './keyphrase.js' : `./backends/${msg.backend.engine}.js`)) as { createBackend: BackendFactory };
      h.backend = mod.createBackend(msg.backend);
      useRate(h, msg.inputRate);
      const notices = (h.backend as { notices?: readonly string[] }).notices;
      return { engineRate: h.backend.engineRate, notices: notices ? [...notices] : [] } satisfies InitReply;
    }
    case 'open': {
      const b = need(h);
      // A warm decoder may hold the previous session's half utterance: drop it.
      if (h.uttOpen) {
        b.endUtterance();
        h.uttOpen = false;
      }
      h.uttSamples = 0;
      (b as { resetStream?: () => void }).resetStream?.();
      useRate(h, msg.inputRate);
      useVad(h, msg.vad ?? null, msg.inputRate);
      const hints = msg.vocabularyHints ?? [];
      const withVocabulary = b as { setVocabulary?: (hints: string[]) => VocabularyResult };
      const vocabulary = hints.length > 0 && withVocabulary.setVocabulary ? withVocabulary.setVocabulary(hints) : null;
      return { vocabulary } satisfies OpenReply;
    }
    case 'detect': {
      if (h.detector === null || h.vadResampler === null) throw new Error('no voice activity detector on this stream');
      return h.detector.push(h.vadResampler.push(msg.samples));
    }
    case 'ping':
      return null;
    case 'stall': {
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, msg.ms);
      return null;
    }
    case 'finish': {
      const b = need(h);
      const tail = h.resampler!.flush();
      if (tail.length > 0) b.process(tail, false);
      const r = b.endUtterance();
      h.uttOpen = false;
      h.uttSamples = 0;
      const scale = h.inputRate / b.engineRate;
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
      const b = need(h);
      if (h.uttOpen) throw new Error('channel state read inside an utterance');
      return b.getChannelState?.() ?? null;
    }
    case 'setChannel': {
      const b = need(h);
      if (h.uttOpen) throw new Error('channel state set inside an utterance');
      return b.setChannelState?.(msg.state) ?? false;
    }
    case 'destroy': {
      destroyHosted(h);
      return null;
    }
    case 'accept':
      throw new Error('accept is decoded in turns');
    default:
      throw new Error(`unknown request ${(msg as { type: string }).type}`);
  }
}

/** One turn of an accept: resample it on its first turn, decode up to TURN_SAMPLES of it.
 * Returns the result once the whole input is decoded, else null (more turns to come). */
function acceptTurn(h: Hosted, job: Job & { msg: { type: 'accept' } }): AcceptResult | null {
  const b = need(h);
  // Worker threads have no per-thread CPU clock in Node 20; the calls are synchronous and
  // CPU-bound, so their wall time on this thread is the decoder's CPU time.
  const t0 = performance.now();
  job.samples ??= h.resampler!.push(job.msg.samples);
  const end = Math.min(job.samples.length, job.at + TURN_SAMPLES);
  const last = end >= job.samples.length;
  // The partial hypothesis (a backtrace) is asked for once per accept, on its last piece.
  const partial = b.process(job.samples.subarray(job.at, end), last);
  job.at = end;
  job.cpuMs += performance.now() - t0;
  if (!last) return null;
  h.uttOpen = true;
  h.uttSamples += job.msg.samples.length;
  return { partial, partialSamples: h.uttSamples, cpuMs: job.cpuMs, decodedSamples: job.msg.samples.length };
}

function useVad(h: Hosted, vad: { threshold: number } | null, rate: number): void {
  if (vad === null) {
    h.detector?.destroy();
    h.detector = null;
    h.vadResampler?.destroy();
    h.vadResampler = null;
    return;
  }
  if (h.detector !== null && h.detector.threshold === vad.threshold) {
    h.detector.reset();
  } else {
    h.detector?.destroy();
    h.detector = new SileroDetector(vad.threshold);
  }
  h.vadResampler?.destroy();
  h.vadResampler = new StreamResampler(rate, VAD_RATE);
}

function destroyHosted(h: Hosted): void {
  h.backend?.destroy();
  h.backend = null;
  h.resampler?.destroy();
  h.resampler = null;
  h.detector?.destroy();
  h.detector = null;
  h.vadResampler?.destroy();
  h.vadResampler = null;
  hosted.delete(h.id);
}

function need(h: Hosted): DecoderBackend {
  if (h.backend === null) throw new Error('decoder not initialised');
  return h.backend;
}

function toWire(err: unknown): { code: ErrorCode; message: string } {
  const code = (err as { code?: unknown } | null)?.code;
  const message = err instanceof Error ? err.message : String(err);
  return { code: isErrorCode(code) ? code : 'ENGINE_FAILED', message };
}

function reply(r: WorkerReply): void {
  parentPort!.postMessage(r);
}

/** Queue a request on its decoder (a new decoder on `init`). */
function receive(msg: WorkerRequest): void {
  // Heartbeat pings are answered as soon as this thread is free, ahead of queued work: they
  // test that the thread runs, not how much work is waiting.
  if (msg.type === 'ping') {
    reply({ id: msg.id, ok: true, result: null });
    return;
  }
  if (msg.type === 'drop') {
    const dropped = hosted.get(msg.decoder);
    reply({ id: msg.id, ok: true, result: dropped ? drop(dropped) : 0 });
    return;
  }
  let h = hosted.get(msg.decoder);
  if (h === undefined) {
    if (msg.type !== 'init') {
      reply({ id: msg.id, ok: false, error: { code: 'ENGINE_FAILED', message: `no decoder ${msg.decoder} on this thread` } });
      return;
    }
    h = {
      id: msg.decoder,
      backend: null,
      resampler: null,
      inputRate: 0,
      uttOpen: false,
      uttSamples: 0,
      detector: null,
      vadResampler: null,
      queue: [],
    };
    hosted.set(h.id, h);
  }
  h.queue.push({ msg, at: 0, cpuMs: 0 });
  if (h.queue.length === 1) ready.push(h);
  schedule();
}

/** Answer the decoder's queued accepts not begun yet as decoding nothing (see `drop`); the
 * rest of its queue keeps its order. One begun is left to finish: at most TURN_SAMPLES of it
 * are left, and its decoder's utterance state stays whole for the next `open`. */
function drop(h: Hosted): number {
  let samples = 0;
  const kept = h.queue.filter((j, i) => {
    if (j.msg.type !== 'accept' || (i === 0 && j.samples !== undefined)) return true;
    samples += j.msg.samples.length;
    reply({ id: j.msg.id, ok: true, result: { partial: '', partialSamples: h.uttSamples, cpuMs: 0, decodedSamples: 0 } });
    return false;
  });
  h.queue.splice(0, h.queue.length, ...kept);
  if (kept.length === 0) {
    const i = ready.indexOf(h);
    if (i !== -1) ready.splice(i, 1);
  }
  return samples;
}

function schedule(): void {
  if (pumping || ready.length === 0) return;
  pumping = true;
  // setImmediate, not a microtask: the event loop polls between turns, so batches posted
  // meanwhile join the round and pings are answered.
  setImmediate(() => void pump());
}

/** True when the decoder's queue holds a `finish` behind at most FINAL_FIRST_AUDIO_S of
 * audio (see the top). Stops counting at the bound: a long backlog is not walked each turn. */
function finalDue(h: Hosted): boolean {
  let seconds = 0;
  for (const j of h.queue) {
    if (j.msg.type === 'finish') return true;
    if (j.msg.type !== 'accept') continue;
    // Started (resampled): what is left of it at the engine's rate; else all of it.
    seconds +=
      j.samples !== undefined && h.backend !== null ? (j.samples.length - j.at) / h.backend.engineRate : j.msg.samples.length / h.inputRate;
    if (seconds > FINAL_FIRST_AUDIO_S) return false;
  }
  return false;
}

/** The decoder whose turn is next: the first in the round with a final due (see the top),
 * else the head of the round. Rounds are a few decoders long, so the scan is cheap. */
function nextTurn(): Hosted {
  const due = ready.findIndex(finalDue);
  return ready.splice(due === -1 ? 0 : due, 1)[0]!;
}

/** One turn of the next decoder (nextTurn), then it goes to the back if it has more. */
async function pump(): Promise<void> {
  // A `drop` may have emptied the round since this turn was scheduled.
  if (ready.length === 0) {
    pumping = false;
    return;
  }
  const h = nextTurn();
  const job = h.queue[0]!;
  let done: WorkerReply | null = null;
  try {
    if (job.msg.type === 'accept') {
      const r = acceptTurn(h, job as Job & { msg: { type: 'accept' } });
      if (r !== null) done = { id: job.msg.id, ok: true, result: r };
    } else {
      done = { id: job.msg.id, ok: true, result: await handle(h, job.msg) };
    }
  } catch (err) {
    done = { id: job.msg.id, ok: false, error: toWire(err) };
    // A decoder that failed to load is not kept: its number may be used again.
    if (job.msg.type === 'init') destroyHosted(h);
  }
  if (done !== null) {
    h.queue.shift();
    reply(done);
  }
  if (h.queue.length > 0) {
    if (hosted.get(h.id) === h) ready.push(h);
    else
      for (const j of h.queue.splice(0))
        reply({ id: j.msg.id, ok: false, error: { code: 'ENGINE_FAILED', message: `decoder ${h.id} destroyed` } });
  }
  pumping = false;
  schedule();
}

if (parentPort !== null) parentPort.on('message', receive);
