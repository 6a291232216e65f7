// Characters for real-time audio: 1 per started second of accepted audio, per session.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { chargeNeeded, charactersDue } from '../../src/core/billing.js';

describe('charactersDue', () => {
  it.each([
    [0n, 16000, 0n],
    [1n, 16000, 1n],
    [16000n, 16000, 1n],
    [16001n, 16000, 2n],
    [8000n * 60n, 8000, 60n],
    [22050n * 3n + 1n, 22050, 4n],
    [2n ** 64n - 1n, 48000, (2n ** 64n - 1n + 47999n) / 48000n],
  ])('%s samples at %i Hz owe %s', (samples, rate, due) => {
    expect(charactersDue(samples, rate)).toBe(due);
  });

  it('refuses a nonsensical rate', () => {
    expect(() => charactersDue(1n, 0)).toThrow(RangeError);
    expect(() => charactersDue(1n, 44.1)).toThrow(RangeError);
  });

  it('is the ceiling of seconds for any count', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 2n ** 64n }), fc.constantFrom(8000, 16000, 22050, 24000, 44100, 48000), (n, rate) => {
        const due = charactersDue(n, rate);
        const r = BigInt(rate);
        expect(due * r >= n).toBe(true);
        expect(due === 0n || (due - 1n) * r < n).toBe(true);
      }),
    );
  });
});

describe('chargeNeeded', () => {
  it('charges only what is not yet charged, never negative', () => {
    expect(chargeNeeded(0n, 16000n, 16000)).toBe(1n);
    expect(chargeNeeded(1n, 16000n, 16000)).toBe(0n);
    expect(chargeNeeded(1n, 16001n, 16000)).toBe(1n);
    expect(chargeNeeded(5n, 16001n, 16000)).toBe(0n);
  });

  it('charges a session the same total however its audio is split into frames', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(50_000), { maxLength: 60 }), fc.constantFrom(8000, 16000, 44100), (frames, rate) => {
        let captured = 0n;
        let charged = 0n;
        for (const n of frames) {
          captured += BigInt(n);
          const need = chargeNeeded(charged, captured, rate);
          expect(need >= 0n).toBe(true);
          charged += need;
        }
        expect(charged).toBe(charactersDue(captured, rate));
      }),
    );
  });
});
