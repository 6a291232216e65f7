import { describe, expect, it } from 'vitest';
import { IDEMPOTENCY_KEY, optionalIdempotencyKey, requireIdempotencyKey } from '../../src/core/idempotency.js';

describe('Idempotency-Key format', () => {
  it('takes 16 to 64 printable ASCII characters, space included', () => {
    expect(IDEMPOTENCY_KEY.test('a'.repeat(16))).toBe(true);
    expect(IDEMPOTENCY_KEY.test('a'.repeat(64))).toBe(true);
    expect(IDEMPOTENCY_KEY.test(`${'a'.repeat(8)} ~${'b'.repeat(6)}`)).toBe(true);
    expect(IDEMPOTENCY_KEY.test('a'.repeat(15))).toBe(false);
    expect(IDEMPOTENCY_KEY.test('a'.repeat(65))).toBe(false);
    expect(IDEMPOTENCY_KEY.test(`${'a'.repeat(15)}\t`)).toBe(false);
    expect(IDEMPOTENCY_KEY.test(`${'a'.repeat(15)}é`)).toBe(false);
  });
  it('a required key must be present and well formed', () => {
    expect(requireIdempotencyKey('k'.repeat(20))).toBe('k'.repeat(20));
    expect(() => requireIdempotencyKey(undefined)).toThrow(expect.objectContaining({ code: 'IDEMPOTENCY_KEY_REQUIRED' }));
    expect(() => requireIdempotencyKey('short')).toThrow(expect.objectContaining({ code: 'IDEMPOTENCY_KEY_REQUIRED' }));
  });
  it('an optional key may be absent, but not malformed', () => {
    expect(optionalIdempotencyKey(undefined)).toBeUndefined();
    expect(() => optionalIdempotencyKey('short')).toThrow(expect.objectContaining({ code: 'IDEMPOTENCY_KEY_REQUIRED' }));
  });
});
