// Credential format, strict parsing and constant-time hash comparison.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { generateCredential, hashSecret, parseCredential, secretMatches, type CredentialPrefix } from '../../src/core/credentials.js';

const PREFIXES: CredentialPrefix[] = ['sk', 'tok', 'tkt'];

describe('generateCredential', () => {
  it.each(PREFIXES)('makes a %s credential of the documented shape', (prefix) => {
    const c = generateCredential(prefix);
    expect(c.value).toMatch(new RegExp(`^${prefix}_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$`));
    expect(c.value.split('_')[1]).toBe(c.id);
    expect(c.secretHash).toHaveLength(32);
  });

  it('parses back to the same id and secret hash, and makes fresh values', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const prefix = PREFIXES[i % 3]!;
      const c = generateCredential(prefix);
      const p = parseCredential(c.value, prefix);
      expect(p).not.toBeNull();
      expect(p!.id).toBe(c.id);
      expect(secretMatches(p!.secretHash, c.secretHash)).toBe(true);
      seen.add(c.value);
    }
    expect(seen.size).toBe(200);
  });
});

describe('parseCredential', () => {
  const good = 'sk_0123456789abcdef_' + 'A'.repeat(42) + 'E';

  it('accepts a well-formed credential, even with _ and - in the secret', () => {
    expect(parseCredential(good, 'sk')).not.toBeNull();
    const tricky = 'tok_0123456789abcdef_' + '_-'.repeat(21) + 'A';
    expect(parseCredential(tricky, 'tok')).toEqual({ id: '0123456789abcdef', secretHash: hashSecret('_-'.repeat(21) + 'A') });
  });

  it.each([
    ['wrong kind', good, 'tok'],
    ['ticket as access key', good.replace(/^sk/, 'tkt'), 'sk'],
    ['unknown prefix', good.replace(/^sk/, 'pk'), 'sk'],
    ['upper-case id', good.replace('abcdef', 'ABCDEF'), 'sk'],
    ['short id', good.replace('0123456789abcdef', '0123456789abcde'), 'sk'],
    ['non-hex id', good.replace('0123456789abcdef', '0123456789abcdeg'), 'sk'],
    ['short secret', good.slice(0, -1), 'sk'],
    ['long secret', good + 'A', 'sk'],
    ['padding', good.slice(0, -1) + '=', 'sk'],
    ['non-canonical last character', good.slice(0, -1) + 'F', 'sk'],
    ['standard base64', good.slice(0, -2) + '+E', 'sk'],
    ['surrounding space', ` ${good}`, 'sk'],
    ['newline', `${good}\n`, 'sk'],
    ['empty', '', 'sk'],
    ['over 200 characters', good + 'A'.repeat(200), 'sk'],
  ])('refuses %s', (_name, value, prefix) => {
    expect(parseCredential(value, prefix as CredentialPrefix)).toBeNull();
  });

  it('refuses non-strings and never throws', () => {
    expect(parseCredential(undefined, 'sk')).toBeNull();
    expect(parseCredential(42, 'sk')).toBeNull();
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), fc.constantFrom(...PREFIXES), (s, p) => {
        const r = parseCredential(s, p);
        if (r !== null) expect(s.startsWith(`${p}_`)).toBe(true);
      }),
    );
  });
});

describe('hashes', () => {
  it('hashes the secret with sha256', () => {
    expect(hashSecret('abc').toString('hex')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hashSecret('x')).toEqual(createHash('sha256').update('x').digest());
  });

  it('compares in constant time and never matches different lengths', () => {
    const a = hashSecret('a');
    expect(secretMatches(a, hashSecret('a'))).toBe(true);
    expect(secretMatches(a, hashSecret('b'))).toBe(false);
    expect(secretMatches(a, a.subarray(0, 31))).toBe(false);
    expect(secretMatches(Buffer.alloc(0), Buffer.alloc(0))).toBe(true);
  });
});
