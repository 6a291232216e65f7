// Admission by capacity (a node takes no more streams than it can recognize in real time), the adapter: measures what one real-time stream costs on
// this node by decoding real speech on the real engine, reads the cores and memory the node
// may use, and lets src/core/capacity-plan.ts say how many streams it carries. The default
// --max-decoders is that number; an operator's --max-decoders (SCRIBED_MAX_DECODERS) wins and
// skips the measurement (docs/scaling.md, "Sizing a node").
//
// Here: deciding --max-decoders at start (resolveCapacity) and the capacity gauges. What a
// calibration is: src/engine/calibration-record.ts; how it is measured (two phases):
// src/engine/calibration-measure.ts; its cache file: src/engine/calibration-cache.ts; the
// node's resources and the plan: src/engine/node-resources.ts.
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { describePlan, type CapacityPlan } from '../core/capacity-plan.js';
import type { Metrics } from '../obs/metrics.js';
import { CALIBRATION_FILE, calibrationKey, readCachedCalibration, writeCalibration } from './calibration-cache.js';
import { measureCalibration } from './calibration-measure.js';
import type { CalibrationSettings } from './calibration-record.js';
import { planFor, readNodeResources } from './node-resources.js';

export { CALIBRATION_FILE, calibrationKey, readCachedCalibration } from './calibration-cache.js';
export { CALIBRATION_AUDIO_S, CALIBRATION_LOAD_AUDIO_S, CALIBRATION_WARMUP_S, measureCalibration } from './calibration-measure.js';
export {
  CALIBRATION_CLIP,
  CALIBRATION_LOAD_CLIPS,
  type Calibration,
  type CalibrationFigures,
  type CalibrationKey,
  type CalibrationSettings,
  type LoadMeasurement,
} from './calibration-record.js';
export { planFor, readNodeResources } from './node-resources.js';

/** What deciding --max-decoders depends on (a ServiceConfig has it all). */
export interface CapacitySettings extends CalibrationSettings {
  dataDir: string;
  /** The operator's value when maxDecodersSet; else the provisional value (the service's
   * FALLBACK_MAX_DECODERS), which applies when nothing can be measured. */
  maxDecoders: number;
  maxDecodersSet: boolean;
}

/** How --max-decoders was decided, and the capacity behind it (GET /readyz, metrics, log). */
export interface CapacityReport {
  maxDecoders: number;
  /** plan: the measured capacity; operator: --max-decoders / SCRIBED_MAX_DECODERS; fallback:
   * the measurement failed and the provisional value (FALLBACK_MAX_DECODERS) applies. */
  from: 'plan' | 'operator' | 'fallback';
  /** null: no calibration (the operator set --max-decoders and none is cached, or it failed). */
  plan: CapacityPlan | null;
  /** measured at this start, or read from the cache. */
  calibration: { source: 'measured' | 'cached'; measuredAt: string } | null;
}

/** Decide --max-decoders before the engine is created: the operator's value as is (with the
 * capacity of a cached calibration, if any, reported beside it), else the measured capacity
 * (from the cache, or measured now and cached), else the fallback. */
export async function resolveCapacity(cfg: CapacitySettings, log: Pick<Logger, 'warn' | 'info' | 'debug'>): Promise<CapacityReport> {
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
      log.info(
        `capacity: measuring what a real-time stream costs on this node (one stream, then the streams it plans at once; once, cached in ${file})`,
      );
      calibration = await measureCalibration(cfg, keyed, log);
      source = 'measured';
      // The whole record is in the cache file; the log says what it means in one short line
      // (the record itself only at debug, so a first start prints no blob).
      log.debug({ calibration }, 'capacity: calibration record');
      log.info(
        `capacity: calibrated in ${Math.round(performance.now() - t0)} ms: ${calibration.costPerAudioSecond} CPU s per audio second ` +
          `(telephony profile; one stream alone ${calibration.singleCostPerAudioSecond} over ${calibration.audioSeconds} s of ${calibration.clip}` +
          (calibration.load
            ? `; ${calibration.load.streams} live streams at once ${calibration.load.costPerAudioSecond} over ${calibration.load.audioSeconds} s`
            : '') +
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
    log.warn(`capacity: not measured; --max-decoders defaults to ${cfg.maxDecoders} (the fallback). Set --max-decoders to size this node.`);
    return { maxDecoders: cfg.maxDecoders, from: 'fallback', plan: null, calibration: null };
  }
  const plan = planFor(calibration);
  log.debug({ capacity: plan, calibrationFile: file }, 'capacity: plan');
  log.info(`${describePlan(plan)}; --max-decoders defaults to ${plan.streams}`);
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
