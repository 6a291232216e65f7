import { describe, expect, it } from 'vitest';
import { jsonStringsHoldNul } from '../../src/core/json-nul.js';

describe('jsonStringsHoldNul', () => {
  it('finds an escaped NUL in a value or a key, at any depth', () => {
    expect(jsonStringsHoldNul(JSON.stringify({ title: 'a\u0000b' }))).toBe(true);
    expect(jsonStringsHoldNul(JSON.stringify({ 'k\u0000': 1 }))).toBe(true);
    expect(jsonStringsHoldNul(JSON.stringify({ a: [{ b: ['\u0000'] }] }))).toBe(true);
    expect(jsonStringsHoldNul('{"t":"\\u0000"}')).toBe(true);
  });

  it('does not take the six characters \\u0000 (an escaped backslash) or other escapes for one', () => {
    expect(jsonStringsHoldNul(JSON.stringify({ title: '\\u0000' }))).toBe(false);
    expect(jsonStringsHoldNul(JSON.stringify({ title: 'line\nnext \u0001 "q" \\' }))).toBe(false);
    expect(jsonStringsHoldNul('{"n":0000}')).toBe(false);
  });
});
