// Batch jobs: transcribed one after another by the same decoder pool real-time sessions use.
//
// Sharing policy (docs/api.md, "Batch transcription"): at most `maxDecoders` jobs run at
// once (default 1), each holding ONE decoder and only for one segment at a time (at most
// maxSegmentSeconds of audio, a few seconds of CPU). Between segments the decoder goes back
// to the pool, so a socket that attached meanwhile can take it. When every decoder is in use
// a job does not fail: it waits and retries (busyRetryMs). Live sockets are never queued
// behind batch work; they are answered at once as before.
//
// Durability: a job's decoded audio is kept (BatchAudioStore) until the job ends. Each
// segment is persisted as it is recognized; a job taken up again (after a restart, or by
// another node) continues after its last stored segment with the channel state stored with
// it (the cut plan is a pure function of the audio, so it is the same plan).
//
// Which node runs a job (docs/scaling.md, "Background work"): the runner claims a QUEUED or
// RUNNING job with a lease (store.claimNextJob, areas/job-claims.ts), renews the leases of
// its running jobs every third of the lease, and lets a job go when it ends or the node
// stops. On a shared store (PostgreSQL, many nodes) every node looks for claimable jobs
// every `pollMs` and at once when its own upload route queues one, so a job whose node died
// is taken up by another within about one lease and one poll. Everything that must not be
// repeated is fenced by the claim: a segment (first write wins on its index, and is stored
// only while this node holds the job), DONE, and FAILED with its refund; a node that lost
// the claim (it stalled past its lease) learns so at its next write and leaves the job. On
// the embedded store (one node) the same path runs; start() drops the claims the previous
// process held, so its jobs resume at once.
import { LevelTrackBuilder } from '../core/analytics/levels.js';
import fs from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { ScribedError } from '../core/errors.js';
import { wordsOnTimeline } from '../core/word-span.js';
import type { Engine } from '../engine/types.js';
import type { Metrics } from '../obs/metrics.js';
import type { BatchJobRecord, SegmentRecord, Store } from '../store/store.js';
import { shapeFinal } from '../text/final-text.js';
import { redactFinal } from '../text/redaction/apply.js';
import { redactionPolicies } from '../text/redaction/options.js';
import { FileBatchAudioStore, type BatchAudioStore } from './audio-store.js';
import { decodeSegment, Stopping, type JobHints, type SegmentDecoding } from './segment-decoding.js';
import { frameEnergies, frameSamples, planFromEnergies } from './segmenter.js';

export interface BatchRunnerDeps {
  store: Store;
  engine: Engine;
  metrics: Metrics;
  log: Logger;
  /** The node's batch directory: uploads and decodes in flight (the upload route), and the
   * audio of pending jobs when `audio` is the file store (its default). */
  dir: string;
  /** Where the decoded audio of pending jobs is kept (default: files in `dir`). */
  audio?: BatchAudioStore;
  /** This node's id, as job claims name it (config nodeId; default a random one). */
  node?: string;
  /** True when nodes share the store: poll for claimable jobs. False (one node): no poll,
   * and start() drops the claims of the process that ran before. */
  shared?: boolean;
  /** A claim's lease (config sessionLeaseMs; default 10 s): a job whose node stops renewing
   * is claimable again after it. Renewed every third of it. */
  leaseMs?: number;
  /** How often a node on a shared store looks for claimable jobs (default 1 s). */
  pollMs?: number;
  /** Jobs (and so decoders) used by batch work at once. */
  maxDecoders: number;
  maxSegmentSeconds: number;
  busyRetryMs?: number;
  /** Keepalive with the decoder's worker (StreamRequest.heartbeatIntervalMs); default
   * BATCH_HEARTBEAT_MS. */
  heartbeatIntervalMs?: number;
  now?: () => Date;
  /** recordAudio: keeps a job's audio, masked where its segments were redacted
   * (src/recording/keeper.ts). Absent: nothing is recorded. */
  recordings?: {
    saveBatch(
      transcriptionId: string,
      accountId: string,
      pcm: Int16Array,
      rate: number,
      segments: readonly SegmentRecord[],
    ): Promise<unknown>;
  };
}

/** A batch decoder whose worker has not answered a ping for this long is stuck (a hung
 * native call) and is terminated: its segment fails with ENGINE_FAILED, is retried once on a
 * new decoder, and a job that fails again is marked FAILED and refunded, instead of hanging
 * (and hanging service.stop(), which waits for the running segment). Pings are answered
 * between 50 ms pieces of decoding, but finish() is one synchronous end-of-utterance pass
 * (about 1 s for a 30 s segment, more on a loaded machine): 10 s leaves room for that. */
export const BATCH_HEARTBEAT_MS = 10_000;

export const DEFAULT_BATCH_LEASE_MS = 10_000;
export const DEFAULT_BATCH_POLL_MS = 1_000;

/** On a shared audio store, audio no job names yet may be another node's upload between its
 * write and its job's create: it is left alone until its last write is this old. */
export const LEFTOVER_GRACE_MS = 10 * 60_000;
/** How often a node on a shared store sweeps leftover audio (besides at start). */
const SWEEP_EVERY_MS = 10 * 60_000;

/** The jobs a runner claims: not ended (a RUNNING job nobody holds was left by a node that
 * stopped or died). */
const PENDING = "state IN ('QUEUED', 'RUNNING')";

/** This node no longer holds the job: another node claimed it after this node's lease ran out. */
class LostClaim extends Error {}

interface ActiveJob {
  /** Set when a renewal found the claim gone; the job stops before its next segment. */
  lost: boolean;
}

export class BatchRunner {
  /** Where pending jobs' audio is kept: the upload route writes there. */
  readonly audio: BatchAudioStore;
  readonly node: string;
  private readonly shared: boolean;
  private readonly leaseMs: number;
  private readonly now: () => Date;
  private readonly decoding: SegmentDecoding;
  private readonly active = new Map<string, { job: ActiveJob; done: Promise<void> }>();
  private started = false;
  private stopping = false;
  private pumping: Promise<void> | null = null;
  private pumpAgain = false;
  private readonly retryTimers = new Set<NodeJS.Timeout>();
  private loops: NodeJS.Timeout[] = [];
  private lastSweep = 0;
  private idleWaiters: Array<() => void> = [];

  constructor(private readonly deps: BatchRunnerDeps) {
    this.audio = deps.audio ?? new FileBatchAudioStore(deps.dir);
    this.node = deps.node ?? `batch-${randomBytes(6).toString('hex')}`;
    this.shared = deps.shared ?? false;
    this.leaseMs = deps.leaseMs ?? DEFAULT_BATCH_LEASE_MS;
    this.now = deps.now ?? (() => new Date());
    this.decoding = {
      engine: deps.engine,
      log: deps.log,
      heartbeatIntervalMs: deps.heartbeatIntervalMs ?? BATCH_HEARTBEAT_MS,
      busyRetryMs: deps.busyRetryMs ?? 250,
      stopping: () => this.stopping,
    };
  }

  /** Delete what earlier runs left (see sweep), then take up the jobs nobody holds: on one
   * node, every QUEUED or RUNNING job at once (the claims of the process before are dropped);
   * on a shared store, those whose node released them or whose lease ran out, and then
   * whatever the poll finds. Called before the upload route serves, so no request of this run
   * has a file in the batch directory yet. */
  async start(): Promise<void> {
    const { store, log } = this.deps;
    await fs.mkdir(this.deps.dir, { recursive: true, mode: 0o700 });
    if (!this.shared) {
      const cleared = await store.clearOtherBatchClaims(this.node);
      if (cleared > 0) log.info({ jobs: cleared }, 'batch jobs of the previous run released');
    }
    if (this.audio.kind !== 'file') {
      // The batch directory holds only this node's uploads and decodes in flight (job audio is
      // in the store): whatever is there was left by a run that stopped.
      for (const name of await fs.readdir(this.deps.dir)) {
        await fs.rm(path.join(this.deps.dir, name), { recursive: true, force: true });
        log.info({ file: name }, 'batch file left by an earlier run deleted');
      }
    }
    await this.sweep();
    this.started = true;
    const every = (ms: number, fn: () => Promise<void>) => {
      const t = setInterval(() => void fn().catch((err: unknown) => log.warn({ err }, 'batch runner loop failed')), ms);
      t.unref();
      this.loops.push(t);
    };
    every(Math.max(100, Math.floor(this.leaseMs / 3)), () => this.renew());
    if (this.shared) {
      every(this.deps.pollMs ?? DEFAULT_BATCH_POLL_MS, async () => {
        this.pump();
        if (Date.now() - this.lastSweep >= SWEEP_EVERY_MS) await this.sweep();
      });
    }
    this.pump();
  }

  /** A job was queued on this node: look for work now rather than at the next poll. */
  enqueue(_transcriptionId?: string): void {
    this.pump();
  }

  /** Resolves when this runner runs no job and its last look found none to claim (tests and
   * benchmarks; on one node: every stored job has ended). */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stop taking segments; running jobs stop after their current segment and their claims are
   * released, so another node (or the next start) takes them up at once. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const t of this.loops.splice(0)) clearInterval(t);
    for (const t of this.retryTimers) clearTimeout(t);
    this.retryTimers.clear();
    await this.pumping;
    await Promise.allSettled([...this.active.values()].map((a) => a.done));
    this.wakeIdle();
  }

  private isIdle(): boolean {
    return this.pumping === null && this.active.size === 0;
  }

  private wakeIdle(): void {
    if (!this.isIdle() && !this.stopping) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  /** Claim jobs while decoders for batch work are free. One look at a time; a request made
   * during a look makes it look again. */
  private pump(): void {
    if (this.stopping || !this.started) return;
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = (async () => {
      do {
        this.pumpAgain = false;
        while (!this.stopping && this.active.size < this.deps.maxDecoders) {
          const id = await this.deps.store.claimNextJob('batch_jobs', PENDING, this.node, this.leaseMs, this.now());
          if (id === null) break;
          if (this.stopping) {
            await this.release(id);
            break;
          }
          // Its lease ran out unrenewed and this node claimed it again: it runs here already.
          if (this.active.has(id)) continue;
          this.launch(id);
        }
      } while (this.pumpAgain && !this.stopping);
    })()
      .catch((err: unknown) => {
        this.deps.log.warn({ err }, 'could not look for batch jobs; trying again shortly');
        this.pumpLater(this.deps.pollMs ?? DEFAULT_BATCH_POLL_MS);
      })
      .finally(() => {
        this.pumping = null;
        this.wakeIdle();
      });
  }

  /** Look for jobs again after `ms` (also without the poll, on one node). */
  private pumpLater(ms: number): void {
    if (this.stopping) return;
    const t = setTimeout(() => {
      this.retryTimers.delete(t);
      this.pump();
    }, ms);
    t.unref();
    this.retryTimers.add(t);
  }

  private launch(id: string): void {
    const job: ActiveJob = { lost: false };
    const done = this.runJob(id, job)
      .then(
        async (ended) => {
          // An ended job, or one left for the next start or another node: let it go now. A
          // job that crashed keeps its claim until the lease runs out, so a failure that
          // repeats is retried once a lease, not in a loop.
          if (ended || this.stopping) await this.release(id);
        },
        (err: unknown) => {
          this.deps.log.error({ err, transcriptionId: id }, 'batch job crashed; taken up again when its claim runs out');
          this.pumpLater(this.leaseMs + 100);
        },
      )
      .finally(() => {
        this.active.delete(id);
        this.pump();
        this.wakeIdle();
      });
    this.active.set(id, { job, done });
  }

  private async release(id: string): Promise<void> {
    await this.deps.store.releaseJob({ table: 'batch_jobs', key: id, node: this.node }).catch((err: unknown) => {
      this.deps.log.warn({ err, transcriptionId: id }, 'could not release a batch job claim; it runs out with its lease');
    });
  }

  /** Extend the leases of the running jobs; a job whose claim is gone stops at its next
   * segment. */
  private async renew(): Promise<void> {
    const ids = [...this.active.keys()];
    if (ids.length === 0) return;
    const held = new Set(await this.deps.store.renewJobs('batch_jobs', this.node, ids, this.leaseMs, this.now()));
    for (const id of ids) {
      const a = this.active.get(id);
      if (a && !held.has(id) && !a.job.lost) {
        a.job.lost = true;
        this.deps.log.warn({ transcriptionId: id }, 'batch job claim lost (lease ran out); another node has it');
      }
    }
  }

  /**
   * Delete audio no pending job needs: on one node every name in the batch directory that no
   * QUEUED or RUNNING job names (uploads and decodes a kill -9 interrupted, the audio of jobs
   * that ended without it being deleted); on a shared store the audio of jobs that ended, and
   * audio no job names once it is LEFTOVER_GRACE_MS old (younger, it may be another node's
   * upload about to create its job).
   */
  private async sweep(): Promise<void> {
    const { store, log } = this.deps;
    this.lastSweep = Date.now();
    const listed = await this.audio.list();
    if (listed.length === 0) return;
    const pending = new Set((await store.listBatchJobs(['RUNNING', 'QUEUED'])).map((j) => j.audioFile));
    const grace = this.audio.shared ? LEFTOVER_GRACE_MS : 0;
    const now = this.now().getTime();
    for (const { name, writtenAt } of listed) {
      if (pending.has(name)) continue;
      const id = name.endsWith('.s16le') ? name.slice(0, -'.s16le'.length) : null;
      const job = id === null ? null : await store.getBatchJob(id);
      if (job && job.audioFile === name && (job.state === 'QUEUED' || job.state === 'RUNNING')) continue; // created since
      if (!job && now - writtenAt.getTime() < grace) continue;
      await this.audio.remove(name);
      log.info({ file: name }, 'batch audio left by an earlier run deleted');
    }
  }

  /** Run a claimed job. True when the job has ended (or was found ended); false when it was
   * left to another node or to the next start. */
  private async runJob(id: string, claim: ActiveJob): Promise<boolean> {
    const { store, log, metrics } = this.deps;
    const job = await store.getBatchJob(id);
    if (!job || job.state === 'DONE' || job.state === 'FAILED') return true;
    const jlog = log.child({ transcriptionId: id });
    jlog.info(
      { state: job.state, node: this.node },
      job.state === 'QUEUED' ? 'batch job claimed' : 'batch job taken up again after its last stored segment',
    );
    const t0 = performance.now();
    const name = job.audioFile;
    let done: { audioSec: number; cpuMs: number; segments: number };
    try {
      if (!(await store.setClaimedBatchJobState(id, this.node, 'RUNNING'))) throw new LostClaim();
      const row = await store.getTranscription(id, job.accountId);
      if (!row) throw new ScribedError('INTERNAL', `History row ${id} is missing`);
      const totalSamples = await this.audio.totalSamples(name);
      // The leg's loudness per second, measured as a live leg's is (docs/analytics.md), in the
      // same pass over the audio as the energies the segmenter plans with.
      const levels = new LevelTrackBuilder(row.sampleRateHz);
      const energies = await scanEnergies(this.audio, name, totalSamples, row.sampleRateHz, levels);
      const plan = planFromEnergies(energies, totalSamples, { rate: row.sampleRateHz, maxSegmentSeconds: this.deps.maxSegmentSeconds });
      const stored = await store.listSegments(id);
      const after = stored.reduce((m, s) => Math.max(m, s.index), -1);
      let cpuMs = 0;
      // The recognizer's channel adaptation, carried from segment to segment as one decoder
      // would across utterances (and across a restart or a takeover, from the last stored
      // segment).
      let channel = job.channelState;
      // Validated at upload as a session's are (strings).
      const hints: JobHints = {
        words: Array.isArray(job.options.vocabularyHints) ? (job.options.vocabularyHints as string[]) : [],
        told: false,
      };
      for (const seg of plan) {
        if (seg.index <= after || seg.silent) continue;
        if (this.stopping) throw new Stopping();
        if (claim.lost) throw new LostClaim();
        const audio = await this.audio.read(name, seg.startSample, seg.endSample);
        const { result, cpu, channelState } = await decodeSegment(this.decoding, audio, row.sampleRateHz, channel, hints, jlog);
        cpuMs += cpu;
        channel = channelState ?? channel;
        const base = BigInt(seg.startSample);
        const words = wordsOnTimeline(result.words, base, audio.length);
        // Redaction comes first: every later step (readable text, entities, rawText) sees only
        // tokens where a sensitive value was said.
        const redacted = redactFinal(result.text, words, redactionPolicies(job.options));
        const shaped = shapeFinal(redacted.text, redacted.words, job.options);
        const annotations = { ...shaped.annotations, ...(redacted.redactions.length > 0 ? { redactions: redacted.redactions } : {}) };
        const kept = await store.appendClaimedBatchSegment(
          this.node,
          {
            transcriptionId: id,
            index: seg.index,
            startSample: base,
            endSample: BigInt(seg.endSample),
            text: shaped.text,
            words: job.options.includeAlignment === false ? [] : shaped.words,
            ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
            createdAt: new Date().toISOString(),
          },
          channelState,
        );
        if (!kept) throw new LostClaim();
        metrics.segments.inc({ trigger: 'batch' });
      }
      // recordAudio: the recording is made from the stored segments' redactions, after every
      // segment (a job taken up again makes it again, the same), before the job is DONE and
      // its audio deleted.
      if (job.options.recordAudio === true && this.deps.recordings) {
        const pcm = await this.audio.read(name, 0, totalSamples);
        await this.deps.recordings.saveBatch(id, job.accountId, pcm, row.sampleRateHz, await store.listSegments(id));
      }
      // Stored before DONE: finishing the transcription (or its call) computes its analytics.
      if (!levels.empty) await store.saveLegLevels(id, levels.track());
      if (!(await store.setClaimedBatchJobState(id, this.node, 'DONE'))) throw new LostClaim();
      done = { audioSec: totalSamples / row.sampleRateHz, cpuMs, segments: plan.length };
    } catch (err) {
      if (err instanceof Stopping) {
        jlog.info('batch job interrupted by shutdown; resumes at next start or on another node');
        return false;
      }
      if (err instanceof LostClaim) {
        jlog.warn("batch job is held by another node now (this node's lease ran out); left to it");
        return false;
      }
      // Only the node that failed the job (and refunded it) deletes its audio: a node that
      // lost the claim leaves it to the one that holds it.
      if (await this.fail(job, err, jlog)) await removeAudio(this.audio, name, jlog);
      return true;
    }
    // Outside the try: once DONE is stored, nothing here can turn the job into a failure.
    metrics.batchAudioSeconds.inc(done.audioSec);
    metrics.batchJobs.inc({ outcome: 'completed' });
    jlog.info(
      { audioSec: done.audioSec, wallSec: (performance.now() - t0) / 1000, engineCpuSec: done.cpuMs / 1000, segments: done.segments },
      'batch job done',
    );
    await removeAudio(this.audio, name, jlog);
    return true;
  }

  /** A job that cannot finish: marked FAILED and its Characters given back, in one store
   * transaction that does nothing unless this node holds the job and it is QUEUED or RUNNING
   * (no double refund, a delivered job is never refunded, and a node that lost the job to
   * another cannot fail it). True when it did. */
  private async fail(job: BatchJobRecord, err: unknown, jlog: Logger): Promise<boolean> {
    const reason = err instanceof ScribedError ? err.message : 'INTERNAL: transcription failed';
    jlog.error({ err }, 'batch job failed');
    if (await this.deps.store.failClaimedBatchJob(job.transcriptionId, this.node, reason)) {
      this.deps.metrics.batchJobs.inc({ outcome: 'failed' });
      return true;
    }
    jlog.warn('batch job had already ended or is held by another node; its state and Characters are left as they were');
    return false;
  }
}

/** Delete a finished job's audio. A failure is logged, never raised: the job's outcome is
 * already stored, and the next sweep (BatchRunner.start) removes whatever is left. */
async function removeAudio(audio: BatchAudioStore, name: string, jlog: Logger): Promise<void> {
  try {
    await audio.remove(name);
  } catch (err) {
    jlog.warn({ err, file: name }, "could not delete a finished batch job's audio; removed at the next sweep");
  }
}

/** Frames per read while measuring energies: 10 s at 16 kHz, so memory stays flat
 * whatever the audio's length. */
const SCAN_FRAMES = 500;

/** Frame energies of stored audio, read piece by piece; each piece also goes to `levels`. */
async function scanEnergies(
  audio: BatchAudioStore,
  name: string,
  totalSamples: number,
  rate: number,
  levels: LevelTrackBuilder,
): Promise<Float64Array> {
  const frame = frameSamples(rate);
  const energies = new Float64Array(Math.ceil(totalSamples / frame));
  const chunk = frame * SCAN_FRAMES;
  for (let s = 0, f = 0; s < totalSamples; s += chunk, f += SCAN_FRAMES) {
    const piece = await audio.read(name, s, Math.min(totalSamples, s + chunk));
    energies.set(frameEnergies(piece, frame), f);
    levels.add(BigInt(s), piece);
  }
  return energies;
}
