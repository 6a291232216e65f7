// Admission by capacity (a node takes no more streams than it recognizes in real time): how many real-time streams a node carries within the
// latency goal, from what was measured on it: the recognizer's CPU cost per audio second, the
// cores it may use, the memory it may still take and the memory a decoder takes. Pure: the
// adapter (src/engine/calibration.ts) reads /sys/fs/cgroup, /proc/meminfo and os, and
// measures the cost by decoding real speech; this file only parses and computes.
//
//   cpu streams    = floor(cores x CPU_TARGET / cost)
//   memory streams = 1 + floor((memory available x MEMORY_TARGET - first) / further)
//                    (0 when the first decoder does not fit)
//   streams        = clamp(min(cpu streams, memory streams), 1, MAX_STREAMS)
//
// `first` is what the first decoder adds (it also loads what the process shares: the language
// model, the dictionary, a worker thread), `further` what each decoder after it adds; without
// a measurement of the further ones, both are the first's (erring high, by about 4x for
// pocketsphinx: docs/engines.md, "Memory per decoder").
//
// CPU_TARGET = 0.8: decoders may keep 80% of the cores busy, not 100%. Live audio is decoded
// in 200 ms batches that arrive independently; a node whose decoders need all of its cores
// queues every batch behind the others (waiting time grows as u / (1 - u) with the
// utilization u: 4 batches at 0.8, 9 at 0.9, unbounded at 1). Partials wait in that queue; a
// commit's final does not (the worker decodes a stream with a final to give first, then waits
// only for the turn in progress and that stream's own last batch), which keeps commit-to-final
// within its 500 ms commit-to-final goal (docs/scaling.md, "Sizing a node") while the queue stays bounded. The cost is measured with
// the streams live at once (src/engine/calibration.ts), so it includes the decoders sharing
// threads and caches; the other 20% is the service's own work per stream (the main thread:
// frames, spool, acks, store: 0.02 CPU s per audio second, docs/benchmarks.md) and the OS.
//
// MEMORY_TARGET = 0.9: a decoder's memory is resident for as long as the pool keeps it warm;
// the last 10% is left to the page cache, the spool, request buffers and the allocator's slack.

/** Share of the cores decoding may use (see above). */
export const CPU_TARGET = 0.8;
/** Share of the memory still available that decoders may take (see above). */
export const MEMORY_TARGET = 0.9;
/** The most decoders a node runs (the bound loadConfig puts on --max-decoders). */
export const MAX_STREAMS = 64;

export type CapacityLimit = 'cpu' | 'memory' | 'bound';

export interface CapacityInputs {
  /** Recognizer CPU seconds per second of real-time audio (one stream), measured. */
  costPerAudioSecond: number;
  /** Cores this process may use (effectiveCores). */
  cores: number;
  /** Bytes of memory the node can still give decoders (before any is started); null: unknown. */
  memoryAvailableBytes: number | null;
  /** Resident bytes the first decoder adds (its worker thread and the process-wide shared
   * models included); null: unknown. */
  memoryPerDecoderBytes: number | null;
  /** Resident bytes each decoder after the first adds; null or absent: unknown (the first's
   * figure is used). */
  memoryPerFurtherDecoderBytes?: number | null;
  cpuTarget?: number;
  memoryTarget?: number;
  maxStreams?: number;
}

export interface CapacityPlan {
  /** Real-time streams this node carries within the latency goal: the default --max-decoders. */
  streams: number;
  /** Which limit binds: cpu, memory, or the MAX_STREAMS bound (or the floor of one stream). */
  limit: CapacityLimit;
  /** Streams each resource allows (memory: null when not known). */
  cpuStreams: number;
  memoryStreams: number | null;
  costPerAudioSecond: number;
  cores: number;
  cpuTarget: number;
  memoryAvailableBytes: number | null;
  memoryPerDecoderBytes: number | null;
  /** null when not measured (the first decoder's figure was used for every decoder). */
  memoryPerFurtherDecoderBytes: number | null;
  memoryTarget: number;
}

/** Rounds down, but not a hair below an integer the arithmetic meant (0.8 * 3 / 0.3). */
function floorish(x: number): number {
  return Math.floor(x + 1e-9);
}

export function planCapacity(input: CapacityInputs): CapacityPlan {
  const cpuTarget = input.cpuTarget ?? CPU_TARGET;
  const memoryTarget = input.memoryTarget ?? MEMORY_TARGET;
  const maxStreams = input.maxStreams ?? MAX_STREAMS;
  if (!(input.costPerAudioSecond > 0 && Number.isFinite(input.costPerAudioSecond))) {
    throw new RangeError(`recognizer cost must be a positive number (got ${input.costPerAudioSecond})`);
  }
  if (!(input.cores > 0 && Number.isFinite(input.cores))) throw new RangeError(`cores must be positive (got ${input.cores})`);
  if (!(cpuTarget > 0 && cpuTarget <= 1) || !(memoryTarget > 0 && memoryTarget <= 1)) throw new RangeError('targets must be in (0, 1]');
  const cpuStreams = floorish((input.cores * cpuTarget) / input.costPerAudioSecond);
  const memoryKnown =
    input.memoryAvailableBytes !== null &&
    input.memoryPerDecoderBytes !== null &&
    input.memoryPerDecoderBytes > 0 &&
    input.memoryAvailableBytes >= 0;
  const further = input.memoryPerFurtherDecoderBytes ?? null;
  const furtherKnown = memoryKnown && further !== null && further > 0 && Number.isFinite(further);
  const memoryStreams = memoryKnown
    ? memoryStreamsFor(
        input.memoryAvailableBytes! * memoryTarget,
        input.memoryPerDecoderBytes!,
        furtherKnown ? further : input.memoryPerDecoderBytes!,
      )
    : null;
  const binding = memoryStreams !== null && memoryStreams < cpuStreams ? memoryStreams : cpuStreams;
  let limit: CapacityLimit = memoryStreams !== null && memoryStreams < cpuStreams ? 'memory' : 'cpu';
  let streams = binding;
  if (streams > maxStreams) {
    streams = maxStreams;
    limit = 'bound';
  }
  // A node that cannot carry one stream in real time still serves one (late): refusing every
  // call would be worse, and the log says so.
  if (streams < 1) streams = 1;
  return {
    streams,
    limit,
    cpuStreams,
    memoryStreams,
    costPerAudioSecond: input.costPerAudioSecond,
    cores: input.cores,
    cpuTarget,
    memoryAvailableBytes: memoryKnown ? input.memoryAvailableBytes : null,
    memoryPerDecoderBytes: memoryKnown ? input.memoryPerDecoderBytes : null,
    memoryPerFurtherDecoderBytes: furtherKnown ? further : null,
    memoryTarget,
  };
}

/** Decoders that fit in `budget` bytes: the first, then as many further ones as the rest holds. */
function memoryStreamsFor(budget: number, first: number, further: number): number {
  if (budget < first) return 0;
  return 1 + floorish((budget - first) / further);
}

/** One line for the start-up log. */
export function describePlan(plan: CapacityPlan): string {
  const mib = (b: number) => `${Math.round(b / 2 ** 20)} MiB`;
  const cpu = `cost ${plan.costPerAudioSecond.toFixed(3)} CPU s/audio s on ${+plan.cores.toFixed(2)} core(s) at ${Math.round(plan.cpuTarget * 100)}%: ${plan.cpuStreams}`;
  const perDecoder =
    plan.memoryPerFurtherDecoderBytes === null
      ? `${mib(plan.memoryPerDecoderBytes!)} per decoder`
      : `${mib(plan.memoryPerDecoderBytes!)} for the first decoder, ${mib(plan.memoryPerFurtherDecoderBytes)} per further decoder`;
  const mem =
    plan.memoryStreams === null
      ? 'memory unknown'
      : `${mib(plan.memoryAvailableBytes!)} available at ${Math.round(plan.memoryTarget * 100)}% / ${perDecoder}: ${plan.memoryStreams}`;
  const bound = plan.limit === 'bound' ? `, bounded at ${plan.streams}` : '';
  const late = plan.cpuStreams < 1 ? '; this node cannot carry one stream in real time' : '';
  return `capacity: ${plan.streams} real-time stream(s) (${plan.limit}-bound${bound}; cpu ${cpu}; memory ${mem}${late})`;
}

// ---------------------------------------------------------------------------------------
// Parsers of what the adapter reads.

/** cgroup v2 `cpu.max` ("<quota> <period>" or "max <period>"): the quota in cores, or null
 * when unlimited or unreadable. */
export function parseCgroupCpuMax(text: string): number | null {
  const [quota, period] = text.trim().split(/\s+/);
  if (quota === undefined || quota === 'max') return null;
  return quotaCores(Number(quota), Number(period ?? 100_000));
}

/** cgroup v1 `cpu.cfs_quota_us` and `cpu.cfs_period_us`: cores, or null (-1: unlimited). */
export function parseCgroupV1Quota(quotaText: string, periodText: string): number | null {
  return quotaCores(Number(quotaText.trim()), Number(periodText.trim()));
}

function quotaCores(quota: number, period: number): number | null {
  if (!Number.isFinite(quota) || !Number.isFinite(period) || quota <= 0 || period <= 0) return null;
  return quota / period;
}

/** cgroup `memory.max` (v2) or `memory.limit_in_bytes` (v1): bytes, or null when unlimited
 * ("max", or v1's page-rounded 2^63). */
export function parseCgroupMemoryLimit(text: string): number | null {
  const t = text.trim();
  if (t === '' || t === 'max') return null;
  const n = Number(t);
  if (!Number.isFinite(n) || n <= 0 || n >= 2 ** 60) return null;
  return n;
}

/** MemAvailable from /proc/meminfo, in bytes; null when absent. */
export function parseMemAvailable(meminfo: string): number | null {
  const m = /^MemAvailable:\s+(\d+)\s*kB/m.exec(meminfo);
  return m ? Number(m[1]) * 1024 : null;
}

/** Cores the process may use: what the scheduler lets it run on (os.availableParallelism),
 * cut by a CPU quota when the cgroup sets one. */
export function effectiveCores(parallelism: number, quotaCores: number | null): number {
  const p = Math.max(1, parallelism);
  return quotaCores !== null && quotaCores > 0 ? Math.min(p, quotaCores) : p;
}

/** Memory the node can still give decoders: the host's MemAvailable, cut by what the cgroup
 * limit leaves (limit - usage); null when neither is known. */
export function availableMemory(memAvailable: number | null, cgroupLimit: number | null, cgroupUsage: number | null): number | null {
  const cgroupLeft = cgroupLimit !== null ? Math.max(0, cgroupLimit - (cgroupUsage ?? 0)) : null;
  if (memAvailable === null) return cgroupLeft;
  if (cgroupLeft === null) return memAvailable;
  return Math.min(memAvailable, cgroupLeft);
}

/** The cost a plan is made from: the larger of one stream alone and `underLoad` (the streams
 * that cost planned, live at once; null when not measured). Under load a stream costs more
 * (shared threads and caches); where it measures less, the plan stays at the load measured. */
export function plannedCost(single: number, underLoad: number | null, late: number | null = null): number {
  return Math.max(single, underLoad ?? 0, late ?? 0);
}

/** How late the load phase may finish (its paced audio plus the last finals) before it counts
 * as having fallen behind: a second, as "seconds behind" is what a caller notices. */
export const LOAD_LATE_MS = 1000;

/**
 * The cost the load phase implies when the host could not keep its streams in real time: the
 * process's CPU clock counts only the time it ran, so on a host whose cores other work takes
 * (a busy neighbour, a CPU quota shared with other services, a slower core than the count
 * suggests) the measured cost plans more streams than the host carries. Streams that took
 * `wallMs` to play `audioMsPerStream` each were carried at `streams x audio / wall` real-time
 * streams with the cores saturated; the cost that plans exactly that many at full use,
 * `cores x wall / (streams x audio)`, then plans CPU_TARGET of it like any other cost. Null
 * when the phase finished within LOAD_LATE_MS of real time (its CPU cost is then the truth).
 */
export function lateLoadCost(load: { streams: number; wallMs: number; audioMsPerStream: number }, cores: number): number | null {
  if (!(load.streams > 0) || !(load.audioMsPerStream > 0) || !(cores > 0)) return null;
  if (load.wallMs <= load.audioMsPerStream + LOAD_LATE_MS) return null;
  return (cores * load.wallMs) / (load.streams * load.audioMsPerStream);
}

/** Recognizer cost from a calibration's figures: CPU seconds per audio second. */
export function costFromMeasurement(cpuMs: number, audioSamples: number, sampleRate: number): number {
  if (!(audioSamples > 0) || !(sampleRate > 0)) throw new RangeError('no audio measured');
  if (!(cpuMs > 0)) throw new RangeError('no CPU time measured');
  return cpuMs / 1000 / (audioSamples / sampleRate);
}
