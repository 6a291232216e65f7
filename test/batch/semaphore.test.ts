import { describe, expect, it } from 'vitest';
import { Semaphore } from '../../src/batch/semaphore.js';

describe('Semaphore', () => {
  it('runs at most `limit` tasks at once, the others in arrival order, and frees slots on failure', async () => {
    const s = new Semaphore(2);
    let running = 0;
    let peak = 0;
    const order: number[] = [];
    const task = (i: number, fail = false) =>
      s.run(async () => {
        running++;
        peak = Math.max(peak, running);
        order.push(i);
        await new Promise((r) => setTimeout(r, 20));
        running--;
        if (fail) throw new Error(`task ${i}`);
        return i;
      });
    const results = await Promise.allSettled([task(0), task(1, true), task(2), task(3, true), task(4)]);
    expect(peak).toBe(2);
    expect(order).toEqual([0, 1, 2, 3, 4]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'rejected', 'fulfilled']);
    expect(s.active).toBe(0);
    expect(await task(5)).toBe(5);
  });

  it('refuses a limit below one', () => {
    expect(() => new Semaphore(0)).toThrow(RangeError);
  });
});
