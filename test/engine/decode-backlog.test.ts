import { describe, expect, it } from 'vitest';
import { decodeBacklogSeconds, type DecodeBacklog } from '../../src/engine/batching.js';

describe('the decode backlog over all streams', () => {
  it('returns to exactly 0 once every batch sent is decoded, whatever the rates and sizes', () => {
    const backlog: DecodeBacklog = new Map();
    const add = (rate: number, samples: number) => backlog.set(rate, (backlog.get(rate) ?? 0) + samples);
    // Batches whose seconds are not exact binary fractions (1/3 s, 0.1 s, 0.2 s): summed as
    // floats and taken away in another order they left 5.55e-17 behind.
    const batches: Array<[number, number]> = [
      [8000, 1600],
      [16000, 5333],
      [8000, 800],
      [44100, 4410],
      [16000, 3200],
    ];
    for (const [rate, n] of batches) add(rate, n);
    expect(decodeBacklogSeconds(backlog)).toBeCloseTo(0.2 + 5333 / 16000 + 0.1 + 0.1 + 0.2, 12);
    for (const [rate, n] of [...batches].reverse()) add(rate, -n);
    expect(decodeBacklogSeconds(backlog)).toBe(0);
  });
});
