// Sample accounting: frame placement (duplicates, overlap, gaps), epochs, time points on
// both clocks, and resume-body sample counts.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ScribedError, type ErrorCode } from '../../src/core/errors.js';
import {
  beginEpoch,
  initialCursor,
  locate,
  parseSampleCount,
  placeFrame,
  timePoint,
  type CaptureCursor,
} from '../../src/core/capture-cursor.js';

function expectCode(fn: () => unknown, code: ErrorCode): ScribedError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ScribedError);
    expect((err as ScribedError).code).toBe(code);
    return err as ScribedError;
  }
  throw new Error(`expected ${code}, nothing was thrown`);
}

const at = (epochReceived: number, capturedSamples = BigInt(epochReceived), epoch = 1, epochBases: bigint[] = [0n]): CaptureCursor => ({
  epoch,
  epochReceived,
  capturedSamples,
  epochBases,
});

describe('placeFrame', () => {
  it('accepts an in-order frame', () => {
    const p = placeFrame(at(100), { epoch: 1, sampleOffset: 100, samples: 50 }, 1000);
    expect(p).toEqual({ duplicateSamples: 0, gapSamples: 0, acceptFrom: 0, acceptCount: 50, next: at(150) });
  });

  it('drops a frame that is all duplicate and leaves the cursor as it was', () => {
    const c = at(100);
    const p = placeFrame(c, { epoch: 1, sampleOffset: 40, samples: 60 }, 1000);
    expect(p).toMatchObject({ duplicateSamples: 60, gapSamples: 0, acceptCount: 0 });
    expect(p.next).toEqual(c);
  });

  it('drops the overlapping head of a frame and accepts the rest', () => {
    const p = placeFrame(at(100), { epoch: 1, sampleOffset: 80, samples: 50 }, 1000);
    expect(p).toEqual({ duplicateSamples: 20, gapSamples: 0, acceptFrom: 20, acceptCount: 30, next: at(130) });
  });

  it('fills a gap with silence before the frame, counting it in both clocks', () => {
    const c = at(100, 5100n, 2, [0n, 5000n]);
    const p = placeFrame(c, { epoch: 2, sampleOffset: 130, samples: 10 }, 30);
    expect(p).toEqual({ duplicateSamples: 0, gapSamples: 30, acceptFrom: 0, acceptCount: 10, next: at(140, 5140n, 2, [0n, 5000n]) });
  });

  it('refuses a gap over the limit without changing anything', () => {
    const c = at(100);
    const err = expectCode(() => placeFrame(c, { epoch: 1, sampleOffset: 131, samples: 10 }, 30), 'GAP_TOO_LARGE');
    expect(err.details).toEqual({ sampleOffset: 100 });
    expect(c).toEqual(at(100));
  });

  it('refuses a frame from another epoch (stale or future)', () => {
    const c = at(0, 500n, 2, [0n, 500n]);
    expectCode(() => placeFrame(c, { epoch: 1, sampleOffset: 0, samples: 10 }, 30), 'STALE_EPOCH');
    expectCode(() => placeFrame(c, { epoch: 3, sampleOffset: 0, samples: 10 }, 30), 'STALE_EPOCH');
  });

  it('obeys the placement arithmetic for any frame', () => {
    fc.assert(
      fc.property(
        fc.nat(10_000),
        fc.nat(10_000),
        fc.integer({ min: 1, max: 5_000 }),
        fc.nat(3_000),
        fc.bigInt({ min: 0n, max: 2n ** 64n }),
        (received, offset, samples, maxGap, extra) => {
          const c = at(received, BigInt(received) + extra);
          const frame = { epoch: 1, sampleOffset: offset, samples };
          if (offset - received > maxGap) {
            expectCode(() => placeFrame(c, frame, maxGap), 'GAP_TOO_LARGE');
            return;
          }
          const p = placeFrame(c, frame, maxGap);
          expect(p.duplicateSamples + p.acceptCount).toBe(samples);
          expect(p.gapSamples).toBe(Math.max(0, offset - received));
          expect(p.duplicateSamples).toBe(Math.min(samples, Math.max(0, received - offset)));
          if (p.acceptCount > 0) expect(p.acceptFrom).toBe(p.duplicateSamples);
          expect(p.next.epochReceived).toBe(Math.max(received, offset + samples));
          expect(p.next.capturedSamples - c.capturedSamples).toBe(BigInt(p.next.epochReceived - received));
          expect(p.next.epoch).toBe(1);
        },
      ),
    );
  });

  it('rebuilds the exact signal from retransmitted, overlapping frames', () => {
    // Frames never start past what was received (no gaps), but repeat earlier audio freely:
    // what the server keeps must be the signal itself, sample for sample.
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(400), fc.integer({ min: 1, max: 300 })), { maxLength: 40 }), (steps) => {
        const signal = Array.from({ length: 20_000 }, (_, i) => i);
        let cursor = initialCursor();
        const kept: number[] = [];
        for (const [back, n] of steps) {
          const offset = Math.max(0, cursor.epochReceived - back);
          const frame = signal.slice(offset, offset + n);
          const p = placeFrame(cursor, { epoch: 1, sampleOffset: offset, samples: frame.length }, 0);
          expect(p.gapSamples).toBe(0);
          kept.push(...frame.slice(p.acceptFrom, p.acceptFrom + p.acceptCount));
          cursor = p.next;
        }
        expect(kept).toEqual(signal.slice(0, cursor.epochReceived));
        expect(cursor.capturedSamples).toBe(BigInt(kept.length));
      }),
    );
  });

  it('places gap silence at the right positions', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: -200, max: 50 }), fc.integer({ min: 1, max: 100 })), { maxLength: 30 }), (steps) => {
        let cursor = initialCursor();
        const timeline: Array<number | null> = []; // null = filled silence
        for (const [delta, n] of steps) {
          const offset = Math.max(0, cursor.epochReceived + delta);
          const frame = Array.from({ length: n }, (_, i) => offset + i);
          const p = placeFrame(cursor, { epoch: 1, sampleOffset: offset, samples: n }, 50);
          for (let i = 0; i < p.gapSamples; i++) timeline.push(null);
          timeline.push(...frame.slice(p.acceptFrom, p.acceptFrom + p.acceptCount));
          cursor = p.next;
        }
        expect(timeline.length).toBe(cursor.epochReceived);
        timeline.forEach((v, i) => {
          if (v !== null) expect(v).toBe(i); // every accepted sample sits at its own offset
        });
      }),
    );
  });
});

describe('epochs and time points', () => {
  it('starts a new epoch at the session total', () => {
    const c = beginEpoch(at(700, 1200n, 2, [0n, 500n]));
    expect(c).toEqual({ epoch: 3, epochReceived: 0, capturedSamples: 1200n, epochBases: [0n, 500n, 1200n] });
    const p = placeFrame(c, { epoch: 3, sampleOffset: 0, samples: 10 }, 0);
    expect(p.next).toMatchObject({ epochReceived: 10, capturedSamples: 1210n });
  });

  it('does not mutate the cursor it was given', () => {
    const c = at(10);
    const bases = c.epochBases;
    beginEpoch(c);
    placeFrame(c, { epoch: 1, sampleOffset: 10, samples: 5 }, 0);
    expect(c).toEqual(at(10));
    expect(c.epochBases).toBe(bases);
    expect(bases).toEqual([0n]);
  });

  it('locates a session sample in the last epoch whose base is not after it', () => {
    // epoch 2 was resumed again before any audio: it shares its base with epoch 3
    const c: CaptureCursor = { epoch: 4, epochReceived: 0, capturedSamples: 900n, epochBases: [0n, 500n, 500n, 900n] };
    expect(locate(c, 0n)).toEqual({ epoch: 1, epochSample: 0n });
    expect(locate(c, 499n)).toEqual({ epoch: 1, epochSample: 499n });
    expect(locate(c, 500n)).toEqual({ epoch: 3, epochSample: 0n });
    expect(locate(c, 899n)).toEqual({ epoch: 3, epochSample: 399n });
    expect(locate(c, 900n)).toEqual({ epoch: 4, epochSample: 0n });
  });

  it('gives the documented time point', () => {
    const c: CaptureCursor = { epoch: 2, epochReceived: 20000, capturedSamples: 52000n, epochBases: [0n, 32000n] };
    expect(timePoint(c, 48000n, 16000)).toEqual({ sample: '48000', ms: 3000, epoch: 2, epochSample: 16000, epochMs: 1000 });
  });

  it('floors milliseconds', () => {
    const c = initialCursor();
    expect(timePoint(c, 1n, 16000)).toMatchObject({ ms: 0, epochMs: 0 });
    expect(timePoint(c, 15n, 16000)).toMatchObject({ ms: 0 });
    expect(timePoint(c, 16n, 16000)).toMatchObject({ ms: 1 });
    expect(timePoint(c, 22049n, 22050)).toMatchObject({ ms: 999 });
  });

  it('keeps 64-bit sample counts exact', () => {
    const c: CaptureCursor = { epoch: 1, epochReceived: 0, capturedSamples: 2n ** 64n - 1n, epochBases: [0n] };
    const t = timePoint(c, 2n ** 64n - 1n, 48000);
    expect(t.sample).toBe('18446744073709551615');
    expect(t.ms).toBe(Number(((2n ** 64n - 1n) * 1000n) / 48000n));
  });

  it('computes ms exactly where floating point would be off by one', () => {
    // floor(s * 1000 / rate) in doubles rounds the wrong way for these sample counts
    const c = initialCursor();
    expect(timePoint(c, 9007199254740800n, 16000).ms).toBe(562949953421300);
    expect(timePoint(c, 9007199254740928n, 44100).ms).toBe(204244881059884);
    expect(timePoint(c, 9007199254740671n, 48000).epochMs).toBe(187649984473763);
  });

  it('agrees on both clocks for any epoch history', () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat(100_000), { minLength: 1, maxLength: 8 }),
        fc.bigInt({ min: 0n, max: 10n ** 6n }),
        fc.constantFrom(8000, 16000, 22050, 44100, 48000),
        (lengths, probe, rate) => {
          let c = initialCursor();
          lengths.forEach((n, i) => {
            if (i > 0) c = beginEpoch(c);
            if (n > 0) c = placeFrame(c, { epoch: c.epoch, sampleOffset: 0, samples: n }, 0).next;
          });
          const sample = probe % (c.capturedSamples + 1n);
          const t = timePoint(c, sample, rate);
          const base = c.epochBases[t.epoch - 1]!;
          expect(base + BigInt(t.epochSample)).toBe(sample);
          expect(base <= sample).toBe(true);
          const nextBase = c.epochBases[t.epoch];
          if (nextBase !== undefined) expect(sample < nextBase).toBe(true);
          expect(t.ms).toBe(Math.floor((Number(sample) * 1000) / rate));
          expect(t.epochMs).toBe(Math.floor((t.epochSample * 1000) / rate));
        },
      ),
    );
  });
});

describe('parseSampleCount', () => {
  it.each([
    ['0', 0n],
    ['48000', 48000n],
    ['007', 7n],
    ['18446744073709551615', 2n ** 64n - 1n],
    [0, 0n],
    [48000, 48000n],
    [Number.MAX_SAFE_INTEGER, 2n ** 53n - 1n],
  ])('accepts %j', (value, expected) => {
    expect(parseSampleCount(value)).toBe(expected);
  });

  it.each([
    ['', 'empty string'],
    ['-1', 'signed'],
    ['+1', 'plus sign'],
    [' 1', 'space'],
    ['1.0', 'decimal point'],
    ['1e3', 'exponent'],
    ['0x10', 'hex'],
    ['18446744073709551616', '2^64'],
    ['000000000000000000001', '21 digits'],
    ['١٢', 'non-ASCII digits'],
    [-1, 'negative number'],
    [1.5, 'fraction'],
    [2 ** 53, 'unsafe integer'],
    [Number.NaN, 'NaN'],
    [Infinity, 'Infinity'],
    [true, 'boolean'],
    [null, 'null'],
    [{}, 'object'],
    [10n, 'bigint'],
  ])('refuses %s (%s) with VALIDATION_FAILED', (value: unknown, _why: string) => {
    const err = expectCode(() => parseSampleCount(value), 'VALIDATION_FAILED');
    expect(err.message).toMatch(/^VALIDATION_FAILED: capturedSamples: /);
    expect(err.details).toEqual({ field: 'capturedSamples' });
  });

  it('round-trips every uint64 as a string and every safe integer as a number', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), (n) => {
        expect(parseSampleCount(n.toString())).toBe(n);
      }),
    );
    fc.assert(
      fc.property(fc.maxSafeNat(), (n) => {
        expect(parseSampleCount(n)).toBe(BigInt(n));
      }),
    );
  });
});
