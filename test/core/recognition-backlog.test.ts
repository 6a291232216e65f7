import { describe, expect, it } from 'vitest';
import { BacklogBudget, SessionBacklog } from '../../src/core/recognition-backlog.js';

const frame = (at: number, n = 160) => ({ kind: 'audio' as const, at: BigInt(at), samples: new Int16Array(n), arrivedAtMs: 0 });

describe('SessionBacklog', () => {
  it('gives items back in order, in turns of about the asked audio, with the markers among them', () => {
    const b = new SessionBacklog(8000);
    for (let i = 0; i < 10; i++) b.push(frame(i * 160));
    b.push({ kind: 'commit', capturedSamples: '1600' });
    b.push(frame(1600));
    b.push({ kind: 'close' });
    expect(b.seconds).toBeCloseTo(11 * 0.02);
    expect(b.closeRequested).toBe(true);
    const first = b.take(0.1); // 5 frames of 20 ms
    expect(first.map((i) => (i.kind === 'audio' ? Number(i.at) : i.kind))).toEqual([0, 160, 320, 480, 640]);
    const rest = b.take(10);
    expect(rest.map((i) => (i.kind === 'audio' ? Number(i.at) : i.kind))).toEqual([800, 960, 1120, 1280, 1440, 'commit', 1600, 'close']);
    expect(b.empty).toBe(true);
    expect(b.seconds).toBe(0);
  });

  it('clear drops what waits and says how much audio that was', () => {
    const b = new SessionBacklog(16000);
    b.push(frame(0, 320));
    b.push(frame(320, 320));
    b.take(0.001);
    expect(b.clear()).toBeCloseTo(0.02);
    expect(b.empty).toBe(true);
  });
});

describe('BacklogBudget', () => {
  it('0 never defers', () => {
    const budget = new BacklogBudget(0);
    expect(budget.enabled).toBe(false);
    expect(budget.hasRoom()).toBe(false);
    expect(budget.fits(0.02)).toBe(false);
  });

  it('fits up to the bound exactly and counts back to zero without drift', () => {
    const budget = new BacklogBudget(1);
    for (let i = 0; i < 50; i++) {
      expect(budget.fits(320 / 16000)).toBe(true);
      budget.add(320 / 16000);
    }
    expect(budget.seconds).toBe(1);
    expect(budget.fits(320 / 16000)).toBe(false);
    expect(budget.hasRoom()).toBe(false);
    for (let i = 0; i < 50; i++) budget.remove(320 / 16000);
    expect(budget.seconds).toBe(0);
    expect(budget.hasRoom()).toBe(true);
  });
});
