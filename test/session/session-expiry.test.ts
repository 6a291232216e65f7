// Idle sessions expire (docs/protocol.md, "Idle sessions expire") on a real server and store: a
// session created and never streamed to, and one whose socket left after real speech, end
// COMPLETED after the configured time with what they hold, their History rows say
// `endReason: "session.expired"` and the outbox holds session.expired beside
// transcription.completed; a session resumed in time and streaming is not expired (its close
// says `session.closed`), and the desk's live list holds it only while a socket is there; on PostgreSQL two nodes sweeping the same store expire a session once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, DEFAULT_SESSION_IDLE_EXPIRY_MS } from '../../src/config.js';
import { sweepIntervalMs } from '../../src/session/session-expiry.js';
import { secondConnection, startService, tempDir, testStore, type TestService } from '../helpers/service.js';
import { call } from '../helpers/api.js';
import { loadClips } from '../helpers/audio.js';
import { createSession, SESSIONS } from '../helpers/live.js';
import { StreamClient } from '../helpers/stream-client.js';

const IDLE_MS = 1500;
const ENDPOINTS = '/sound_clone/api/v1/webhooks/endpoints';
const HISTORY = '/sound_clone/api/v1/stt/transcriptions';
const clip = loadClips().find((c) => c.id === 'librivox-0930')!;

async function status(svc: TestService, key: string, sessionId: string): Promise<string> {
  return (await call(svc.baseUrl, 'GET', `${SESSIONS}/${sessionId}`, { key })).json.data.status as string;
}

async function waitForStatus(svc: TestService, key: string, sessionId: string, want: string, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < until) {
    last = await status(svc, key, sessionId);
    if (last === want) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`session ${sessionId} still ${last}, not ${want}`);
}

/** The outbox's events for one session: type and payload. */
async function outboxFor(svc: TestService, sessionId: string): Promise<Array<{ type: string; data: Record<string, unknown> }>> {
  const store = await secondConnection(svc);
  try {
    const rows = await store.db.all<{ event_type: string; payload_json: string }>(
      'SELECT event_type, payload_json FROM webhook_deliveries ORDER BY created_at, id',
    );
    return rows
      .map((r) => ({ type: r.event_type, data: (JSON.parse(r.payload_json) as { data: Record<string, unknown> }).data }))
      .filter((e) => e.data.sessionId === sessionId);
  } finally {
    await store.close();
  }
}

/** The outbox's event types for a session once it holds `n` (or what it holds after 10 s): read
 * through another connection, which sees the server's transaction once it commits (the server's
 * own connection may answer the new status a moment before). */
async function outboxTypes(svc: TestService, sessionId: string, n: number): Promise<string[]> {
  const until = Date.now() + 10_000;
  for (;;) {
    const types = (await outboxFor(svc, sessionId)).map((e) => e.type);
    if (types.length >= n || Date.now() > until) return types;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The desk's live list (GET /desk/api/live) for an account: sessions a client streams to now. */
async function deskLive(svc: TestService, accountId: string): Promise<string[]> {
  const store = await secondConnection(svc);
  try {
    const leaseAfter = testStore() === 'postgres' ? new Date() : undefined;
    return (await store.listDeskLiveSessions(accountId, 200, leaseAfter)).map((s) => s.sessionId);
  } finally {
    await store.close();
  }
}

/** An endpoint subscribed to the session events; its URL refuses connections (the outbox is what is checked). */
async function subscribe(svc: TestService, key: string): Promise<void> {
  const res = await call(svc.baseUrl, 'POST', ENDPOINTS, {
    key,
    body: { url: 'http://127.0.0.1:9/hook', events: ['session.expired', 'transcription.completed', 'session.paused'] },
  });
  expect(res.status).toBe(201);
}

describe('the idle expiry setting', () => {
  it('defaults to an hour, takes 0 for never, refuses a negative value; sweeps a quarter of it, within bounds', () => {
    expect(DEFAULT_SESSION_IDLE_EXPIRY_MS).toBe(3_600_000);
    expect(loadConfig({}).sessionIdleExpiryMs).toBe(3_600_000);
    expect(loadConfig({ sessionIdleExpiryMs: 0 }).sessionIdleExpiryMs).toBe(0);
    expect(() => loadConfig({ sessionIdleExpiryMs: -1 })).toThrow(/session-idle-expiry-ms/);
    expect([sweepIntervalMs(IDLE_MS), sweepIntervalMs(100), sweepIntervalMs(3_600_000)]).toEqual([375, 250, 60_000]);
  });
});

describe('idle sessions expire', () => {
  let svc: TestService;
  let key: string;
  let accountId: string;

  beforeAll(async () => {
    svc = await startService({ sessionIdleExpiryMs: IDLE_MS, callbackAllowCidrs: ['127.0.0.1/32'] });
    const account = await svc.account();
    key = account.accessKey;
    accountId = account.accountId;
    await subscribe(svc, key);
  }, 120_000);

  afterAll(async () => {
    await svc?.stop();
  });

  it('ends a session created and never streamed to: COMPLETED, endReason session.expired in History and the webhooks', async () => {
    const s = await createSession(svc, key, {});
    const createdAt = Date.now();
    expect(await status(svc, key, s.sessionId)).toBe('RECORDING');
    await waitForStatus(svc, key, s.sessionId, 'COMPLETED');
    expect(Date.now() - createdAt).toBeGreaterThanOrEqual(IDLE_MS - 50);
    const row = (await call(svc.baseUrl, 'GET', `${HISTORY}/${s.transcriptionId}`, { key })).json.data;
    expect(row).toMatchObject({ status: 'COMPLETED', endReason: 'session.expired', audioSamples: '0' });
    expect((await outboxTypes(svc, s.sessionId, 2)).sort()).toEqual(['session.expired', 'transcription.completed']);
    const events = await outboxFor(svc, s.sessionId);
    for (const e of events) expect(e.data).toMatchObject({ status: 'COMPLETED', endReason: 'session.expired', kind: 'realtime' });
    // A resume now is refused: the session is closed.
    expect((await call(svc.baseUrl, 'POST', `${SESSIONS}/${s.sessionId}/resume`, { key, body: {} })).status).toBe(409);
  });

  it('ends a session whose socket left after speech, its held audio finalized into the transcript', async () => {
    const s = await createSession(svc, key, {});
    const client = await StreamClient.connect(`${svc.wsBase}${s.streamUrl}`, { accessKey: key });
    await client.next('ready');
    const samples = clip.pcm16k.length / 2;
    for (let at = 0; at < samples; at += 640) client.audio(1, at, clip.pcm16k.subarray(at * 2, Math.min(samples, at + 640) * 2));
    await client.next('ack', (e) => e.sampleOffset === samples, 60_000);
    client.terminate(); // no close: the session pauses, its open segment held
    await waitForStatus(svc, key, s.sessionId, 'PAUSED', 10_000);
    await waitForStatus(svc, key, s.sessionId, 'COMPLETED', 30_000);
    const row = (await call(svc.baseUrl, 'GET', `${HISTORY}/${s.transcriptionId}`, { key })).json.data;
    expect(row).toMatchObject({ status: 'COMPLETED', endReason: 'session.expired', audioSamples: String(samples) });
    const transcript = (await call(svc.baseUrl, 'GET', `${HISTORY}/${s.transcriptionId}/transcript?format=txt`, { key })).text;
    expect(transcript.trim().split(/\s+/).length).toBeGreaterThan(3);
    const types = await outboxTypes(svc, s.sessionId, 3);
    // Paused first; the two of the expiry are written in one transaction, in no set order.
    expect([types[0], ...types.slice(1).sort()]).toEqual(['session.paused', 'session.expired', 'transcription.completed']);
  });

  it('keeps a session resumed in time while its socket is there; its own close says session.closed; the desk lists it only with a socket', async () => {
    const s = await createSession(svc, key, {});
    expect(await deskLive(svc, accountId)).not.toContain(s.sessionId);
    const first = await StreamClient.connect(`${svc.wsBase}${s.streamUrl}`, { accessKey: key });
    await first.next('ready');
    expect(await deskLive(svc, accountId)).toContain(s.sessionId);
    first.audio(1, 0, Buffer.alloc(3200));
    await first.next('ack', (e) => e.sampleOffset === 1600);
    first.terminate();
    await waitForStatus(svc, key, s.sessionId, 'PAUSED', 10_000);
    expect(await deskLive(svc, accountId)).not.toContain(s.sessionId);
    const resumed = await call(svc.baseUrl, 'POST', `${SESSIONS}/${s.sessionId}/resume`, { key, body: { capturedSamples: '1600' } });
    expect(resumed.status).toBe(200);
    const second = await StreamClient.connect(`${svc.wsBase}${s.streamUrl}`, { accessKey: key });
    await second.next('ready');
    // Three expiry times with the socket there and no audio: still recording.
    await new Promise((r) => setTimeout(r, 3 * IDLE_MS));
    expect(await status(svc, key, s.sessionId)).toBe('RECORDING');
    expect(await deskLive(svc, accountId)).toContain(s.sessionId);
    second.control({ type: 'close' });
    await second.next('closed', () => true, 30_000);
    const row = (await call(svc.baseUrl, 'GET', `${HISTORY}/${s.transcriptionId}`, { key })).json.data;
    expect(row).toMatchObject({ status: 'COMPLETED', endReason: 'session.closed' });
    expect((await outboxFor(svc, s.sessionId)).map((e) => e.type)).not.toContain('session.expired');
  });
});

describe.runIf(testStore() === 'postgres')('idle expiry across nodes', () => {
  let a: TestService;
  let b: TestService;

  beforeAll(async () => {
    a = await startService({ sessionIdleExpiryMs: IDLE_MS, callbackAllowCidrs: ['127.0.0.1/32'] });
    b = await startService({ dataDir: tempDir(), databaseUrl: a.storeSettings.databaseUrl, sessionIdleExpiryMs: IDLE_MS });
  }, 120_000);

  afterAll(async () => {
    await b?.stop();
    await a?.stop();
  });

  it('two nodes sweeping one store end an idle session once', async () => {
    const key = (await a.account()).accessKey;
    await subscribe(a, key);
    const sessions = await Promise.all([0, 1, 2, 3].map(() => createSession(a, key, {})));
    for (const s of sessions) await waitForStatus(b, key, s.sessionId, 'COMPLETED');
    // A few more sweeps of both nodes: nothing is ended twice.
    await new Promise((r) => setTimeout(r, 2 * sweepIntervalMs(IDLE_MS) + 200));
    for (const s of sessions) {
      const types = (await outboxTypes(a, s.sessionId, 2)).sort();
      expect(types).toEqual(['session.expired', 'transcription.completed']);
    }
  });
});
