// Admission by capacity (issue 13), the adapter: measures what one real-time stream costs on
// this node by decoding real speech on the real engine, reads the cores and memory the node
// may use, and lets src/core/capacity-plan.ts say how many streams it carries. The default
// --max-decoders is that number; an operator's --max-decoders (SCRIBED_MAX_DECODERS) wins and
// skips the measurement (docs/scaling.md, "Sizing a node").
//
// The measurement has two phases.
//
// One stream alone: a telephony decoder (call centers are the main load) decodes 3 s of the
// repo's mu-law speech (samples/librivox-0870.ulaw) in batches of the live batch size, after
// 0.4 s not counted (a fresh decoder's first batches run on cold caches; pooled decoders stay
// warm). Each accept reports its decoder time (AcceptResult.cpuMs: wall time of the
// synchronous native calls on the worker thread, its CPU time when the core is not shared);
// the process's own CPU clock over the same span bounds it when other work shares the cores,
// and the smaller of the two is the cost. About 0.6 s of CPU to decode, plus the decoder's
// start (1.2-1.4 s on the 2-core machine). The memory a decoder takes is the process's RSS
// growth from before the calibration engine to the decoder having decoded: it includes the
// worker thread and the process-wide shared language model, so it errs high for the second
// and later decoders (docs/engines.md, "Memory per decoder").
//
// Then as many streams at once as that cost plans, live: each plays the repo's five clips
// from its own first one in 20 ms frames at real time (staggered, as independent calls'
// batches are), a commit (finish) after each clip, for CALIBRATION_LOAD_AUDIO_S, through the
// pool's worker threads as the service runs them. The process's CPU over that span, per audio
// second, is what a stream costs when the node is as full as the plan would make it: the
// decoders share the threads and their caches, wake once per batch, and end utterances. On
// the 2-core machine it read 0.27-0.32 CPU s per audio second at 7-8 streams, against
// 0.19-0.22 for one stream alone in the same runs: planning 5 streams, not 7-8, and 5 kept
// the latency goal (docs/benchmarks.md, "finals first"). The cost planned from is the larger
// of the two phases: a plan never exceeds the load it was measured at.
//
// The result is cached in <data-dir>/capacity-calibration.json under a key of what determines
// it (engine, decoder options and model paths, CPU model, cores, Node.js version); a cache
// whose key differs, or older than any file behind the key (model files, the addon, the
// engine code, the clips), is measured again.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { FALLBACK_MAX_DECODERS, packageRoot, type ServiceConfig } from '../config.js';
import { decodeMulaw } from '../core/audio/encodings.js';
import {
  availableMemory,
  costFromMeasurement,
  describePlan,
  effectiveCores,
  MAX_STREAMS,
  parseCgroupCpuMax,
  parseCgroupMemoryLimit,
  parseCgroupV1Quota,
  parseMemAvailable,
  planCapacity,
  plannedCost,
  type CapacityPlan,
} from '../core/capacity-plan.js';
import { createEngine } from './pool.js';
import { addonFile } from './native.js';
import type { EngineKind, RecognitionStream } from './types.js';
import type { Metrics } from '../obs/metrics.js';

export const CALIBRATION_FILE = 'capacity-calibration.json';
export { FALLBACK_MAX_DECODERS };
/** The clip: continuous read speech, 7.1 s; the first CALIBRATION_WARMUP_S + CALIBRATION_AUDIO_S are decoded. */
export const CALIBRATION_CLIP = 'librivox-0870.ulaw';
export const CALIBRATION_WARMUP_S = 0.4;
export const CALIBRATION_AUDIO_S = 3;
/** The load phase: the clips each stream plays in turn (from its own first one), and the
 * seconds of audio each stream plays. */
export const CALIBRATION_LOAD_CLIPS = ['librivox-0870.ulaw', 'librivox-0880.ulaw', 'librivox-0890.ulaw', 'librivox-0920.ulaw', 'librivox-0930.ulaw'];
export const CALIBRATION_LOAD_AUDIO_S = 4;
const CLIP_RATE = 8000;
const FRAME_MS = 20;
const VERSION = 2;

export interface CalibrationKey {
  engine: EngineKind;
  /** pocketsphinx: the telephony decoder's options (model paths and search flags). */
  decoderArgs: Record<string, string> | null;
  modelDir: string | null;
  assetsDir: string;
  batchMs: number;
  cpuModel: string;
  cores: number;
  arch: string;
  node: string;
}

export interface Calibration {
  version: number;
  keyHash: string;
  key: CalibrationKey;
  measuredAt: string;
  /** CPU seconds per audio second of one 8 kHz mu-law telephony stream, planned from: the
   * larger of the two phases (one stream alone, and `load`). */
  costPerAudioSecond: number;
  /** Phase one, one stream alone: its cost, and the two clocks behind it (decoder time
   * reported by the worker, and process CPU), over `audioSeconds` of `clip`. */
  singleCostPerAudioSecond: number;
  workerCpuMs: number;
  processCpuMs: number;
  audioSeconds: number;
  clip: string;
  /** Phase two: `streams` live streams at once (as many as phase one plans); null when phase
   * one plans a single stream. */
  load: LoadMeasurement | null;
  /** RSS growth of the calibration decoder (worker thread and shared model included); null
   * when the measurement was not plausible. */
  memoryPerDecoderBytes: number | null;
}

/** What a calibration plans from (planFor). */
export type CalibrationFigures = Pick<Calibration, 'costPerAudioSecond' | 'memoryPerDecoderBytes'> & { load?: Pick<LoadMeasurement, 'furtherDecoderBytes'> | null };

export interface LoadMeasurement {
  streams: number;
  costPerAudioSecond: number;
  /** Process CPU over the paced span, and the audio all streams played in it. */
  processCpuMs: number;
  audioSeconds: number;
  /** Wall time of the paced span (audio per stream is CALIBRATION_LOAD_AUDIO_S: longer means
   * the node fell behind real time). */
  wallMs: number;
  /** RSS growth per decoder beyond the first: from the first stream opened and warm to all of
   * them (the shared models counted once; the second worker thread is in it, so it errs a
   * little high). Null when not plausible; absent in caches written before it was measured. */
  furtherDecoderBytes?: number | null;
}

/** How --max-decoders was decided, and the capacity behind it (GET /readyz, metrics, log). */
export interface CapacityReport {
  maxDecoders: number;
  /** plan: the measured capacity; operator: --max-decoders / SCRIBED_MAX_DECODERS; fallback:
   * the measurement failed and FALLBACK_MAX_DECODERS applies. */
  from: 'plan' | 'operator' | 'fallback';
  /** null: no calibration (the operator set --max-decoders and none is cached, or it failed). */
  plan: CapacityPlan | null;
  /** measured at this start, or read from the cache. */
  calibration: { source: 'measured' | 'cached'; measuredAt: string } | null;
}

/** The worker and backend code whose changes make a cached cost stale. */
function engineCodeFiles(engine: EngineKind): string[] {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
  return [path.join(here, `worker${ext}`), path.join(here, `resampler${ext}`), path.join(here, 'backends', `${engine}${ext}`), path.join(here, `pool${ext}`)];
}

function clipFile(name = CALIBRATION_CLIP): string {
  return path.join(packageRoot(), 'samples', name);
}

function cpuModel(): string {
  return os.cpus()[0]?.model.trim() ?? 'unknown';
}

/** The key, and the files whose modification makes a calibration stale. */
export async function calibrationKey(cfg: Pick<ServiceConfig, 'engine' | 'modelDir' | 'assetsDir' | 'decodeBatchMs'>): Promise<{ key: CalibrationKey; hash: string; files: string[] }> {
  let decoderArgs: Record<string, string> | null = null;
  // The addon's resampler converts every engine's input, so its build is part of every key.
  const files: string[] = [...engineCodeFiles(cfg.engine), ...CALIBRATION_LOAD_CLIPS.map((c) => clipFile(c)), addonFile()];
  if (cfg.engine === 'pocketsphinx') {
    const ps = await import('./backends/pocketsphinx.js');
    decoderArgs = ps.pocketsphinxArgs({ engine: 'pocketsphinx', profile: 'telephony', ...(cfg.modelDir ? { modelDir: cfg.modelDir } : {}), assetsDir: cfg.assetsDir }).args;
    for (const f of ['-hmm', '-lm', '-dict', '-featparams']) {
      const p = decoderArgs[f];
      if (p === undefined) continue;
      files.push(p);
      if (f === '-hmm') for (const name of safeList(p)) files.push(path.join(p, name));
    }
  } else if (cfg.modelDir) {
    for (const name of safeList(cfg.modelDir)) files.push(path.join(cfg.modelDir, name));
  }
  const key: CalibrationKey = {
    engine: cfg.engine,
    decoderArgs,
    modelDir: cfg.modelDir ?? null,
    assetsDir: cfg.assetsDir,
    batchMs: cfg.decodeBatchMs,
    cpuModel: cpuModel(),
    cores: os.availableParallelism(),
    arch: process.arch,
    node: process.version,
  };
  const hash = crypto.createHash('sha256').update(JSON.stringify(key)).digest('hex');
  return { key, hash, files };
}

function safeList(dir: string): string[] {
  try {
    return fs.readdirSync(dir).sort();
  } catch {
    return [];
  }
}

/** Newest modification time of the files (ms); missing files count as now (stale). */
function newestMtime(files: string[]): number {
  let newest = 0;
  for (const f of files) {
    try {
      newest = Math.max(newest, fs.statSync(f).mtimeMs);
    } catch {
      newest = Math.max(newest, Date.now());
    }
  }
  return newest;
}

/** The cached calibration for this key, or null when absent, for another key, or older than
 * a file behind the key. */
export function readCachedCalibration(dataDir: string, hash: string, files: string[]): Calibration | null {
  let cached: Calibration;
  try {
    cached = JSON.parse(fs.readFileSync(path.join(dataDir, CALIBRATION_FILE), 'utf8')) as Calibration;
  } catch {
    return null;
  }
  if (cached.version !== VERSION || cached.keyHash !== hash || !(cached.costPerAudioSecond > 0)) return null;
  const at = Date.parse(cached.measuredAt);
  if (!Number.isFinite(at) || at < newestMtime(files)) return null;
  return cached;
}

function writeCalibration(dataDir: string, c: Calibration): void {
  const file = path.join(dataDir, CALIBRATION_FILE);
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(c, null, 2)}\n`);
  fs.renameSync(tmp, file);
}

type CalibrationConfig = Pick<ServiceConfig, 'engine' | 'modelDir' | 'assetsDir' | 'decodeBatchMs'>;

function calibrationEngine(cfg: CalibrationConfig, maxDecoders: number, log?: Pick<Logger, 'warn' | 'info'>) {
  return createEngine({
    engine: cfg.engine,
    maxDecoders,
    ...(cfg.modelDir ? { modelDir: cfg.modelDir } : {}),
    assetsDir: cfg.assetsDir,
    ...(log ? { logger: { warn: (m: string) => log.warn(m), info: () => undefined } } : {}),
  });
}

/** Both phases (see the top): one stream alone, then as many as that plans at once. */
export async function measureCalibration(cfg: CalibrationConfig, keyed: { key: CalibrationKey; hash: string }, log?: Pick<Logger, 'warn' | 'info'>): Promise<Calibration> {
  const single = await measureOneStream(cfg, log);
  const singleCost = Math.round(single.cost * 10_000) / 10_000;
  const streams = planFor({ costPerAudioSecond: singleCost, memoryPerDecoderBytes: single.memoryPerDecoderBytes }).streams;
  const load = streams > 1 ? await measureUnderLoad(cfg, streams, log) : null;
  return {
    version: VERSION,
    keyHash: keyed.hash,
    key: keyed.key,
    measuredAt: new Date().toISOString(),
    costPerAudioSecond: plannedCost(singleCost, load?.costPerAudioSecond ?? null),
    singleCostPerAudioSecond: singleCost,
    workerCpuMs: Math.round(single.workerCpuMs),
    processCpuMs: Math.round(single.processCpuMs),
    audioSeconds: single.decoded / CLIP_RATE,
    clip: CALIBRATION_CLIP,
    load,
    memoryPerDecoderBytes: single.memoryPerDecoderBytes,
  };
}

/** Phase one: decode the clip on a one-decoder engine of the configured kind and time it. */
async function measureOneStream(cfg: CalibrationConfig, log?: Pick<Logger, 'warn' | 'info'>) {
  const all = decodeMulaw(fs.readFileSync(clipFile()));
  const warmup = Math.round(CALIBRATION_WARMUP_S * CLIP_RATE);
  const measured = Math.round(CALIBRATION_AUDIO_S * CLIP_RATE);
  if (all.length < warmup + measured) throw new Error(`calibration clip ${clipFile()} is shorter than ${CALIBRATION_WARMUP_S + CALIBRATION_AUDIO_S} s`);
  const batch = Math.max(160, Math.round(((cfg.decodeBatchMs > 0 ? cfg.decodeBatchMs : 20) * CLIP_RATE) / 1000));
  const rssBefore = process.memoryUsage.rss();
  const engine = calibrationEngine(cfg, 1, log);
  try {
    // No start(): it would warm a wideband decoder that open() then recycles for this one.
    // Without decodeBatchMs each accept is decoded before it resolves and reports its cost.
    const stream = await engine.open({ inputRate: CLIP_RATE, profile: 'telephony' });
    for (let at = 0; at < warmup; at += batch) await stream.accept(all.subarray(at, Math.min(warmup, at + batch)));
    let workerCpuMs = 0;
    let decoded = 0;
    const cpu0 = process.cpuUsage();
    for (let at = warmup; at < warmup + measured; at += batch) {
      const r = await stream.accept(all.subarray(at, Math.min(warmup + measured, at + batch)));
      workerCpuMs += r.cpuMs;
      decoded += r.decodedSamples;
    }
    const cpu = process.cpuUsage(cpu0);
    const processCpuMs = (cpu.user + cpu.system) / 1000;
    await stream.finish();
    const grown = process.memoryUsage.rss() - rssBefore;
    await stream.release();
    return {
      cost: costFromMeasurement(Math.min(workerCpuMs, processCpuMs), decoded, CLIP_RATE),
      workerCpuMs,
      processCpuMs,
      decoded,
      // Plausible: more than a worker thread alone, less than 4 GiB.
      memoryPerDecoderBytes: grown > 16 * 2 ** 20 && grown < 4 * 2 ** 30 ? grown : null,
    };
  } finally {
    await engine.close();
  }
}

/** Phase two: `streams` live streams at once on an engine of that many decoders (one thread
 * per core, as the service's), paced at real time; the process's CPU per audio second. */
async function measureUnderLoad(cfg: CalibrationConfig, streams: number, log?: Pick<Logger, 'warn' | 'info'>): Promise<LoadMeasurement> {
  const clips = CALIBRATION_LOAD_CLIPS.map((name) => decodeMulaw(fs.readFileSync(clipFile(name))));
  const perStream = Math.round(CALIBRATION_LOAD_AUDIO_S * CLIP_RATE);
  const frame = (FRAME_MS * CLIP_RATE) / 1000;
  const batchMs = cfg.decodeBatchMs > 0 ? cfg.decodeBatchMs : FRAME_MS;
  const engine = calibrationEngine(cfg, streams, log);
  try {
    const open = () => engine.open({ inputRate: CLIP_RATE, profile: 'telephony', ...(cfg.decodeBatchMs > 0 ? { decodeBatchMs: cfg.decodeBatchMs } : {}) });
    // Warm each decoder on the start of its first clip, not counted (as phase one).
    const warmup = Math.round(CALIBRATION_WARMUP_S * CLIP_RATE);
    const warm = async (s: RecognitionStream, i: number) => (await s.accept(clips[i % clips.length]!.subarray(0, warmup)), await s.finish());
    // The first decoder alone, then the others: the growth between is what further decoders
    // take (the memory plan's `further`, src/core/capacity-plan.ts).
    const first = await open();
    await warm(first, 0);
    const rssFirst = process.memoryUsage.rss();
    const opened = [first, ...(await Promise.all(Array.from({ length: streams - 1 }, open)))];
    await Promise.all(opened.slice(1).map((s, i) => warm(s, i + 1)));
    const further = streams > 1 ? (process.memoryUsage.rss() - rssFirst) / (streams - 1) : Number.NaN;
    const cpu0 = process.cpuUsage();
    const start = performance.now();
    await Promise.all(
      opened.map(async (s, i) => {
        // Staggered over one batch: independent calls' batches do not arrive together.
        const offset = (i * batchMs) / streams;
        let played = 0;
        for (let c = i; played < perStream; c++) {
          const clip = clips[c % clips.length]!;
          for (let at = 0; at < clip.length && played < perStream; at += frame, played += frame) {
            const wait = start + offset + (played / frame) * FRAME_MS - performance.now();
            if (wait > 0) await sleep(wait);
            await s.accept(clip.subarray(at, at + frame));
          }
          await s.finish();
        }
      }),
    );
    const wallMs = performance.now() - start;
    const cpu = process.cpuUsage(cpu0);
    const processCpuMs = (cpu.user + cpu.system) / 1000;
    await Promise.all(opened.map((s) => s.release()));
    const cost = costFromMeasurement(processCpuMs, streams * perStream, CLIP_RATE);
    return {
      streams,
      costPerAudioSecond: Math.round(cost * 10_000) / 10_000,
      processCpuMs: Math.round(processCpuMs),
      audioSeconds: (streams * perStream) / CLIP_RATE,
      wallMs: Math.round(wallMs),
      // Plausible: a decoder's own search and acoustic model (several MiB), under 1 GiB; NaN
      // (one stream: no further decoder) is not.
      furtherDecoderBytes: further > 2 ** 20 && further < 2 ** 30 ? Math.round(further) : null,
    };
  } finally {
    await engine.close();
  }
}

/** What the node may use: cores (scheduler and cgroup quota) and memory still available
 * (MemAvailable, cut by the cgroup limit). cgroup v2: the process's own cgroup (from
 * /proc/self/cgroup, e.g. a systemd unit's CPUQuota= and MemoryMax=) and each parent up to the
 * root, the tightest applying; else cgroup v1 at the root of its controllers. */
export function readNodeResources(root = '/sys/fs/cgroup', meminfo = '/proc/meminfo', selfCgroup = '/proc/self/cgroup'): { cores: number; memoryAvailableBytes: number | null } {
  const read = (f: string): string | null => {
    try {
      return fs.readFileSync(path.join(root, f), 'utf8');
    } catch {
      return null;
    }
  };
  let own = '/';
  try {
    own = /^0::(\/.*)$/m.exec(fs.readFileSync(selfCgroup, 'utf8'))?.[1] ?? '/';
  } catch {
    own = '/';
  }
  // The own cgroup, its parents, the root (a namespaced container sees its own as the root).
  const dirs: string[] = [];
  for (let d = path.posix.normalize(own); ; d = path.posix.dirname(d)) {
    dirs.push(d.replace(/^\/+/, ''));
    if (d === '/' || d === '.') break;
  }
  let quota: number | null = null;
  let memoryLeft: number | null = null;
  let v2 = false;
  for (const d of dirs) {
    const cpuMax = read(path.join(d, 'cpu.max'));
    if (cpuMax !== null) {
      v2 = true;
      const q = parseCgroupCpuMax(cpuMax);
      if (q !== null) quota = quota === null ? q : Math.min(quota, q);
    }
    const limitText = read(path.join(d, 'memory.max'));
    if (limitText !== null) {
      v2 = true;
      const limit = parseCgroupMemoryLimit(limitText);
      const usage = Number(read(path.join(d, 'memory.current'))?.trim() ?? 'NaN');
      const left = availableMemory(null, limit, Number.isFinite(usage) ? usage : null);
      if (left !== null) memoryLeft = memoryLeft === null ? left : Math.min(memoryLeft, left);
    }
  }
  if (!v2) {
    const q = read('cpu/cpu.cfs_quota_us');
    const p = read('cpu/cpu.cfs_period_us');
    if (q !== null && p !== null) quota = parseCgroupV1Quota(q, p);
    const limitText = read('memory/memory.limit_in_bytes');
    const usage = Number(read('memory/memory.usage_in_bytes')?.trim() ?? 'NaN');
    memoryLeft = availableMemory(null, limitText !== null ? parseCgroupMemoryLimit(limitText) : null, Number.isFinite(usage) ? usage : null);
  }
  let memAvailable: number | null = null;
  try {
    memAvailable = parseMemAvailable(fs.readFileSync(meminfo, 'utf8'));
  } catch {
    memAvailable = null;
  }
  return {
    cores: effectiveCores(os.availableParallelism(), quota),
    memoryAvailableBytes: availableMemory(memAvailable ?? os.freemem(), memoryLeft, null),
  };
}

export function planFor(c: CalibrationFigures, resources = readNodeResources()): CapacityPlan {
  return planCapacity({
    costPerAudioSecond: c.costPerAudioSecond,
    cores: resources.cores,
    memoryAvailableBytes: resources.memoryAvailableBytes,
    memoryPerDecoderBytes: c.memoryPerDecoderBytes,
    memoryPerFurtherDecoderBytes: c.load?.furtherDecoderBytes ?? null,
    maxStreams: MAX_STREAMS,
  });
}

/** Decide --max-decoders before the engine is created: the operator's value as is (with the
 * capacity of a cached calibration, if any, reported beside it), else the measured capacity
 * (from the cache, or measured now and cached), else the fallback. */
export async function resolveCapacity(
  cfg: Pick<ServiceConfig, 'engine' | 'modelDir' | 'assetsDir' | 'decodeBatchMs' | 'dataDir' | 'maxDecoders' | 'maxDecodersSet'>,
  log: Pick<Logger, 'warn' | 'info'>,
): Promise<CapacityReport> {
  const file = path.join(cfg.dataDir, CALIBRATION_FILE);
  let keyed: Awaited<ReturnType<typeof calibrationKey>> | null = null;
  // The operator's value needs no key unless a calibration is cached to report beside it.
  if (!cfg.maxDecodersSet || fs.existsSync(file)) {
    try {
      keyed = await calibrationKey(cfg);
    } catch (err) {
      if (!cfg.maxDecodersSet) log.warn({ err }, `capacity: cannot key a calibration (${(err as Error).message})`);
    }
  }
  const cached = keyed ? readCachedCalibration(cfg.dataDir, keyed.hash, keyed.files) : null;
  if (cfg.maxDecodersSet) {
    const plan = cached ? planFor(cached) : null;
    const report: CapacityReport = {
      maxDecoders: cfg.maxDecoders,
      from: 'operator',
      plan,
      calibration: cached ? { source: 'cached', measuredAt: cached.measuredAt } : null,
    };
    log.info(
      { capacity: report },
      plan
        ? `${describePlan(plan)}; --max-decoders ${cfg.maxDecoders} set by the operator applies`
        : `capacity: --max-decoders ${cfg.maxDecoders} set by the operator (no calibration cached: capacity not measured)`,
    );
    return report;
  }
  let calibration = cached;
  let source: 'measured' | 'cached' = 'cached';
  if (calibration === null && keyed !== null) {
    try {
      const t0 = performance.now();
      // The first start waits on this (about 10 s on 2 cores): say so before, not only after.
      log.info(`capacity: measuring what a real-time stream costs on this node (one stream, then the streams it plans at once; once, cached in ${file})`);
      calibration = await measureCalibration(cfg, keyed, log);
      source = 'measured';
      log.info(
        { calibration },
        `capacity: calibrated in ${Math.round(performance.now() - t0)} ms: ${calibration.costPerAudioSecond} CPU s per audio second ` +
          `(telephony profile; one stream alone ${calibration.singleCostPerAudioSecond} over ${calibration.audioSeconds} s of ${calibration.clip}` +
          (calibration.load ? `; ${calibration.load.streams} live streams at once ${calibration.load.costPerAudioSecond} over ${calibration.load.audioSeconds} s` : '') +
          ')',
      );
      try {
        writeCalibration(cfg.dataDir, calibration);
      } catch (err) {
        log.warn({ err }, `capacity: could not cache the calibration in ${file}; the next start measures again`);
      }
    } catch (err) {
      log.warn({ err }, `capacity: calibration failed (${(err as Error).message})`);
    }
  }
  if (calibration === null) {
    log.warn(`capacity: not measured; --max-decoders defaults to ${FALLBACK_MAX_DECODERS} (the fallback). Set --max-decoders to size this node.`);
    return { maxDecoders: FALLBACK_MAX_DECODERS, from: 'fallback', plan: null, calibration: null };
  }
  const plan = planFor(calibration);
  log.info({ capacity: plan, calibrationFile: file }, `${describePlan(plan)}; --max-decoders defaults to ${plan.streams}`);
  return { maxDecoders: plan.streams, from: 'plan', plan, calibration: { source, measuredAt: calibration.measuredAt } };
}

/** The capacity gauges (src/obs/metrics.ts): set once at start. */
export function recordCapacityMetrics(metrics: Metrics, report: CapacityReport): void {
  metrics.maxDecoders.set(report.maxDecoders);
  const plan = report.plan;
  metrics.capacityCores.set(plan?.cores ?? readNodeResources().cores);
  if (plan === null) return;
  metrics.capacityStreams.set({ limit: plan.limit }, plan.streams);
  metrics.capacityLimitStreams.set({ resource: 'cpu' }, plan.cpuStreams);
  if (plan.memoryStreams !== null) metrics.capacityLimitStreams.set({ resource: 'memory' }, plan.memoryStreams);
  metrics.recognizerCost.set({ profile: 'telephony' }, plan.costPerAudioSecond);
  const perDecoder = plan.memoryPerFurtherDecoderBytes ?? plan.memoryPerDecoderBytes;
  if (perDecoder !== null) metrics.decoderMemory.set({ profile: 'telephony' }, perDecoder);
}
