import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { agentReply, agentWeightPercent } from '../../src/core/agent-check.js';

const node = { decoders: 4, free: 4, canDefer: false, serving: true };

describe('agentWeightPercent', () => {
  it('the share of recognizers free now', () => {
    expect(agentWeightPercent(node)).toBe(100);
    expect(agentWeightPercent({ ...node, free: 2 })).toBe(50);
    expect(agentWeightPercent({ ...node, free: 1 })).toBe(25);
    expect(agentWeightPercent({ decoders: 3, free: 1, canDefer: false, serving: true })).toBe(33);
  });

  it('full: 0 (no new calls), or the least weight when the node defers', () => {
    expect(agentWeightPercent({ ...node, free: 0 })).toBe(0);
    expect(agentWeightPercent({ ...node, free: 0, canDefer: true })).toBe(1);
  });

  it('a node not serving (stopping, store or engine down) gets no calls; one that cannot tell gets its full weight', () => {
    expect(agentWeightPercent({ ...node, serving: false })).toBe(0);
    expect(agentWeightPercent({ ...node, decoders: null, free: 0 })).toBe(100);
  });

  it('never drains a node with a free recognizer, never exceeds 100, grows with free recognizers (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 64 }), fc.integer({ min: -2, max: 70 }), fc.boolean(), (decoders, free, canDefer) => {
        const w = agentWeightPercent({ decoders, free, canDefer, serving: true });
        expect(w).toBeGreaterThanOrEqual(0);
        expect(w).toBeLessThanOrEqual(100);
        if (free > 0) expect(w).toBeGreaterThanOrEqual(1);
        if (free > 0 && free < decoders)
          expect(w).toBeLessThanOrEqual(agentWeightPercent({ decoders, free: free + 1, canDefer, serving: true }));
      }),
    );
  });
});

describe('agentReply', () => {
  it('one line of the agent protocol: a weight only, never a state word, outside a drain', () => {
    expect(agentReply({ ...node, free: 2 })).toBe('50%\n');
    expect(agentReply({ ...node, free: 0 })).toBe('0%\n');
    expect(agentReply({ ...node, free: 0 })).not.toMatch(/drain|ready|maint|up|down/);
  });

  it('a draining node says drain with weight 0, free recognizers or not; the next process says ready once', () => {
    expect(agentReply({ ...node, draining: true })).toBe('0% drain\n');
    expect(agentReply({ ...node, draining: true, readyAgain: true })).toBe('0% drain\n');
    expect(agentReply({ ...node, free: 2, readyAgain: true })).toBe('50% ready\n');
  });
});
