// The capacity adapter without a decoder: the cache key and when a cached measurement is
// stale, what it reads from cgroups and /proc/meminfo, the operator's --max-decoders, and the
// documented fallback when nothing can be measured. (The measurement on the real engine:
// test/server/capacity.test.ts.)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FALLBACK_MAX_DECODERS, loadConfig } from '../../src/config.js';
import {
  CALIBRATION_FILE,
  calibrationKey,
  readCachedCalibration,
  readNodeResources,
  resolveCapacity,
  type Calibration,
} from '../../src/engine/calibration.js';

const tmp = (): string => fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-calibration-'));
const ASSETS = path.resolve('models/telephony');
const cfg = { engine: 'pocketsphinx' as const, modelDir: undefined, assetsDir: ASSETS, decodeBatchMs: 200 };

function logs() {
  const lines: Array<{ level: string; msg: string }> = [];
  const at = (level: string) => (a: unknown, b?: string) => lines.push({ level, msg: typeof a === 'string' ? a : (b ?? '') });
  return { lines, log: { info: at('info'), warn: at('warn'), debug: at('debug') } as never };
}

async function writeCache(dir: string, over: Partial<Calibration> = {}): Promise<Calibration> {
  const { key, hash } = await calibrationKey(cfg);
  const c: Calibration = {
    version: 2,
    keyHash: hash,
    key,
    measuredAt: new Date().toISOString(),
    costPerAudioSecond: 0.25,
    singleCostPerAudioSecond: 0.18,
    workerCpuMs: 540,
    processCpuMs: 550,
    audioSeconds: 3,
    clip: 'librivox-0870.ulaw',
    load: { streams: 8, costPerAudioSecond: 0.25, processCpuMs: 8000, audioSeconds: 32, wallMs: 4100 },
    memoryPerDecoderBytes: 150 * 2 ** 20,
    ...over,
  };
  fs.writeFileSync(path.join(dir, CALIBRATION_FILE), JSON.stringify(c));
  return c;
}

describe('the calibration cache', () => {
  it('is keyed by the decoder options, the model files, the CPU and the cores', async () => {
    const { key, files } = await calibrationKey(cfg);
    expect(key.decoderArgs).toMatchObject({ '-maxhmmpf': expect.any(String), '-featparams': path.join(ASSETS, 'feat.params') });
    expect(key.cores).toBe(os.availableParallelism());
    expect(key.cpuModel).toBe(os.cpus()[0]!.model.trim());
    expect(files).toEqual(expect.arrayContaining([key.decoderArgs!['-lm'], key.decoderArgs!['-dict'], path.join(ASSETS, 'feat.params')]));
    expect(files.some((f) => f.endsWith('scribed_pocketsphinx.node'))).toBe(true);
    expect(files.some((f) => f.endsWith(path.join('samples', 'librivox-0870.ulaw')))).toBe(true);
    // Another batch size or model is another key.
    expect((await calibrationKey({ ...cfg, decodeBatchMs: 100 })).hash).not.toBe((await calibrationKey(cfg)).hash);
  });

  it('is used while it is newer than every file behind its key, and measured again otherwise', async () => {
    const dir = tmp();
    const { hash, files } = await calibrationKey(cfg);
    expect(readCachedCalibration(dir, hash, files)).toBeNull();
    const fresh = await writeCache(dir);
    expect(readCachedCalibration(dir, hash, files)).toEqual(fresh);
    // Older than the model files (or the addon, the engine code, the clip): stale.
    await writeCache(dir, { measuredAt: new Date(0).toISOString() });
    expect(readCachedCalibration(dir, hash, files)).toBeNull();
    // A file behind the key changed after the measurement.
    const touched = path.join(dir, 'feat.params');
    fs.writeFileSync(touched, 'x');
    await writeCache(dir, { measuredAt: new Date(Date.now() - 60_000).toISOString() });
    expect(readCachedCalibration(dir, hash, [...files, touched])).toBeNull();
    // A version 1 cache (one stream alone, no load phase), another key, a broken file: not used.
    await writeCache(dir, { version: 1 });
    expect(readCachedCalibration(dir, hash, files)).toBeNull();
    await writeCache(dir, { keyHash: 'other' });
    expect(readCachedCalibration(dir, hash, files)).toBeNull();
    fs.writeFileSync(path.join(dir, CALIBRATION_FILE), '{');
    expect(readCachedCalibration(dir, hash, files)).toBeNull();
  });
});

describe('resolveCapacity without a decoder', () => {
  const saved = process.env.SCRIBED_MAX_DECODERS;
  afterEach(() => {
    if (saved === undefined) delete process.env.SCRIBED_MAX_DECODERS;
    else process.env.SCRIBED_MAX_DECODERS = saved;
  });

  it('--max-decoders (or SCRIBED_MAX_DECODERS) counts as set; without either the value is provisional', () => {
    delete process.env.SCRIBED_MAX_DECODERS;
    expect(loadConfig({ dataDir: tmp() })).toMatchObject({ maxDecoders: FALLBACK_MAX_DECODERS, maxDecodersSet: false });
    expect(loadConfig({ dataDir: tmp(), maxDecoders: 3 })).toMatchObject({ maxDecoders: 3, maxDecodersSet: true });
    process.env.SCRIBED_MAX_DECODERS = '5';
    expect(loadConfig({ dataDir: tmp() })).toMatchObject({ maxDecoders: 5, maxDecodersSet: true });
    // A batch allowance above the fallback is checked against the measured capacity at start.
    delete process.env.SCRIBED_MAX_DECODERS;
    expect(loadConfig({ dataDir: tmp(), batchMaxDecoders: 6 }).batchMaxDecoders).toBe(6);
    expect(() => loadConfig({ dataDir: tmp(), maxDecoders: 2, batchMaxDecoders: 3 })).toThrow(/batchMaxDecoders/);
  });

  it("the operator's value applies with the cached plan beside it", async () => {
    const dir = tmp();
    await writeCache(dir, { costPerAudioSecond: 0.2 });
    const { log, lines } = logs();
    const report = await resolveCapacity({ ...cfg, dataDir: dir, maxDecoders: 2, maxDecodersSet: true }, log);
    expect(report).toMatchObject({ maxDecoders: 2, from: 'operator', calibration: { source: 'cached' } });
    expect(report.plan?.cpuStreams).toBe(Math.floor((readNodeResources().cores * 0.8) / 0.2 + 1e-9));
    expect(lines.at(-1)!.msg).toMatch(/^capacity: \d+ real-time stream\(s\) .*; --max-decoders 2 set by the operator applies$/);
  });

  it('a cached measurement sizes the pool without measuring', async () => {
    const dir = tmp();
    await writeCache(dir, { costPerAudioSecond: 0.4, memoryPerDecoderBytes: null });
    const { log, lines } = logs();
    const report = await resolveCapacity({ ...cfg, dataDir: dir, maxDecoders: FALLBACK_MAX_DECODERS, maxDecodersSet: false }, log);
    const cores = readNodeResources().cores;
    expect(report).toMatchObject({
      from: 'plan',
      maxDecoders: Math.max(1, Math.floor((cores * 0.8) / 0.4 + 1e-9)),
      calibration: { source: 'cached' },
    });
    expect(report.plan).toMatchObject({ limit: 'cpu', memoryStreams: null });
    expect(lines.map((l) => l.msg).join('\n')).toMatch(/--max-decoders defaults to \d+$/);
  });

  it('falls back to the documented default, and says so, when nothing can be measured', async () => {
    const { log, lines } = logs();
    const report = await resolveCapacity(
      { ...cfg, modelDir: '/nonexistent/model', dataDir: tmp(), maxDecoders: FALLBACK_MAX_DECODERS, maxDecodersSet: false },
      log,
    );
    expect(report).toEqual({ maxDecoders: FALLBACK_MAX_DECODERS, from: 'fallback', plan: null, calibration: null });
    expect(
      lines
        .filter((l) => l.level === 'warn')
        .map((l) => l.msg)
        .join('\n'),
    ).toMatch(/model file missing[\s\S]*defaults to 4 \(the fallback\)/);
  });
});

describe('readNodeResources', () => {
  it('reads a cgroup v2 quota and memory limit', () => {
    const root = tmp();
    fs.writeFileSync(path.join(root, 'cpu.max'), '50000 100000\n');
    fs.writeFileSync(path.join(root, 'memory.max'), `${2 * 2 ** 30}\n`);
    fs.writeFileSync(path.join(root, 'memory.current'), `${512 * 2 ** 20}\n`);
    const meminfo = path.join(root, 'meminfo');
    fs.writeFileSync(meminfo, `MemTotal: 99999999 kB\nMemAvailable: ${8 * 2 ** 20} kB\n`);
    const self = path.join(root, 'self-cgroup');
    fs.writeFileSync(self, '0::/\n');
    expect(readNodeResources(root, meminfo, self)).toEqual({
      cores: Math.min(0.5, os.availableParallelism()),
      memoryAvailableBytes: 1.5 * 2 ** 30,
    });
  });

  it("cgroup v2: the process's own cgroup (a systemd unit) and its parents, the tightest limit applying", () => {
    const root = tmp();
    const unit = path.join(root, 'system.slice', 'scribed.service');
    fs.mkdirSync(unit, { recursive: true });
    fs.writeFileSync(path.join(root, 'cpu.max'), 'max 100000\n');
    fs.writeFileSync(path.join(root, 'system.slice', 'cpu.max'), '150000 100000\n');
    fs.writeFileSync(path.join(root, 'system.slice', 'memory.max'), `${4 * 2 ** 30}\n`);
    fs.writeFileSync(path.join(root, 'system.slice', 'memory.current'), `${1 * 2 ** 30}\n`);
    fs.writeFileSync(path.join(unit, 'cpu.max'), 'max 100000\n');
    fs.writeFileSync(path.join(unit, 'memory.max'), `${1 * 2 ** 30}\n`);
    fs.writeFileSync(path.join(unit, 'memory.current'), `${256 * 2 ** 20}\n`);
    const self = path.join(root, 'self-cgroup');
    fs.writeFileSync(self, '0::/system.slice/scribed.service\n');
    const meminfo = path.join(root, 'meminfo');
    fs.writeFileSync(meminfo, `MemAvailable: ${16 * 2 ** 20} kB\n`);
    expect(readNodeResources(root, meminfo, self)).toEqual({
      cores: Math.min(1.5, os.availableParallelism()),
      memoryAvailableBytes: 768 * 2 ** 20,
    });
  });

  it('reads cgroup v1, and no limits at all', () => {
    const root = tmp();
    fs.mkdirSync(path.join(root, 'cpu'));
    fs.mkdirSync(path.join(root, 'memory'));
    fs.writeFileSync(path.join(root, 'cpu', 'cpu.cfs_quota_us'), '-1\n');
    fs.writeFileSync(path.join(root, 'cpu', 'cpu.cfs_period_us'), '100000\n');
    fs.writeFileSync(path.join(root, 'memory', 'memory.limit_in_bytes'), '9223372036854771712\n');
    fs.writeFileSync(path.join(root, 'memory', 'memory.usage_in_bytes'), '1000\n');
    const meminfo = path.join(root, 'meminfo');
    fs.writeFileSync(meminfo, 'MemAvailable: 1048576 kB\n');
    const self = path.join(root, 'self-cgroup');
    fs.writeFileSync(self, '4:memory:/x\n0::/\n');
    expect(readNodeResources(root, meminfo, self)).toEqual({ cores: os.availableParallelism(), memoryAvailableBytes: 2 ** 30 });
    expect(readNodeResources(path.join(root, 'none'), meminfo, self).cores).toBe(os.availableParallelism());
  });
});
