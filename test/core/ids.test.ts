// Time-sortable ids: shape, ordering by creation time, and the encoded time.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { idTime, isId, newId, type IdPrefix } from '../../src/core/ids.js';

const PREFIXES: IdPrefix[] = ['acc', 'rts', 'stt', 'tkt', 'seg'];
const T = Date.UTC(2026, 10, 23, 7, 0, 0);

describe('newId', () => {
  it.each(PREFIXES)('makes a %s id of prefix + 20 lowercase base32 characters', (prefix) => {
    const id = newId(prefix, new Date(T));
    expect(id).toMatch(new RegExp(`^${prefix}_[0-9a-hjkmnp-tv-z]{20}$`));
    expect(isId(id, prefix)).toBe(true);
    expect(idTime(id)).toBe(T);
  });

  it('encodes a known time and randomness exactly', () => {
    expect(newId('stt', 0, new Uint8Array(10))).toBe('stt_' + '0'.repeat(20));
    expect(newId('stt', 2 ** 48 - 1, new Uint8Array(10).fill(31))).toBe('stt_7zzzzzzzzz' + 'z'.repeat(10));
    expect(newId('acc', 32, Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8, 9, 10))).toBe('acc_0000000010' + '123456789a');
  });

  it('sorts by creation time as plain strings, whatever the randomness', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 48 - 2 }),
        fc.integer({ min: 1, max: 2 ** 40 }),
        fc.uint8Array({ minLength: 10, maxLength: 10 }),
        fc.uint8Array({ minLength: 10, maxLength: 10 }),
        (t, dt, r1, r2) => {
          const later = Math.min(t + dt, 2 ** 48 - 1);
          const a = newId('stt', t, r1);
          const b = newId('stt', later, r2);
          expect(a < b).toBe(true);
          expect(idTime(a)).toBe(t);
          expect(idTime(b)).toBe(later);
        },
      ),
    );
  });

  it('is random within a millisecond', () => {
    const ids = new Set(Array.from({ length: 100 }, () => newId('rts', T)));
    expect(ids.size).toBe(100);
  });

  it('refuses times outside the 48-bit range', () => {
    expect(() => newId('acc', -1)).toThrow(RangeError);
    expect(() => newId('acc', 2 ** 48)).toThrow(RangeError);
    expect(() => newId('acc', new Date(Number.NaN))).toThrow(RangeError);
  });
});

describe('isId', () => {
  it('checks shape and prefix', () => {
    expect(isId('stt_' + '0'.repeat(20), 'rts')).toBe(false);
    expect(isId('stt_' + '0'.repeat(19))).toBe(false);
    expect(isId('stt_' + 'u'.repeat(20))).toBe(false); // u is not in Crockford base32
    expect(isId('xyz_' + '0'.repeat(20))).toBe(false);
    expect(idTime('nope')).toBeNull();
  });
});
