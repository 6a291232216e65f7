// HTTP behaviour of real-time sessions against a real server: create (limits, exclusions,
// idempotency), read, tickets, auth and ownership, envelope and error codes.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';

let svc: TestService;
let alice: ProvisionedAccount;
let bob: ProvisionedAccount;

beforeAll(async () => {
  svc = await startService();
  alice = await svc.account(500n);
  bob = await svc.account();
});
afterAll(async () => {
  await svc?.stop();
});

interface Call {
  key?: string | null;
  idem?: string | null;
  body?: unknown;
  rawBody?: string;
  headers?: Record<string, string>;
}

async function api(method: string, path: string, call: Call = {}) {
  const headers: Record<string, string> = { ...call.headers };
  if (call.key !== null) headers.accessKey = call.key ?? alice.accessKey;
  if (call.idem) headers['Idempotency-Key'] = call.idem;
  let body: string | undefined;
  if (call.rawBody !== undefined) body = call.rawBody;
  else if (call.body !== undefined) body = JSON.stringify(call.body);
  if (body !== undefined) headers['content-type'] ??= 'application/json';
  const res = await fetch(`${svc.baseUrl}${path}`, { method, headers, body });
  const text = await res.text();
  const isJson = res.headers.get('content-type')?.startsWith('application/json') ?? false;
  return { status: res.status, headers: res.headers, json: isJson ? JSON.parse(text) : null, text };
}

const SESSIONS = '/sound_clone/api/v1/stt/realtime/sessions';
const idem = () => `test-${randomUUID()}`;
const create = (body: unknown, call: Call = {}) => api('POST', SESSIONS, { idem: idem(), body, ...call });

describe('create session', () => {
  it('creates a RECORDING session with a History row and resolved options', async () => {
    const r = await create({ title: 'Call 1', options: { inputEncoding: 'mulaw_8000' } });
    expect(r.status).toBe(200);
    expect(r.json.code).toBe(1);
    const d = r.json.data;
    expect(d.sessionId).toMatch(/^rts_/);
    expect(d.transcriptionId).toMatch(/^stt_/);
    expect(d.status).toBe('RECORDING');
    expect(d.modelId).toBe('svc_stt_realtime_v1');
    expect(d.streamUrl).toBe(`${SESSIONS}/${d.sessionId}/stream`);
    expect(d.effectiveOptions).toMatchObject({ inputEncoding: 'mulaw_8000', sampleRateHz: 8000, segmentCommitMode: 'manual' });
    const h = await api('GET', `/sound_clone/api/v1/stt/transcriptions/${d.transcriptionId}`);
    expect(h.json.data).toMatchObject({ transcriptionId: d.transcriptionId, title: 'Call 1', status: 'RECORDING', kind: 'realtime' });
  });

  it('defaults inputEncoding to pcm_s16le_16000 and gives a generic title', async () => {
    const r = await create({});
    expect(r.json.data.effectiveOptions).toMatchObject({ inputEncoding: 'pcm_s16le_16000', sampleRateHz: 16000 });
    expect(r.json.data.title.length).toBeGreaterThan(0);
  });

  it('turns alignment off when background filtering is on and alignment is unset', async () => {
    const r = await create({ options: { suppressBackgroundSpeech: true } });
    expect(r.status).toBe(200);
    expect(r.json.data.effectiveOptions.includeAlignment).toBe(false);
  });

  it.each(['pcm_s16le_8000', 'pcm_s16le_16000', 'pcm_s16le_22050', 'pcm_s16le_24000', 'pcm_s16le_44100', 'pcm_s16le_48000', 'mulaw_8000'])(
    'accepts encoding %s and resolves its rate',
    async (enc) => {
      const r = await create({ options: { inputEncoding: enc } });
      expect(r.status).toBe(200);
      expect(r.json.data.effectiveOptions.sampleRateHz).toBe(Number(enc.split('_').pop()));
    },
  );

  const ok = (options: Record<string, unknown>, top: Record<string, unknown> = {}) => ({ ...top, options });
  it.each([
    ['title of 200 characters', { title: 'x'.repeat(200) }],
    ['8 additionalLanguageHints', ok({ additionalLanguageHints: Array(8).fill('en') })],
    ['50 vocabularyHints', ok({ vocabularyHints: Array.from({ length: 50 }, (_, i) => `term${i}`) })],
    ['rewriteInstruction of 2000 characters', ok({ rewriteInstruction: 'r'.repeat(2000) })],
    ['commitSilenceMs 0 and 60000', ok({ commitSilenceMs: 0, minimumSilenceMs: 60000 })],
    ['minimumSpeechMs 60000', ok({ minimumSpeechMs: 60000 })],
    ['speechDetectionThreshold 0 and 1', ok({ speechDetectionThreshold: 1 })],
    ['heartbeatIntervalMs 500', ok({ heartbeatIntervalMs: 500 })],
    ['heartbeatIntervalMs 10000', ok({ heartbeatIntervalMs: 10000 })],
  ])('accepts the limit: %s', async (_name, body) => {
    const r = await create(body);
    expect(r.status, JSON.stringify(r.json)).toBe(200);
  });

  it.each([
    ['title of 201 characters', { title: 'x'.repeat(201) }],
    ['title not a string', { title: 5 }],
    ['unknown encoding', ok({ inputEncoding: 'pcm_s16le_11025' })],
    ['unknown segmentCommitMode', ok({ segmentCommitMode: 'auto' })],
    ['9 additionalLanguageHints', ok({ additionalLanguageHints: Array(9).fill('en') })],
    ['51 vocabularyHints', ok({ vocabularyHints: Array.from({ length: 51 }, (_, i) => `term${i}`) })],
    ['rewriteInstruction of 2001 characters', ok({ rewriteInstruction: 'r'.repeat(2001) })],
    ['commitSilenceMs -1', ok({ commitSilenceMs: -1 })],
    ['commitSilenceMs 60001', ok({ commitSilenceMs: 60001 })],
    ['minimumSpeechMs not an integer', ok({ minimumSpeechMs: 1.5 })],
    ['minimumSilenceMs 60001', ok({ minimumSilenceMs: 60001 })],
    ['speechDetectionThreshold 1.1', ok({ speechDetectionThreshold: 1.1 })],
    ['speechDetectionThreshold -0.1', ok({ speechDetectionThreshold: -0.1 })],
    ['heartbeatIntervalMs 499', ok({ heartbeatIntervalMs: 499 })],
    ['heartbeatIntervalMs 10001', ok({ heartbeatIntervalMs: 10001 })],
    ['includeAlignment not a boolean', ok({ includeAlignment: 'yes' })],
    ['includeAlignment with suppressBackgroundSpeech', ok({ includeAlignment: true, suppressBackgroundSpeech: true })],
    ['entityCategories with rewriteInstruction', ok({ entityCategories: ['email'], rewriteInstruction: 'tidy it' })],
    ['unknown option', ok({ speakerCount: 2 })],
    ['options not an object', { options: [] }],
  ])('refuses %s with VALIDATION_FAILED', async (_name, body) => {
    const r = await create(body);
    expect(r.status).toBe(422);
    expect(r.json.code).toBe(-1);
    expect(r.json.message).toMatch(/^VALIDATION_FAILED: /);
  });

  it('requires an Idempotency-Key of 16 to 64 printable characters', async () => {
    const none = await api('POST', SESSIONS, { body: {} });
    expect(none.status).toBe(400);
    expect(none.json.message).toMatch(/^IDEMPOTENCY_KEY_REQUIRED: /);
    const short = await api('POST', SESSIONS, { body: {}, idem: 'short' });
    expect(short.status).toBe(400);
  });

  it('replays the same session for the same key and body', async () => {
    const key = idem();
    const body = { title: 'replay', options: { inputEncoding: 'pcm_s16le_8000' } };
    const a = await create(body, { idem: key });
    const b = await create(body, { idem: key });
    expect(b.status).toBe(200);
    expect(b.json.data.sessionId).toBe(a.json.data.sessionId);
    expect(b.headers.get('idempotent-replayed')).toBe('true');
  });

  it('refuses a changed title or option under the same key with IDEMPOTENCY_CONFLICT', async () => {
    const key = idem();
    await create({ title: 'one' }, { idem: key });
    const title = await create({ title: 'two' }, { idem: key });
    expect(title.status).toBe(409);
    expect(title.json.message).toMatch(/^IDEMPOTENCY_CONFLICT: /);
    const option = await create({ title: 'one', options: { removeDisfluencies: true } }, { idem: key });
    expect(option.status).toBe(409);
  });

  it('scopes idempotency keys per account', async () => {
    const key = idem();
    const a = await create({ title: 'same' }, { idem: key });
    const b = await create({ title: 'same' }, { idem: key, key: bob.accessKey });
    expect(b.status).toBe(200);
    expect(b.json.data.sessionId).not.toBe(a.json.data.sessionId);
  });

  it('answers malformed JSON with BAD_REQUEST in the envelope', async () => {
    const r = await api('POST', SESSIONS, { idem: idem(), rawBody: '{"title":' });
    expect(r.status).toBe(400);
    expect(r.json).toEqual({ code: -1, message: expect.stringMatching(/^BAD_REQUEST: /) });
  });

  it('refuses an oversized body with PAYLOAD_TOO_LARGE', async () => {
    const r = await api('POST', SESSIONS, { idem: idem(), rawBody: JSON.stringify({ title: 'x'.repeat(300_000) }) });
    expect(r.status).toBe(413);
    expect(r.json.message).toMatch(/^PAYLOAD_TOO_LARGE: /);
  });
});

describe('authentication and ownership', () => {
  it('refuses a missing, unknown or wrong-kind credential with 401', async () => {
    for (const key of [null, 'sk_0000000000000000_AAAA', alice.apiToken, `${alice.accessKey}x`]) {
      const r = await api('GET', '/sound_clone/api/v1/account', { key });
      expect(r.status, String(key)).toBe(401);
      expect(r.json.message).toMatch(/^UNAUTHORIZED: /);
    }
  });

  it('reports the account and its Characters as a decimal string', async () => {
    const r = await api('GET', '/sound_clone/api/v1/account');
    expect(r.json.data).toMatchObject({ accountId: alice.accountId, characters: '500' });
  });

  it("reads another account's session, History row and transcript as not found", async () => {
    const s = (await create({ title: 'private' })).json.data;
    for (const path of [
      `${SESSIONS}/${s.sessionId}`,
      `/sound_clone/api/v1/stt/transcriptions/${s.transcriptionId}`,
      `/sound_clone/api/v1/stt/transcriptions/${s.transcriptionId}/transcript?format=txt`,
    ]) {
      const r = await api('GET', path, { key: bob.accessKey });
      expect(r.status, path).toBe(404);
      expect(r.json.message).toMatch(/^NOT_FOUND: /);
    }
    for (const path of [`${SESSIONS}/${s.sessionId}/tickets`, `${SESSIONS}/${s.sessionId}/resume`]) {
      const r = await api('POST', path, { key: bob.accessKey, body: {} });
      expect(r.status, path).toBe(404);
    }
    const missing = await api('GET', `${SESSIONS}/rts_doesnotexist`);
    expect(missing.status).toBe(404);
  });

  it('answers unknown routes with the envelope', async () => {
    const r = await api('GET', '/sound_clone/api/v1/nothing-here');
    expect(r.status).toBe(404);
    expect(r.json).toEqual({ code: -1, message: expect.stringMatching(/^NOT_FOUND: /) });
  });
});

describe('tickets', () => {
  it('issues a single-use ticket bound to the session', async () => {
    const s = (await create({})).json.data;
    const r = await api('POST', `${SESSIONS}/${s.sessionId}/tickets`);
    expect(r.status).toBe(200);
    expect(r.json.data).toMatchObject({ sessionId: s.sessionId, streamUrl: s.streamUrl, expiresInSeconds: 60 });
    expect(r.json.data.ticketId).toMatch(/^tkt_/);
    expect(r.json.data.ticket).toMatch(/^tkt_/);
    expect(r.json.data.ticket).not.toBe(r.json.data.ticketId);
  });
});

describe('transcript downloads', () => {
  it('refuses an unknown format', async () => {
    const s = (await create({})).json.data;
    const r = await api('GET', `/sound_clone/api/v1/stt/transcriptions/${s.transcriptionId}/transcript?format=docx`);
    expect(r.status).toBe(422);
    expect(r.json.message).toMatch(/^VALIDATION_FAILED: /);
  });
});

describe('health', () => {
  it('reports alive, ready and metrics', async () => {
    expect((await api('GET', '/healthz', { key: null })).json).toEqual({ status: 'ok' });
    const ready = await api('GET', '/readyz', { key: null });
    expect(ready.status).toBe(200);
    expect(ready.json.checks).toEqual({ store: true, engine: true });
    const metrics = await api('GET', '/metrics', { key: null });
    expect(metrics.text).toContain('scribed_sessions_created_total');
    expect(metrics.text).toContain('scribed_http_request_duration_seconds');
  });
});
