// Admission by capacity: a service started without --max-decoders measures what a
// real-time telephony stream costs on this machine (the real engine decoding real speech),
// caches it in its data dir, sizes its decoder pool from it and says so on /readyz and
// /metrics; an operator's --max-decoders wins, without a measurement.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CPU_TARGET, lateLoadCost, plannedCost } from '../../src/core/capacity-plan.js';
import { CALIBRATION_FILE, readNodeResources, type Calibration, type CapacityReport } from '../../src/engine/calibration.js';
import { startService, tempDir, type TestService } from '../helpers/service.js';

const running: TestService[] = [];
afterAll(async () => {
  await Promise.all(running.map((s) => s.stop()));
});

async function start(dataDir: string, maxDecoders: number | undefined): Promise<TestService> {
  // startService defaults maxDecoders to 2: an explicit undefined leaves it unset, as a
  // `scribed serve` without the flag.
  const svc = await startService({ dataDir, maxDecoders });
  running.push(svc);
  return svc;
}

async function stop(svc: TestService): Promise<void> {
  running.splice(running.indexOf(svc), 1);
  await svc.stop();
}

async function readyz(svc: TestService): Promise<{ capacity: { decoders: number }; realtimeCapacity: CapacityReport; checks: object }> {
  const res = await fetch(`${svc.baseUrl}/readyz`);
  expect(res.status).toBe(200);
  return (await res.json()) as never;
}

async function metric(svc: TestService, name: string): Promise<number | null> {
  const text = await (await fetch(`${svc.baseUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? null : Number(line.slice(name.length + 1));
}

function cached(dataDir: string): Calibration {
  return JSON.parse(fs.readFileSync(path.join(dataDir, CALIBRATION_FILE), 'utf8')) as Calibration;
}

describe('capacity-sized decoder pool', () => {
  const dataDir = tempDir('scribed-capacity-');

  it('without --max-decoders: calibrates on the real engine, caches, derives maxDecoders and reports it', async () => {
    expect(process.env.SCRIBED_MAX_DECODERS ?? '').toBe('');
    const svc = await start(dataDir, undefined);
    const c = cached(dataDir);
    // A real measurement. One stream alone: 3 s of the mu-law clip through the telephony decoder.
    expect(c.clip).toBe('librivox-0870.ulaw');
    expect(c.audioSeconds).toBe(3);
    expect(c.key.engine).toBe('pocketsphinx');
    expect(c.key.decoderArgs?.['-featparams']).toMatch(/telephony/);
    expect(c.singleCostPerAudioSecond).toBeGreaterThan(0.02);
    expect(c.singleCostPerAudioSecond).toBeLessThan(3);
    expect(c.singleCostPerAudioSecond * 1000 * c.audioSeconds).toBeCloseTo(Math.min(c.workerCpuMs, c.processCpuMs), -1);
    // Then the streams that cost plans, live at once (this machine's cores plan more than one
    // at the engine's cost here): 4 s each at real time, so not much faster than real time.
    const cores = readNodeResources().cores;
    const singlePlan = Math.floor((cores * CPU_TARGET) / c.singleCostPerAudioSecond + 1e-9);
    if (singlePlan >= 2) {
      expect(c.load).not.toBeNull();
      const load = c.load!;
      expect(load.streams).toBeGreaterThanOrEqual(2);
      expect(load.streams).toBeLessThanOrEqual(singlePlan);
      expect(load.audioSeconds).toBe(load.streams * 4);
      expect(load.wallMs).toBeGreaterThan(3900);
      expect(load.costPerAudioSecond * load.audioSeconds * 1000).toBeCloseTo(load.processCpuMs, -1);
      // The larger of the two, or, when the load phase fell behind real time (a busy host),
      // what the host carried (lateLoadCost).
      const late = lateLoadCost({ streams: load.streams, wallMs: load.wallMs, audioMsPerStream: 4000 }, cores);
      expect(c.costPerAudioSecond).toBe(
        Math.round(plannedCost(c.singleCostPerAudioSecond, load.costPerAudioSecond, late) * 10_000) / 10_000,
      );
      // A further decoder's memory: its own search and acoustic model, less than the first's,
      // which also loaded the shared language model and dictionary and started a thread.
      expect(load.furtherDecoderBytes).toBeGreaterThan(4 * 2 ** 20);
      expect(load.furtherDecoderBytes).toBeLessThan(c.memoryPerDecoderBytes!);
    } else {
      expect(c.load).toBeNull();
      expect(c.costPerAudioSecond).toBe(c.singleCostPerAudioSecond);
    }

    const ready = await readyz(svc);
    expect(ready.checks).toEqual({ store: true, engine: true });
    const report = ready.realtimeCapacity;
    expect(report.from).toBe('plan');
    expect(report.calibration?.source).toBe('measured');
    expect(report.calibration?.measuredAt).toBe(c.measuredAt);
    const plan = report.plan!;
    expect(plan.cores).toBe(cores);
    expect(plan.costPerAudioSecond).toBe(c.costPerAudioSecond);
    expect(plan.cpuStreams).toBe(Math.floor((cores * CPU_TARGET) / c.costPerAudioSecond + 1e-9));
    expect(plan.streams).toBe(Math.max(1, Math.min(plan.cpuStreams, plan.memoryStreams ?? Infinity, 64)));
    // The pool is sized by it.
    expect(report.maxDecoders).toBe(plan.streams);
    expect(svc.service.config.maxDecoders).toBe(plan.streams);
    expect(ready.capacity.decoders).toBe(plan.streams);

    expect(await metric(svc, `scribed_capacity_streams{limit="${plan.limit}"}`)).toBe(plan.streams);
    expect(await metric(svc, 'scribed_engine_max_decoders')).toBe(plan.streams);
    expect(await metric(svc, 'scribed_recognizer_cost_ratio{profile="telephony"}')).toBe(c.costPerAudioSecond);
    expect(plan.memoryPerFurtherDecoderBytes).toBe(c.load?.furtherDecoderBytes ?? null);
    expect(await metric(svc, 'scribed_decoder_memory_bytes{profile="telephony"}')).toBe(
      c.load?.furtherDecoderBytes ?? c.memoryPerDecoderBytes,
    );
    expect(await metric(svc, 'scribed_capacity_cores')).toBe(cores);
    expect(await metric(svc, 'scribed_capacity_limit_streams{resource="cpu"}')).toBe(plan.cpuStreams);
    await stop(svc);
  }, 60_000);

  it('a restart reads the cached measurement instead of measuring again', async () => {
    const before = cached(dataDir);
    const svc = await start(dataDir, undefined);
    const report = (await readyz(svc)).realtimeCapacity;
    expect(report.from).toBe('plan');
    expect(report.calibration).toMatchObject({ source: 'cached', measuredAt: before.measuredAt });
    expect(cached(dataDir)).toEqual(before);
    expect(svc.service.config.maxDecoders).toBe(report.plan!.streams);
    await stop(svc);
  }, 60_000);

  it('an explicit maxDecoders wins, and the cached capacity is reported beside it', async () => {
    const svc = await start(dataDir, 1);
    const ready = await readyz(svc);
    expect(svc.service.config.maxDecoders).toBe(1);
    expect(ready.capacity.decoders).toBe(1);
    expect(ready.realtimeCapacity).toMatchObject({ maxDecoders: 1, from: 'operator', calibration: { source: 'cached' } });
    expect(ready.realtimeCapacity.plan?.costPerAudioSecond).toBe(cached(dataDir).costPerAudioSecond);
    expect(await metric(svc, 'scribed_engine_max_decoders')).toBe(1);
    const plan = ready.realtimeCapacity.plan!;
    expect(await metric(svc, `scribed_capacity_streams{limit="${plan.limit}"}`)).toBe(plan.streams);
    await stop(svc);
  }, 60_000);

  it('an explicit maxDecoders on a node never calibrated measures nothing', async () => {
    const fresh = tempDir('scribed-capacity-');
    const svc = await start(fresh, 3);
    const ready = await readyz(svc);
    expect(ready.capacity.decoders).toBe(3);
    expect(ready.realtimeCapacity).toEqual({ maxDecoders: 3, from: 'operator', plan: null, calibration: null });
    expect(fs.existsSync(path.join(fresh, CALIBRATION_FILE))).toBe(false);
    const text = await (await fetch(`${svc.baseUrl}/metrics`)).text();
    expect(text).not.toMatch(/^scribed_capacity_streams\{/m);
    expect(text).not.toMatch(/^scribed_recognizer_cost_ratio\{/m);
    expect(await metric(svc, 'scribed_engine_max_decoders')).toBe(3);
    expect(await metric(svc, 'scribed_capacity_cores')).toBe(readNodeResources().cores);
    await stop(svc);
  });
});
