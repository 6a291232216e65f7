// The credential scrubber: by shape anywhere (plain or percent-encoded, any number of times),
// by name in query strings, and nothing else touched.
import { describe, expect, it } from 'vitest';
import { generateCredential } from '../../src/core/credentials.js';
import { REDACTED, isSecretParamName, lenientDecode, redactUrl, scrubCredentials } from '../../src/core/redact.js';

const encodeAll = (s: string) => [...Buffer.from(s)].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
const secretOf = (c: string) => c.split('_').slice(2).join('_');

describe('scrubCredentials', () => {
  for (const prefix of ['sk', 'tok', 'tkt'] as const) {
    const cred = generateCredential(prefix);
    const secret = secretOf(cred.value);
    it(`removes a ${prefix}_ secret in every encoding and keeps the id`, () => {
      const cases = [
        `key=${cred.value}`,
        `"message":"NOT_FOUND: transcription ${cred.value} does not exist"`,
        `/x/${encodeAll(cred.value)}/y`,
        `?a=${encodeURIComponent(encodeAll(cred.value))}`, // encoded twice
        `?k=${cred.value.replaceAll('_', '%5F')}`,
        `?k=${cred.value.toUpperCase()}`,
        `a%3D${cred.value}`,
        `${cred.value.slice(0, -10)}`, // a truncated key is still a secret
      ];
      for (const c of cases) {
        const out = scrubCredentials(c);
        expect(lenientDecode(out).toLowerCase(), c).not.toContain(secret.slice(0, 20).toLowerCase());
        expect(out, c).toContain(REDACTED);
      }
      expect(scrubCredentials(`key=${cred.value}`)).toBe(`key=${prefix}_${cred.id}_${REDACTED}`);
    });
  }

  it('leaves text without credentials alone, including other ids and stray percent signs', () => {
    const texts = [
      'rts_01m86gy73fwtz1zevew7',
      '/sound_clone/api/v1/stt/transcriptions/stt_01abc?limit=5',
      '100% sure %zz %4',
      'sk_short_value',
      '{"a":"b%20c"}',
    ];
    for (const t of texts) expect(scrubCredentials(t)).toBe(t);
  });
});

describe('redactUrl', () => {
  it('replaces secret-named query values whatever their shape and name spelling', () => {
    expect(redactUrl('/p?key=hunter2&limit=5')).toBe(`/p?key=${REDACTED}&limit=5`);
    expect(redactUrl('/p?API-Key=x&Authorization=Bearer%20y')).toBe(`/p?API-Key=${REDACTED}&Authorization=${REDACTED}`);
    expect(redactUrl('/p?%6Bey=x')).toBe(`/p?%6Bey=${REDACTED}`);
    expect(redactUrl('/p?access_key=x#frag')).toBe(`/p?access_key=${REDACTED}#frag`);
    expect(redactUrl('/p?ticket=x&ticket=y')).toBe(`/p?ticket=${REDACTED}&ticket=${REDACTED}`);
  });

  it('scrubs credential shapes in the path and in other parameters', () => {
    const c = generateCredential('sk');
    expect(redactUrl(`/x/${c.value}?note=${c.value}`)).toBe(`/x/sk_${c.id}_${REDACTED}?note=sk_${c.id}_${REDACTED}`);
  });

  it('keeps ordinary parameters and malformed query pieces as they are', () => {
    expect(redactUrl('/p?limit=5&cursor=abc&flag&=v')).toBe('/p?limit=5&cursor=abc&flag&=v');
    expect(isSecretParamName('monkey')).toBe(false);
    expect(isSecretParamName('api_key')).toBe(true);
  });
});
