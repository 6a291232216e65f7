import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { AudioRing } from '../../src/client/ring-buffer.js';

describe('AudioRing', () => {
  it('reads back what was pushed across the wrap point, by session position', () => {
    const ring = new AudioRing(2, 4, 100);
    ring.push(Buffer.from([1, 0, 2, 0, 3, 0]));
    ring.release(102);
    ring.push(Buffer.from([4, 0, 5, 0, 6, 0]));
    expect(ring.start).toBe(102);
    expect(ring.end).toBe(106);
    expect([...ring.read(102, 10).bytes]).toEqual([3, 0, 4, 0, 5, 0, 6, 0]);
    expect(ring.read(104, 1)).toMatchObject({ samples: 1, silence: false });
    expect([...ring.read(104, 1).bytes]).toEqual([5, 0]);
  });

  it('drops the oldest samples on overflow, counts them, and reads the hole back as silence', () => {
    const ring = new AudioRing(1, 4, 0, 0xff);
    expect(ring.push(Buffer.from([1, 2, 3]))).toBe(0);
    expect(ring.push(Buffer.from([4, 5, 6]))).toBe(2);
    expect(ring.start).toBe(2);
    const hole = ring.read(0, 10);
    expect(hole).toMatchObject({ samples: 2, silence: true });
    expect([...hole.bytes]).toEqual([0xff, 0xff]);
    expect([...ring.read(2, 10).bytes]).toEqual([3, 4, 5, 6]);
  });

  it('keeps only the newest capacity samples of an oversized chunk', () => {
    const ring = new AudioRing(1, 3);
    expect(ring.push(Buffer.from([1, 2, 3, 4, 5]))).toBe(2);
    expect([...ring.read(2, 10).bytes]).toEqual([3, 4, 5]);
  });

  it('refuses partial samples', () => {
    expect(() => new AudioRing(2, 4).push(Buffer.from([1]))).toThrow(RangeError);
  });

  it('matches a plain array model under any push/release sequence', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 16 }),
        fc.array(fc.oneof(fc.record({ push: fc.uint8Array({ maxLength: 20 }) }), fc.record({ release: fc.nat(40) })), { maxLength: 40 }),
        (cap, ops) => {
          const ring = new AudioRing(1, cap);
          const all: number[] = [];
          let start = 0;
          let dropped = 0;
          for (const op of ops) {
            if ('push' in op) {
              dropped += ring.push(Buffer.from(op.push));
              for (const b of op.push) all.push(b);
              const overflowStart = all.length - cap;
              if (overflowStart > start) start = overflowStart;
            } else if (op.release > start) {
              start = Math.min(op.release, all.length);
              ring.release(op.release);
            }
          }
          expect(ring.start).toBe(start);
          expect(ring.end).toBe(all.length);
          expect([...ring.read(start, 1000).bytes]).toEqual(all.slice(start));
          expect(dropped).toBeLessThanOrEqual(all.length);
        },
      ),
    );
  });
});
