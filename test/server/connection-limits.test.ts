// Issue 14, "an unauthenticated client can hold a connection": a client without a credential
// is answered before any body is read and disconnected; headers, whole requests and silent
// connections have deadlines; the number of connections is capped. None of it touches what
// legitimately lasts: an upgraded socket idle past every deadline, and an authenticated batch
// upload trickled in for longer than the idle and header deadlines.
// The server runs with short deadlines so the test takes seconds; the defaults are in
// src/config.ts and docs/api.md.
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startService, type TestService } from '../helpers/service.js';
import { rawConnect, type RawConnection, type RawResponse } from '../helpers/raw-http.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';

const API = '/sound_clone/api/v1';
const LIMITS = { headersTimeoutMs: 500, requestTimeoutMs: 4000, idleTimeoutMs: 800, keepAliveTimeoutMs: 500, maxConnections: 12 };
/** Node checks header and request deadlines once a second (src/server/connections.ts). */
const CHECK_MS = 1000;
const WAV = path.resolve(import.meta.dirname, '../../samples/librivox-0880.wav');

let svc: TestService;
let alice: ProvisionedAccount;
let port: number;

beforeAll(async () => {
  svc = await startService({ maxDecoders: 2, ...LIMITS });
  port = Number(new URL(svc.baseUrl).port);
  alice = await svc.account(100_000n);
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Send bytes of `body` one chunk every `everyMs` until the connection closes or `untilMs`. */
async function trickle(conn: RawConnection, chunk: string, everyMs: number, untilMs: number): Promise<void> {
  const t0 = Date.now();
  let closed = false;
  void conn.ended.then(() => (closed = true));
  while (!closed && Date.now() - t0 < untilMs) {
    conn.write(chunk);
    await sleep(everyMs);
  }
}

function envelopeOf(res: RawResponse): { code: number; message: string } {
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  return JSON.parse(res.body) as { code: number; message: string };
}

describe('no credential, no connection', () => {
  // JSON bodies announce a length under the body limit (a larger one is refused for its
  // size alone); uploads announce 100 MB, under the upload limit.
  const routes = [
    { method: 'POST', path: `${API}/stt/realtime/sessions`, type: 'application/json', length: 200_000, code: 'UNAUTHORIZED' },
    { method: 'POST', path: `${API}/interpretation/projects`, type: 'application/json', length: 1_000_000, code: 'UNAUTHORIZED' },
    { method: 'POST', path: `${API}/music/projects`, type: 'application/json', length: 200_000, code: 'UNAUTHORIZED' },
    { method: 'PUT', path: '/api/user', type: 'application/json', length: 200_000, code: 'UNAUTHORIZED' },
    { method: 'GET', path: '/api/user', type: 'application/json', length: 200_000, code: 'UNAUTHORIZED' },
    { method: 'POST', path: `${API}/voices/tts`, type: 'multipart/form-data; boundary=x', length: 100_000_000, code: 'UNAUTHORIZED' },
    {
      method: 'POST',
      path: `${API}/stt/transcriptions`,
      type: 'multipart/form-data; boundary=x',
      length: 100_000_000,
      code: 'UNAUTHORIZED',
    },
    { method: 'POST', path: '/no/such/route', type: 'application/json', length: 200_000, code: 'NOT_FOUND' },
  ];
  for (const r of routes) {
    it(`${r.method} ${r.path} with a ${r.length}-byte Content-Length and a trickled body: refused at once and closed`, async () => {
      const conn = await rawConnect(port);
      const t0 = Date.now();
      conn.write(`${r.method} ${r.path} HTTP/1.1\r\nHost: x\r\nContent-Type: ${r.type}\r\nContent-Length: ${r.length}\r\n\r\n{"a":`);
      void trickle(conn, ' ', 50, 3000);
      const res = await conn.response(1500);
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(envelopeOf(res).message).toMatch(new RegExp(`^${r.code}: `));
      expect(res.headers.connection).toBe('close');
      const ended = await conn.ended;
      // closed right after the answer, however long the client would have gone on
      expect(Date.now() - t0).toBeLessThan(1500);
      expect(['end', 'reset']).toContain(ended.how);
    });
  }
});

describe('deadlines', () => {
  it('headers trickled in past the header deadline: 408 in the envelope, closed', async () => {
    const conn = await rawConnect(port);
    conn.write(`GET /healthz HTTP/1.1\r\nHost: x\r\n`);
    void trickle(conn, 'X-Slow: 1\r\n', 100, 10_000);
    const res = await conn.response(LIMITS.headersTimeoutMs + CHECK_MS + 1000);
    expect(res.status).toBe(408);
    expect(envelopeOf(res).message).toMatch(/^REQUEST_TIMEOUT: /);
    const ended = await conn.ended;
    expect(ended.afterMs).toBeLessThan(LIMITS.headersTimeoutMs + CHECK_MS + 1500);
  });

  it('a connection that sends nothing is closed', async () => {
    const conn = await rawConnect(port);
    const ended = await Promise.race([conn.ended, sleep(LIMITS.headersTimeoutMs + CHECK_MS + 1500).then(() => null)]);
    conn.destroy();
    expect(ended).not.toBeNull();
  });

  it('an authenticated body that stops coming: 408 after the idle deadline, closed', async () => {
    const conn = await rawConnect(port);
    conn.write(
      `POST ${API}/stt/realtime/sessions HTTP/1.1\r\nHost: x\r\naccessKey: ${alice.accessKey}\r\nIdempotency-Key: idle-${randomUUID()}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"title":`,
    );
    const res = await conn.response(LIMITS.idleTimeoutMs + 2000);
    expect(res.status).toBe(408);
    expect(envelopeOf(res).message).toMatch(/^REQUEST_TIMEOUT: /);
    await conn.ended;
  });

  it('an authenticated body that keeps moving but never ends: 408 at the request deadline', async () => {
    const conn = await rawConnect(port);
    const t0 = Date.now();
    conn.write(
      `POST ${API}/stt/realtime/sessions HTTP/1.1\r\nHost: x\r\naccessKey: ${alice.accessKey}\r\nIdempotency-Key: slow-${randomUUID()}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"title":"`,
    );
    void trickle(conn, 'a', 200, 15_000);
    const res = await conn.response(LIMITS.requestTimeoutMs + CHECK_MS + 2000);
    expect(res.status).toBe(408);
    expect(envelopeOf(res).message).toMatch(/^REQUEST_TIMEOUT: /);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(LIMITS.requestTimeoutMs - 100);
    await conn.ended;
  });

  it('an idle kept-alive connection is closed after the keep-alive deadline', async () => {
    const conn = await rawConnect(port);
    conn.write(`GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect((await conn.response()).status).toBe(200);
    const ended = await Promise.race([conn.ended, sleep(LIMITS.keepAliveTimeoutMs + 3000).then(() => null)]);
    conn.destroy();
    expect(ended).not.toBeNull();
  });
});

describe('what legitimately lasts', () => {
  it('an upgraded socket idle past every deadline stays open and answers', async () => {
    const res = await fetch(`${svc.baseUrl}${API}/stt/realtime/sessions`, {
      method: 'POST',
      headers: { accessKey: alice.accessKey, 'content-type': 'application/json', 'Idempotency-Key': `ws-idle-${randomUUID()}` },
      body: '{}',
    });
    const { streamUrl } = ((await res.json()) as { data: { streamUrl: string } }).data;
    const ws = new WebSocket(`${svc.wsBase}${streamUrl}`, { headers: { accessKey: alice.accessKey } });
    const events: Array<{ type: string; id?: string }> = [];
    ws.on('message', (d) => events.push(JSON.parse(d.toString()) as { type: string }));
    let closed = false;
    ws.on('close', () => (closed = true));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    await sleep(Math.max(LIMITS.idleTimeoutMs, LIMITS.headersTimeoutMs, LIMITS.keepAliveTimeoutMs) + CHECK_MS + 1000);
    expect(closed).toBe(false);
    ws.send(JSON.stringify({ type: 'ping', id: 'still-here' }));
    for (let i = 0; i < 50 && !events.some((e) => e.type === 'pong'); i++) await sleep(20);
    expect(events.find((e) => e.type === 'pong')?.id).toBe('still-here');
    ws.close();
  });

  it('an authenticated batch upload trickled in over several idle and header deadlines is accepted', async () => {
    const wav = fs.readFileSync(WAV).subarray(0, 64_000 + 44);
    const boundary = `----scribed${randomUUID()}`;
    const head = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n`,
    );
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
    const body = Buffer.concat([head, wav, tail]);
    const conn = await rawConnect(port);
    conn.write(
      `POST ${API}/stt/transcriptions HTTP/1.1\r\nHost: x\r\naccessKey: ${alice.accessKey}\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    // 12 pieces, one every 250 ms: 3 s in all, well past the idle (0.8 s) and header (0.5 s)
    // deadlines, each gap under the idle one, the whole under the request deadline (4 s).
    const pieces = 12;
    const size = Math.ceil(body.length / pieces);
    const t0 = Date.now();
    for (let i = 0; i < pieces; i++) {
      conn.write(body.subarray(i * size, (i + 1) * size));
      await sleep(250);
    }
    const res = await conn.response(10_000);
    conn.destroy();
    expect(Date.now() - t0).toBeGreaterThan(LIMITS.idleTimeoutMs * 3);
    expect(res.status, res.body).toBe(200);
    expect(JSON.parse(res.body).data.transcriptionId).toMatch(/^stt_/);
  });
});

describe('connection cap', () => {
  it(`past ${LIMITS.maxConnections} open connections a new one is closed at once, and counted`, async () => {
    // All at once (a silent connection is closed at the header deadline): the test's own
    // fetch pool may hold a few more, so at least the surplus is refused.
    const conns = await Promise.all(Array.from({ length: LIMITS.maxConnections + 4 }, () => rawConnect(port)));
    const states = await Promise.all(conns.map((c) => Promise.race([c.ended, sleep(200).then(() => null)])));
    const refused = conns.filter((_c, i) => states[i] !== null);
    for (const c of conns) c.destroy();
    expect(refused.length).toBeGreaterThanOrEqual(4);
    expect(conns.length - refused.length).toBeLessThanOrEqual(LIMITS.maxConnections);
    for (const c of refused) expect(c.received()).toBe('');
    await sleep(100);
    const metrics = await (await fetch(`${svc.baseUrl}/metrics`)).text();
    expect(Number(/^scribed_http_connections_dropped_total (\d+)/m.exec(metrics)?.[1])).toBeGreaterThan(0);
  });
});
