import { describe, expect, it } from 'vitest';
import { backoffDelay } from '../../src/client/backoff.js';

describe('backoffDelay', () => {
  const policy = { baseMs: 100, maxMs: 1000 };
  it('doubles per attempt between half and the whole step, capped', () => {
    expect(backoffDelay(0, policy, () => 0)).toBe(50);
    expect(backoffDelay(0, policy, () => 1)).toBe(100);
    expect(backoffDelay(3, policy, () => 0)).toBe(400);
    expect(backoffDelay(3, policy, () => 1)).toBe(800);
    expect(backoffDelay(10, policy, () => 1)).toBe(1000);
    expect(backoffDelay(1000, policy, () => 0.5)).toBe(750);
  });
  it('spreads clients with different random draws', () => {
    const delays = new Set([0.1, 0.4, 0.7, 0.9].map((r) => backoffDelay(4, policy, () => r)));
    expect(delays.size).toBe(4);
  });
  it('rejects a negative attempt', () => {
    expect(() => backoffDelay(-1, policy)).toThrow(RangeError);
  });
});
