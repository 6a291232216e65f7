// What a capacity calibration is (src/engine/calibration.ts): what it is keyed by, the
// record it leaves in the cache file, and the clips it decodes.
import path from 'node:path';
import { packageRoot } from '../threads/package-root.js';
import type { EngineKind } from './types.js';

/** Format of the cached record: a cache of another version is measured again. */
export const CALIBRATION_VERSION = 2;
/** The clip: continuous read speech, 7.1 s; the first CALIBRATION_WARMUP_S + CALIBRATION_AUDIO_S are decoded. */
export const CALIBRATION_CLIP = 'librivox-0870.ulaw';
/** The load phase: the clips each stream plays in turn (from its own first one). */
export const CALIBRATION_LOAD_CLIPS = [
  'librivox-0870.ulaw',
  'librivox-0880.ulaw',
  'librivox-0890.ulaw',
  'librivox-0920.ulaw',
  'librivox-0930.ulaw',
];

/** The service settings a calibration depends on (a ServiceConfig has them all). */
export interface CalibrationSettings {
  engine: EngineKind;
  modelDir: string | undefined;
  assetsDir: string;
  decodeBatchMs: number;
}

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
export type CalibrationFigures = Pick<Calibration, 'costPerAudioSecond' | 'memoryPerDecoderBytes'> & {
  load?: Pick<LoadMeasurement, 'furtherDecoderBytes'> | null;
};

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

export function clipFile(name = CALIBRATION_CLIP): string {
  return path.join(packageRoot(), 'samples', name);
}
