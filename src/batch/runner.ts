// Batch jobs: transcribed one after another by the same decoder pool real-time sessions use.
//
// Sharing policy (docs/api.md, "Batch transcription"): at most `maxDecoders` jobs run at
// once (default 1), each holding ONE decoder and only for one segment at a time (at most
// maxSegmentSeconds of audio, a few seconds of CPU). Between segments the decoder goes back
// to the pool, so a socket that attached meanwhile can take it. When every decoder is in use
// a job does not fail: it waits and retries (busyRetryMs). Live sockets are never queued
// behind batch work; they are answered at once as before.
//
// Durability: a job's decoded audio sits in the batch directory until the job ends. Each
// segment is persisted as it is recognized; after a restart, jobs QUEUED or RUNNING are
// taken up again and continue after their last stored segment (the cut plan is a pure
// function of the audio, so it is the same plan).
import fs from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { ScribedError } from '../core/errors.js';
import { wordsOnTimeline } from '../core/word-span.js';
import type { Engine, FinalResult, RecognitionStream } from '../engine/types.js';
import type { Metrics } from '../obs/metrics.js';
import type { BatchJobRecord, Store } from '../store/store.js';
import { shapeFinal } from '../text/final-text.js';
import { frameEnergies, frameSamples, planFromEnergies } from './segmenter.js';

export interface BatchRunnerDeps {
  store: Store;
  engine: Engine;
  metrics: Metrics;
  log: Logger;
  /** Directory holding the decoded audio of pending jobs. */
  dir: string;
  /** Jobs (and so decoders) used by batch work at once. */
  maxDecoders: number;
  maxSegmentSeconds: number;
  busyRetryMs?: number;
  /** Keepalive with the decoder's worker (StreamRequest.heartbeatIntervalMs); default
   * BATCH_HEARTBEAT_MS. */
  heartbeatIntervalMs?: number;
}

/** A batch decoder whose worker has not answered a ping for this long is stuck (a hung
 * native call) and is terminated: its segment fails with ENGINE_FAILED, is retried once on a
 * new decoder, and a job that fails again is marked FAILED and refunded, instead of hanging
 * (and hanging service.stop(), which waits for the running segment). Pings are answered
 * between 50 ms pieces of decoding, but finish() is one synchronous end-of-utterance pass
 * (about 1 s for a 30 s segment, more on a loaded machine): 10 s leaves room for that. */
export const BATCH_HEARTBEAT_MS = 10_000;

/** Samples fed to the decoder per call: 1 s at 16 kHz, 2 s at 8 kHz. */
const CHUNK_SAMPLES = 16_000;
/** Attempts per segment when the decoder's worker dies under it. */
const SEGMENT_ATTEMPTS = 2;

class Stopping extends Error {}

export class BatchRunner {
  private readonly queue: string[] = [];
  private readonly active = new Map<string, Promise<void>>();
  private stopping = false;
  private idleWaiters: Array<() => void> = [];

  constructor(private readonly deps: BatchRunnerDeps) {}

  /** Take up jobs left QUEUED or RUNNING by a previous run, and delete every other file in
   * the batch directory: uploads and decodes a kill -9 interrupted, and the audio of jobs
   * that ended (or were never stored) without it being deleted. Called before the upload
   * route serves, so no request of this run has a file there yet. */
  async start(): Promise<void> {
    await fs.mkdir(this.deps.dir, { recursive: true, mode: 0o700 });
    const pending = await this.deps.store.listBatchJobs(['RUNNING', 'QUEUED']);
    const keep = new Set(pending.map((j) => j.audioFile));
    for (const name of await fs.readdir(this.deps.dir)) {
      if (keep.has(name)) continue;
      await fs.rm(path.join(this.deps.dir, name), { recursive: true, force: true });
      this.deps.log.info({ file: name }, 'batch file left by an earlier run deleted');
    }
    for (const job of pending) {
      this.deps.log.info({ transcriptionId: job.transcriptionId, state: job.state }, 'batch job resumed after restart');
      this.enqueue(job.transcriptionId);
    }
  }

  enqueue(transcriptionId: string): void {
    if (this.stopping || this.queue.includes(transcriptionId) || this.active.has(transcriptionId)) return;
    this.queue.push(transcriptionId);
    this.pump();
  }

  /** Resolves when no job is queued or running (tests and benchmarks). */
  idle(): Promise<void> {
    if (this.queue.length === 0 && this.active.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stop taking segments; running jobs stop after their current segment and resume at the
   * next start. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.queue.length = 0;
    await Promise.allSettled([...this.active.values()]);
  }

  private pump(): void {
    while (!this.stopping && this.active.size < this.deps.maxDecoders && this.queue.length > 0) {
      const id = this.queue.shift()!;
      const p = this.runJob(id)
        .catch((err) => this.deps.log.error({ err, transcriptionId: id }, 'batch job crashed'))
        .finally(() => {
          this.active.delete(id);
          this.pump();
          if (this.queue.length === 0 && this.active.size === 0) {
            const waiters = this.idleWaiters;
            this.idleWaiters = [];
            for (const w of waiters) w();
          }
        });
      this.active.set(id, p);
    }
  }

  private async runJob(id: string): Promise<void> {
    const { store, log, metrics } = this.deps;
    const job = await store.getBatchJob(id);
    if (!job || job.state === 'DONE' || job.state === 'FAILED') return;
    const jlog = log.child({ transcriptionId: id });
    const t0 = performance.now();
    const file = path.join(this.deps.dir, job.audioFile);
    let done: { audioSec: number; cpuMs: number; segments: number };
    try {
      await store.setBatchJobState(id, 'RUNNING');
      const row = await store.getTranscription(id, job.accountId);
      if (!row) throw new ScribedError('INTERNAL', `History row ${id} is missing`);
      const audioFile = await openAudio(file, row.sampleRateHz);
      const totalSamples = audioFile.totalSamples;
      const plan = planFromEnergies(audioFile.energies, totalSamples, { rate: row.sampleRateHz, maxSegmentSeconds: this.deps.maxSegmentSeconds });
      const stored = await store.listSegments(id);
      const after = stored.reduce((m, s) => Math.max(m, s.index), -1);
      let cpuMs = 0;
      // The recognizer's channel adaptation, carried from segment to segment as one decoder
      // would across utterances (and across a restart, from the last stored segment).
      let channel = job.channelState;
      for (const seg of plan) {
        if (seg.index <= after || seg.silent) continue;
        if (this.stopping) throw new Stopping();
        const audio = await readRange(file, seg.startSample, seg.endSample);
        const { result, cpu, channelState } = await this.recognize(audio, row.sampleRateHz, channel, jlog);
        cpuMs += cpu;
        channel = channelState ?? channel;
        const base = BigInt(seg.startSample);
        const words = wordsOnTimeline(result.words, base, audio.length);
        const shaped = shapeFinal(result.text, words, job.options);
        await store.appendBatchSegment(
          {
            transcriptionId: id,
            index: seg.index,
            startSample: base,
            endSample: BigInt(seg.endSample),
            text: shaped.text,
            words: job.options.includeAlignment === false ? [] : shaped.words,
            ...(Object.keys(shaped.annotations).length > 0 ? { annotations: { ...shaped.annotations } } : {}),
            createdAt: new Date().toISOString(),
          },
          channelState,
        );
        metrics.segments.inc({ trigger: 'batch' });
      }
      await store.setBatchJobState(id, 'DONE');
      done = { audioSec: totalSamples / row.sampleRateHz, cpuMs, segments: plan.length };
    } catch (err) {
      if (err instanceof Stopping) {
        jlog.info('batch job interrupted by shutdown; resumes at next start');
        return;
      }
      await this.fail(job, err, jlog);
      await removeAudio(file, jlog);
      return;
    }
    // Outside the try: once DONE is stored, nothing here can turn the job into a failure.
    metrics.batchAudioSeconds.inc(done.audioSec);
    metrics.batchJobs.inc({ outcome: 'completed' });
    jlog.info({ audioSec: done.audioSec, wallSec: (performance.now() - t0) / 1000, engineCpuSec: done.cpuMs / 1000, segments: done.segments }, 'batch job done');
    await removeAudio(file, jlog);
  }

  /** One segment through one decoder, retried on a fresh decoder if the worker dies. The
   * decoder starts from `channel` (the state the previous segment left) and the state it
   * ends in is returned (null when the engine keeps none or cannot say). */
  private async recognize(
    audio: Int16Array,
    rate: number,
    channel: number[] | null,
    jlog: Logger,
  ): Promise<{ result: FinalResult; cpu: number; channelState: number[] | null }> {
    for (let attempt = 1; ; attempt++) {
      const stream = await this.openDecoder(rate);
      let cpu = 0;
      try {
        // Every open() starts from the initial state (-cmninit): without this, each segment
        // would adapt to the channel all over again, as real time does not.
        if (channel !== null && !(await stream.setChannelState(channel))) jlog.warn('the decoder keeps no channel state; segment starts from the initial state');
        for (let i = 0; i < audio.length; i += CHUNK_SAMPLES) {
          cpu += (await stream.accept(audio.subarray(i, i + CHUNK_SAMPLES))).cpuMs;
        }
        const result = await stream.finish();
        // Read between utterances, before the decoder goes back to the pool.
        const channelState = await stream.channelState().catch(() => null);
        return { result, cpu, channelState };
      } catch (err) {
        if (!(err instanceof ScribedError && err.code === 'ENGINE_FAILED') || attempt >= SEGMENT_ATTEMPTS) throw err;
        this.deps.log.warn({ err }, 'batch decoder failed; retrying the segment on a new decoder');
      } finally {
        await stream.release().catch(() => undefined);
      }
    }
  }

  /** A decoder, waiting while every decoder is in use. */
  private async openDecoder(rate: number): Promise<RecognitionStream> {
    for (;;) {
      if (this.stopping) throw new Stopping();
      try {
        return await this.deps.engine.open({
          inputRate: rate,
          profile: rate <= 8000 ? 'telephony' : 'wideband',
          heartbeatIntervalMs: this.deps.heartbeatIntervalMs ?? BATCH_HEARTBEAT_MS,
        });
      } catch (err) {
        if (!(err instanceof ScribedError && err.code === 'ENGINE_BUSY')) throw err;
        await new Promise((r) => setTimeout(r, this.deps.busyRetryMs ?? 250));
      }
    }
  }

  /** A job that cannot finish: marked FAILED and its Characters given back, in one store
   * transaction that does nothing to a job already DONE or FAILED (no double refund, and a
   * delivered job is never refunded). */
  private async fail(job: BatchJobRecord, err: unknown, jlog: Logger): Promise<void> {
    const reason = err instanceof ScribedError ? err.message : 'INTERNAL: transcription failed';
    jlog.error({ err }, 'batch job failed');
    if (await this.deps.store.failBatchJob(job.transcriptionId, reason)) this.deps.metrics.batchJobs.inc({ outcome: 'failed' });
    else jlog.warn('batch job had already ended; its state and Characters are left as they were');
  }
}

/** Delete a finished job's audio. A failure is logged, never raised: the job's outcome is
 * already stored, and BatchRunner.start() removes whatever is left at the next start. */
async function removeAudio(file: string, jlog: Logger): Promise<void> {
  try {
    await fs.rm(file, { force: true });
  } catch (err) {
    jlog.warn({ err, file: path.basename(file) }, 'could not delete a finished batch job\'s audio; removed at next start');
  }
}

/** Frames per read while measuring energies: 10 s at 16 kHz, so memory stays flat
 * whatever the file's length. */
const SCAN_FRAMES = 500;

/** Length and frame energies of a raw s16le file, read piece by piece. */
async function openAudio(file: string, rate: number): Promise<{ totalSamples: number; energies: Float64Array }> {
  const frame = frameSamples(rate);
  const fh = await fs.open(file, 'r');
  try {
    const totalSamples = Math.floor((await fh.stat()).size / 2);
    const energies = new Float64Array(Math.ceil(totalSamples / frame));
    const chunk = frame * SCAN_FRAMES;
    for (let s = 0, f = 0; s < totalSamples; s += chunk, f += SCAN_FRAMES) {
      const piece = await readAt(fh, s, Math.min(totalSamples, s + chunk));
      energies.set(frameEnergies(piece, frame), f);
    }
    return { totalSamples, energies };
  } finally {
    await fh.close();
  }
}

/** Samples [start, end) of a raw s16le file. */
async function readRange(file: string, start: number, end: number): Promise<Int16Array> {
  const fh = await fs.open(file, 'r');
  try {
    return await readAt(fh, start, end);
  } finally {
    await fh.close();
  }
}

async function readAt(fh: fs.FileHandle, start: number, end: number): Promise<Int16Array> {
  const out = new Int16Array(Math.max(0, end - start));
  const bytes = new Uint8Array(out.buffer);
  let done = 0;
  while (done < bytes.length) {
    const { bytesRead } = await fh.read(bytes, done, bytes.length - done, start * 2 + done);
    if (bytesRead === 0) throw new ScribedError('INTERNAL', 'decoded audio file is shorter than expected');
    done += bytesRead;
  }
  return out;
}
