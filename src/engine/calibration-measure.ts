// Measuring a capacity calibration (src/engine/calibration.ts), in two phases.
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
// of the two phases: a plan never exceeds the load it was measured at. And when the load phase
// itself fell behind real time (the host's cores are busy with other work, or slower than
// their count suggests), the cost is raised to what the host actually carried
// (lateLoadCost, src/core/capacity-plan.ts): CPU time alone would not show it.
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { decodeMulaw } from '../core/audio/encodings.js';
import { costFromMeasurement, lateLoadCost, plannedCost } from '../core/capacity-plan.js';
import {
  CALIBRATION_CLIP,
  CALIBRATION_LOAD_CLIPS,
  CALIBRATION_VERSION,
  clipFile,
  type Calibration,
  type CalibrationKey,
  type CalibrationSettings,
  type LoadMeasurement,
} from './calibration-record.js';
import { planFor } from './node-resources.js';
import { createEngine } from './pool.js';
import type { RecognitionStream } from './types.js';

export const CALIBRATION_WARMUP_S = 0.4;
export const CALIBRATION_AUDIO_S = 3;
/** The load phase: the seconds of audio each stream plays. */
export const CALIBRATION_LOAD_AUDIO_S = 4;
const CLIP_RATE = 8000;
const FRAME_MS = 20;

function calibrationEngine(cfg: CalibrationSettings, maxDecoders: number, log?: Pick<Logger, 'warn' | 'info'>) {
  return createEngine({
    engine: cfg.engine,
    maxDecoders,
    ...(cfg.modelDir ? { modelDir: cfg.modelDir } : {}),
    assetsDir: cfg.assetsDir,
    ...(log ? { logger: { warn: (m: string) => log.warn(m), info: () => undefined } } : {}),
  });
}

/** Both phases (see the top): one stream alone, then as many as that plans at once. */
export async function measureCalibration(
  cfg: CalibrationSettings,
  keyed: { key: CalibrationKey; hash: string },
  log?: Pick<Logger, 'warn' | 'info'>,
): Promise<Calibration> {
  const single = await measureOneStream(cfg, log);
  const singleCost = Math.round(single.cost * 10_000) / 10_000;
  const firstPlan = planFor({ costPerAudioSecond: singleCost, memoryPerDecoderBytes: single.memoryPerDecoderBytes });
  const streams = firstPlan.streams;
  const load = streams > 1 ? await measureUnderLoad(cfg, streams, log) : null;
  // A load phase that fell behind real time says the host gives less CPU than its cores suggest.
  const late = load
    ? lateLoadCost(
        { streams: load.streams, wallMs: load.wallMs, audioMsPerStream: (load.audioSeconds / load.streams) * 1000 },
        firstPlan.cores,
      )
    : null;
  if (late !== null)
    log?.info(
      `capacity: ${load!.streams} calibration streams fell ${Math.round(load!.wallMs - (load!.audioSeconds / load!.streams) * 1000)} ms behind real time: planning from what the host carried`,
    );
  return {
    version: CALIBRATION_VERSION,
    keyHash: keyed.hash,
    key: keyed.key,
    measuredAt: new Date().toISOString(),
    costPerAudioSecond: Math.round(plannedCost(singleCost, load?.costPerAudioSecond ?? null, late) * 10_000) / 10_000,
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
async function measureOneStream(cfg: CalibrationSettings, log?: Pick<Logger, 'warn' | 'info'>) {
  const all = decodeMulaw(fs.readFileSync(clipFile()));
  const warmup = Math.round(CALIBRATION_WARMUP_S * CLIP_RATE);
  const measured = Math.round(CALIBRATION_AUDIO_S * CLIP_RATE);
  if (all.length < warmup + measured)
    throw new Error(`calibration clip ${clipFile()} is shorter than ${CALIBRATION_WARMUP_S + CALIBRATION_AUDIO_S} s`);
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
async function measureUnderLoad(cfg: CalibrationSettings, streams: number, log?: Pick<Logger, 'warn' | 'info'>): Promise<LoadMeasurement> {
  const clips = CALIBRATION_LOAD_CLIPS.map((name) => decodeMulaw(fs.readFileSync(clipFile(name))));
  const perStream = Math.round(CALIBRATION_LOAD_AUDIO_S * CLIP_RATE);
  const frame = (FRAME_MS * CLIP_RATE) / 1000;
  const batchMs = cfg.decodeBatchMs > 0 ? cfg.decodeBatchMs : FRAME_MS;
  const engine = calibrationEngine(cfg, streams, log);
  try {
    const open = () =>
      engine.open({ inputRate: CLIP_RATE, profile: 'telephony', ...(cfg.decodeBatchMs > 0 ? { decodeBatchMs: cfg.decodeBatchMs } : {}) });
    // Warm each decoder on the start of its first clip, not counted (as phase one).
    const warmup = Math.round(CALIBRATION_WARMUP_S * CLIP_RATE);
    const warm = async (s: RecognitionStream, i: number) => (
      await s.accept(clips[i % clips.length]!.subarray(0, warmup)),
      await s.finish()
    );
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
