import { describe, expect, it } from 'vitest';
import { backoffDelay, DEFAULT_BACKOFF, reconnectDelay } from '../../src/client/backoff.js';

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

describe('reconnectDelay', () => {
  it('retries a lost working socket within firstRetryMs, then takes the backoff steps from the first', () => {
    const policy = { baseMs: 100, maxMs: 1000, firstRetryMs: 40 };
    expect(reconnectDelay(0, policy, () => 0)).toBe(0);
    expect(reconnectDelay(0, policy, () => 1)).toBe(40);
    expect(reconnectDelay(1, policy, () => 0)).toBe(backoffDelay(0, policy, () => 0));
    expect(reconnectDelay(4, policy, () => 1)).toBe(backoffDelay(3, policy, () => 1));
  });
  it('without firstRetryMs is the plain backoff', () => {
    const policy = { baseMs: 100, maxMs: 1000 };
    for (const a of [0, 1, 5]) expect(reconnectDelay(a, policy, () => 0.3)).toBe(backoffDelay(a, policy, () => 0.3));
  });
  it('by default the first retry waits at most 50 ms', () => {
    expect(reconnectDelay(0, DEFAULT_BACKOFF, () => 1)).toBeLessThanOrEqual(50);
    expect(reconnectDelay(1, DEFAULT_BACKOFF, () => 0)).toBe(125);
  });
});
