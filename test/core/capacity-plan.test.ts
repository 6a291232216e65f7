// Admission by capacity: streams a node carries from its measured cost, cores and memory.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  CPU_TARGET,
  MAX_STREAMS,
  MEMORY_TARGET,
  availableMemory,
  costFromMeasurement,
  describePlan,
  effectiveCores,
  parseCgroupCpuMax,
  parseCgroupMemoryLimit,
  parseCgroupV1Quota,
  parseMemAvailable,
  planCapacity,
  plannedCost,
  lateLoadCost,
  LOAD_LATE_MS,
} from '../../src/core/capacity-plan.js';

const MiB = 2 ** 20;
const GiB = 2 ** 30;

describe('planCapacity', () => {
  it('is cpu-bound on a 2-core node with plenty of memory: floor(2 x 0.8 / cost)', () => {
    const plan = planCapacity({ costPerAudioSecond: 0.24, cores: 2, memoryAvailableBytes: 20 * GiB, memoryPerDecoderBytes: 150 * MiB });
    expect(plan).toMatchObject({ streams: 6, limit: 'cpu', cpuStreams: 6, cpuTarget: CPU_TARGET, memoryTarget: MEMORY_TARGET });
    expect(plan.memoryStreams).toBe(Math.floor((20 * GiB * 0.9) / (150 * MiB)));
  });

  it('reaches the issue-13 goal of 8 streams on 2 cores at the bare recognizer cost (0.2)', () => {
    expect(planCapacity({ costPerAudioSecond: 0.2, cores: 2, memoryAvailableBytes: null, memoryPerDecoderBytes: null }).streams).toBe(8);
  });

  it('does not lose a stream to floating point when the division is exact', () => {
    // 3 x 0.8 / 0.3 is 7.999999999999999 in doubles.
    expect(planCapacity({ costPerAudioSecond: 0.3, cores: 3, memoryAvailableBytes: null, memoryPerDecoderBytes: null }).cpuStreams).toBe(8);
  });

  it('is memory-bound when the memory holds fewer decoders than the cores can feed', () => {
    const plan = planCapacity({ costPerAudioSecond: 0.1, cores: 8, memoryAvailableBytes: 1 * GiB, memoryPerDecoderBytes: 150 * MiB });
    expect(plan.cpuStreams).toBe(64);
    expect(plan.memoryStreams).toBe(6); // 1024 x 0.9 / 150 = 6.1
    expect(plan).toMatchObject({ streams: 6, limit: 'memory' });
  });

  it('counts the first decoder (shared models, its thread) once and further decoders at their own cost', () => {
    // 1 GiB x 0.9 = 921.6 MiB: the first takes 116, each further one 30: 1 + floor(805.6 / 30).
    const plan = planCapacity({
      costPerAudioSecond: 0.1,
      cores: 8,
      memoryAvailableBytes: 1 * GiB,
      memoryPerDecoderBytes: 116 * MiB,
      memoryPerFurtherDecoderBytes: 30 * MiB,
    });
    expect(plan).toMatchObject({
      streams: 27,
      limit: 'memory',
      memoryStreams: 27,
      memoryPerDecoderBytes: 116 * MiB,
      memoryPerFurtherDecoderBytes: 30 * MiB,
    });
    // Without the further figure every decoder counts as the first, as before: floor(921.6 / 116).
    expect(
      planCapacity({
        costPerAudioSecond: 0.1,
        cores: 8,
        memoryAvailableBytes: 1 * GiB,
        memoryPerDecoderBytes: 116 * MiB,
        memoryPerFurtherDecoderBytes: null,
      }),
    ).toMatchObject({
      memoryStreams: 7,
      memoryPerFurtherDecoderBytes: null,
    });
    // A node the first decoder does not fit still serves one stream, memory-bound.
    expect(
      planCapacity({
        costPerAudioSecond: 0.1,
        cores: 8,
        memoryAvailableBytes: 100 * MiB,
        memoryPerDecoderBytes: 116 * MiB,
        memoryPerFurtherDecoderBytes: 30 * MiB,
      }),
    ).toMatchObject({
      streams: 1,
      memoryStreams: 0,
      limit: 'memory',
    });
    expect(describePlan(plan)).toBe(
      'capacity: 27 real-time stream(s) (memory-bound; cpu cost 0.100 CPU s/audio s on 8 core(s) at 80%: 64; memory 1024 MiB available at 90% / 116 MiB for the first decoder, 30 MiB per further decoder: 27)',
    );
  });

  it('stays cpu-bound when memory is unknown, and reports it as unknown', () => {
    const plan = planCapacity({ costPerAudioSecond: 0.25, cores: 4, memoryAvailableBytes: null, memoryPerDecoderBytes: 100 * MiB });
    expect(plan).toMatchObject({ streams: 12, limit: 'cpu', memoryStreams: null, memoryAvailableBytes: null, memoryPerDecoderBytes: null });
  });

  it('is bounded by MAX_STREAMS (the --max-decoders range)', () => {
    const plan = planCapacity({ costPerAudioSecond: 0.05, cores: 64, memoryAvailableBytes: null, memoryPerDecoderBytes: null });
    expect(plan).toMatchObject({ streams: MAX_STREAMS, limit: 'bound', cpuStreams: 1024 });
  });

  it('serves one stream on a node too slow for real time, and says so', () => {
    const plan = planCapacity({ costPerAudioSecond: 1.5, cores: 1, memoryAvailableBytes: null, memoryPerDecoderBytes: null });
    expect(plan).toMatchObject({ streams: 1, cpuStreams: 0, limit: 'cpu' });
    expect(describePlan(plan)).toMatch(/cannot carry one stream in real time/);
  });

  it('honours other targets', () => {
    expect(
      planCapacity({ costPerAudioSecond: 0.25, cores: 2, memoryAvailableBytes: null, memoryPerDecoderBytes: null, cpuTarget: 1 }).streams,
    ).toBe(8);
    expect(
      planCapacity({ costPerAudioSecond: 0.25, cores: 2, memoryAvailableBytes: null, memoryPerDecoderBytes: null, cpuTarget: 0.5 }).streams,
    ).toBe(4);
  });

  it('refuses nonsense', () => {
    expect(() => planCapacity({ costPerAudioSecond: 0, cores: 2, memoryAvailableBytes: null, memoryPerDecoderBytes: null })).toThrow(
      RangeError,
    );
    expect(() =>
      planCapacity({ costPerAudioSecond: Number.NaN, cores: 2, memoryAvailableBytes: null, memoryPerDecoderBytes: null }),
    ).toThrow(RangeError);
    expect(() => planCapacity({ costPerAudioSecond: 0.2, cores: 0, memoryAvailableBytes: null, memoryPerDecoderBytes: null })).toThrow(
      RangeError,
    );
    expect(() =>
      planCapacity({ costPerAudioSecond: 0.2, cores: 2, memoryAvailableBytes: null, memoryPerDecoderBytes: null, cpuTarget: 1.2 }),
    ).toThrow(RangeError);
  });

  it('never plans more than the cores or the memory carry at their targets, nor less than one stream', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0.01, max: 3, noNaN: true }),
        fc.double({ min: 0.5, max: 128, noNaN: true }),
        fc.option(fc.integer({ min: 0, max: 256 * GiB })),
        fc.integer({ min: 10 * MiB, max: 2 * GiB }),
        (cost, cores, mem, perDecoder) => {
          const plan = planCapacity({ costPerAudioSecond: cost, cores, memoryAvailableBytes: mem, memoryPerDecoderBytes: perDecoder });
          expect(plan.streams).toBeGreaterThanOrEqual(1);
          expect(plan.streams).toBeLessThanOrEqual(MAX_STREAMS);
          if (plan.streams > 1) {
            expect(plan.streams * cost).toBeLessThanOrEqual(cores * CPU_TARGET + 1e-6);
            if (mem !== null) expect(plan.streams * perDecoder).toBeLessThanOrEqual(mem * MEMORY_TARGET + 1);
          }
          // One more stream would break the binding limit (unless the bound binds).
          if (plan.limit === 'cpu') expect((plan.cpuStreams + 1) * cost).toBeGreaterThan(cores * CPU_TARGET - 1e-6);
          if (plan.limit === 'memory') expect(plan.memoryStreams).toBeLessThan(plan.cpuStreams);
        },
      ),
    );
  });

  it('describes the plan in one log line', () => {
    const plan = planCapacity({ costPerAudioSecond: 0.24, cores: 2, memoryAvailableBytes: 20 * GiB, memoryPerDecoderBytes: 150 * MiB });
    expect(describePlan(plan)).toBe(
      'capacity: 6 real-time stream(s) (cpu-bound; cpu cost 0.240 CPU s/audio s on 2 core(s) at 80%: 6; memory 20480 MiB available at 90% / 150 MiB per decoder: 122)',
    );
  });
});

describe('what the adapter reads', () => {
  it('cgroup v2 cpu.max', () => {
    expect(parseCgroupCpuMax('max 100000\n')).toBeNull();
    expect(parseCgroupCpuMax('150000 100000\n')).toBe(1.5);
    expect(parseCgroupCpuMax('200000')).toBe(2);
    expect(parseCgroupCpuMax('')).toBeNull();
    expect(parseCgroupCpuMax('garbage 1')).toBeNull();
  });

  it('cgroup v1 cfs quota', () => {
    expect(parseCgroupV1Quota('-1\n', '100000\n')).toBeNull();
    expect(parseCgroupV1Quota('50000', '100000')).toBe(0.5);
  });

  it('cgroup memory limits (v2 "max", v1 page-rounded 2^63)', () => {
    expect(parseCgroupMemoryLimit('max\n')).toBeNull();
    expect(parseCgroupMemoryLimit('9223372036854771712\n')).toBeNull();
    expect(parseCgroupMemoryLimit('2147483648\n')).toBe(2 * GiB);
    expect(parseCgroupMemoryLimit('')).toBeNull();
  });

  it('MemAvailable', () => {
    expect(parseMemAvailable('MemTotal:       24684212 kB\nMemFree:        22756000 kB\nMemAvailable:   23494820 kB\n')).toBe(
      23494820 * 1024,
    );
    expect(parseMemAvailable('MemTotal: 1 kB\n')).toBeNull();
  });

  it("effective cores: the scheduler's cores cut by a quota", () => {
    expect(effectiveCores(8, null)).toBe(8);
    expect(effectiveCores(8, 2.5)).toBe(2.5);
    expect(effectiveCores(2, 4)).toBe(2);
    expect(effectiveCores(0, null)).toBe(1);
  });

  it("available memory: the host's, cut by what the cgroup leaves", () => {
    expect(availableMemory(20 * GiB, null, null)).toBe(20 * GiB);
    expect(availableMemory(20 * GiB, 2 * GiB, 512 * MiB)).toBe(1.5 * GiB);
    expect(availableMemory(1 * GiB, 4 * GiB, 0)).toBe(1 * GiB);
    expect(availableMemory(null, 2 * GiB, 3 * GiB)).toBe(0);
    expect(availableMemory(null, null, null)).toBeNull();
  });

  it('plans from the larger of one stream alone and the streams it planned, live at once', () => {
    expect(plannedCost(0.18, 0.27)).toBe(0.27);
    expect(plannedCost(0.2, 0.15)).toBe(0.2);
    expect(plannedCost(0.4, null)).toBe(0.4);
  });

  it('a load phase that fell behind real time raises the cost to what the host carried; one on time leaves it', () => {
    // 7 streams of 4 s each on 2 cores: on time (finals within a second) says nothing more
    expect(lateLoadCost({ streams: 7, wallMs: 4000 + LOAD_LATE_MS, audioMsPerStream: 4000 }, 2)).toBeNull();
    // ... but 8 s to play 4 s: the host carried 3.5 streams with its cores busy
    const late = lateLoadCost({ streams: 7, wallMs: 8000, audioMsPerStream: 4000 }, 2)!;
    expect(late).toBeCloseTo((2 * 8000) / (7 * 4000), 10);
    expect(plannedCost(0.2, 0.25, late)).toBe(late);
    const plan = planCapacity({
      costPerAudioSecond: plannedCost(0.2, 0.25, late),
      cores: 2,
      memoryAvailableBytes: null,
      memoryPerDecoderBytes: null,
    });
    // CPU_TARGET of the 3.5 streams it carried, never the 7 its CPU clock planned
    expect(plan.streams).toBe(Math.floor(3.5 * CPU_TARGET));
    expect(plannedCost(0.2, 0.25, null)).toBe(0.25);
  });

  it('cost from a measurement', () => {
    expect(costFromMeasurement(960, 32_000, 8000)).toBeCloseTo(0.24, 10);
    expect(() => costFromMeasurement(0, 32_000, 8000)).toThrow(RangeError);
    expect(() => costFromMeasurement(10, 0, 8000)).toThrow(RangeError);
  });
});
