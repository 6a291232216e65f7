import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  parseClientSecrets,
  parseSignatureInput,
  signatureBase,
  signRequest,
  verifySignature,
  SignatureError,
  type SignedRequest,
} from '../../../src/core/audiohook/signature.js';

const SECRET = Buffer.from('a client secret of 32 bytes.....').toString('base64');
const API_KEY = 'sk_live_abcdef0123456789';
const NOW = 1_765_000_000;

function request(extra: Record<string, string> = {}): SignedRequest & { headers: Record<string, string> } {
  return {
    target: '/audiohook/v2',
    authority: 'Scribed.Example.com',
    headers: {
      'audiohook-organization-id': 'd7934305-0972-4844-938e-9060eef73d05',
      'audiohook-session-id': 'e160e428-53e2-487c-977d-96989bf5c99d',
      'audiohook-correlation-id': '30b0e395-84d3-4570-ac13-9a62d8f514c0',
      'x-api-key': API_KEY,
      ...extra,
    },
  };
}

function signed(opts: { created?: number; expires?: number; secret?: string; keyid?: string; components?: string[] } = {}) {
  const req = request();
  const created = opts.created ?? NOW;
  const h = signRequest(req, opts.secret ?? SECRET, {
    keyid: opts.keyid ?? API_KEY,
    nonce: 'VGhpcyBpcyBhIG5vbmNl',
    created,
    expires: opts.expires ?? created + 30,
    components: opts.components,
  });
  const headers: Record<string, string> = { ...req.headers, ...h };
  return { ...req, headers };
}

const failure = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    if (err instanceof SignatureError) return err.reason;
    throw err;
  }
  return 'accepted';
};

describe('AudioHook upgrade signatures (RFC 9421, hmac-sha256)', () => {
  it('the signature base of RFC 9421 for the components Genesys covers, computed by hand', () => {
    const req = signed();
    const input = parseSignatureInput(req.headers['signature-input']);
    expect(input.label).toBe('sig1');
    expect(input.components).toEqual([
      '@request-target',
      '@authority',
      'audiohook-organization-id',
      'audiohook-session-id',
      'audiohook-correlation-id',
      'x-api-key',
    ]);
    expect(input.params).toEqual({ keyid: API_KEY, nonce: 'VGhpcyBpcyBhIG5vbmNl', alg: 'hmac-sha256', created: NOW, expires: NOW + 30 });
    const base = [
      '"@request-target": /audiohook/v2',
      '"@authority": scribed.example.com',
      '"audiohook-organization-id": d7934305-0972-4844-938e-9060eef73d05',
      '"audiohook-session-id": e160e428-53e2-487c-977d-96989bf5c99d',
      '"audiohook-correlation-id": 30b0e395-84d3-4570-ac13-9a62d8f514c0',
      `"x-api-key": ${API_KEY}`,
      `"@signature-params": ("@request-target" "@authority" "audiohook-organization-id" "audiohook-session-id" "audiohook-correlation-id" "x-api-key");keyid="${API_KEY}";nonce="VGhpcyBpcyBhIG5vbmNl";alg="hmac-sha256";created=${NOW};expires=${NOW + 30}`,
    ].join('\n');
    expect(signatureBase(input, req)).toBe(base);
    const mac = createHmac('sha256', Buffer.from(SECRET, 'base64')).update(base).digest('base64');
    expect(req.headers.signature).toBe(`sig1=:${mac}:`);
    expect(verifySignature(req, SECRET, NOW + 5)).toMatchObject({ keyid: API_KEY, nonce: 'VGhpcyBpcyBhIG5vbmNl' });
  });

  it('refuses a wrong secret, a changed header, an expired or future signature, a wrong keyid, missing components', () => {
    expect(
      failure(() => verifySignature(signed({ secret: Buffer.from('another secret of 32 bytes......').toString('base64') }), SECRET, NOW)),
    ).toBe('mismatch');
    const tampered = signed();
    tampered.headers['audiohook-session-id'] = '00000000-53e2-487c-977d-96989bf5c99d';
    expect(failure(() => verifySignature(tampered, SECRET, NOW))).toBe('mismatch');
    expect(failure(() => verifySignature({ ...signed(), target: '/audiohook/v2?x=1' }, SECRET, NOW))).toBe('mismatch');
    expect(failure(() => verifySignature(signed({ created: NOW - 100 }), SECRET, NOW))).toBe('expired');
    expect(failure(() => verifySignature(signed({ created: NOW + 60 }), SECRET, NOW))).toBe('not_yet_valid');
    expect(failure(() => verifySignature(signed({ expires: NOW + 3600 }), SECRET, NOW))).toBe('malformed');
    expect(failure(() => verifySignature(signed({ keyid: 'someone-else' }), SECRET, NOW))).toBe('keyid');
    expect(failure(() => verifySignature(signed({ components: ['@request-target', '@authority', 'x-api-key'] }), SECRET, NOW))).toBe(
      'components',
    );
    expect(failure(() => verifySignature(request(), SECRET, NOW))).toBe('missing');
  });

  it('refuses malformed headers without throwing anything else', () => {
    for (const input of [
      'sig1=',
      'sig1=("@authority"',
      'sig1=("@authority");keyid=1.5',
      '=("x")',
      'sig1=("a""b")',
      'sig1=("@authority") trailing',
    ]) {
      const req = signed();
      req.headers['signature-input'] = input;
      expect(
        failure(() => verifySignature(req, SECRET, NOW)),
        input,
      ).not.toBe('accepted');
    }
    const req = signed();
    req.headers.signature = 'sig1=notbytes';
    expect(failure(() => verifySignature(req, SECRET, NOW))).toBe('malformed');
  });

  it("reads the operator's secrets file", () => {
    const m = parseClientSecrets(JSON.stringify({ 'D7934305-0972-4844-938E-9060EEF73D05': SECRET }));
    expect(m.get('d7934305-0972-4844-938e-9060eef73d05')).toBe(SECRET);
    expect(() => parseClientSecrets('[]')).toThrow(/JSON object/);
    expect(() => parseClientSecrets(JSON.stringify({ 'not-an-org': SECRET }))).toThrow(/organization id/);
    expect(() => parseClientSecrets(JSON.stringify({ 'd7934305-0972-4844-938e-9060eef73d05': 'c2hvcnQ=' }))).toThrow(/16 bytes/);
  });
});
