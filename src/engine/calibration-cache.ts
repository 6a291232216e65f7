// The cache file of a capacity calibration (src/engine/calibration.ts): it is kept in
// <data-dir>/capacity-calibration.json under a key of what determines it (engine, decoder
// options and model paths, CPU model, cores, Node.js version); a cache whose key differs, or
// older than any file behind the key (model files, the addon, the engine code, the clips), is
// measured again.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CALIBRATION_LOAD_CLIPS,
  CALIBRATION_VERSION,
  clipFile,
  type Calibration,
  type CalibrationKey,
  type CalibrationSettings,
} from './calibration-record.js';
import { addonFile } from './native.js';
import type { EngineKind } from './types.js';

export const CALIBRATION_FILE = 'capacity-calibration.json';

/** The worker, backend and pool code whose changes make a cached cost stale. */
function engineCodeFiles(engine: EngineKind): string[] {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
  const modules = ['worker', 'resampler', `backends/${engine}`, 'pool', 'decoder-thread', 'decoder-stream', 'batching'];
  return modules.map((m) => path.join(here, `${m}${ext}`));
}

function cpuModel(): string {
  return os.cpus()[0]?.model.trim() ?? 'unknown';
}

/** The key, and the files whose modification makes a calibration stale. */
export async function calibrationKey(cfg: CalibrationSettings): Promise<{ key: CalibrationKey; hash: string; files: string[] }> {
  let decoderArgs: Record<string, string> | null = null;
  // The addon's resampler converts every engine's input, so its build is part of every key.
  const files: string[] = [...engineCodeFiles(cfg.engine), ...CALIBRATION_LOAD_CLIPS.map((c) => clipFile(c)), addonFile()];
  if (cfg.engine === 'pocketsphinx') {
    const ps = await import('./backends/pocketsphinx.js');
    decoderArgs = ps.pocketsphinxArgs({
      engine: 'pocketsphinx',
      profile: 'telephony',
      ...(cfg.modelDir ? { modelDir: cfg.modelDir } : {}),
      assetsDir: cfg.assetsDir,
    }).args;
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
  if (cached.version !== CALIBRATION_VERSION || cached.keyHash !== hash || !(cached.costPerAudioSecond > 0)) return null;
  const at = Date.parse(cached.measuredAt);
  if (!Number.isFinite(at) || at < newestMtime(files)) return null;
  return cached;
}

export function writeCalibration(dataDir: string, c: Calibration): void {
  const file = path.join(dataDir, CALIBRATION_FILE);
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(c, null, 2)}\n`);
  fs.renameSync(tmp, file);
}
