// Issue 14, "errors outside the envelope", "refused handshakes keep-alive", "a client's
// oversized message is an error-level stack trace": every answer this service gives, from
// the HTTP parser, the router or the WebSocket upgrade, is `{code, message}` JSON with a table
// identifier and the documented status; a refused upgrade says `Connection: close` and closes;
// a client's protocol fault on an open socket is a warning without a stack.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { capturedLogger, startService, type TestService } from '../helpers/service.js';
import { rawConnect, rawRequest, upgradeRequest, type RawResponse } from '../helpers/raw-http.js';
import { ERRORS, type ErrorCode } from '../../src/core/errors.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';

const API = '/sound_clone/api/v1';
let svc: TestService;
let alice: ProvisionedAccount;
let port: number;
const lines: string[] = [];

beforeAll(async () => {
  svc = await startService({ maxDecoders: 1, logger: capturedLogger('info', lines) });
  port = Number(new URL(svc.baseUrl).port);
  alice = await svc.account();
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

async function createSession(): Promise<string> {
  const res = await fetch(`${svc.baseUrl}${API}/stt/realtime/sessions`, {
    method: 'POST',
    headers: { accessKey: alice.accessKey, 'content-type': 'application/json', 'Idempotency-Key': `proto-${randomUUID()}` },
    body: '{}',
  });
  return ((await res.json()) as { data: { streamUrl: string } }).data.streamUrl;
}

/** The answer is the envelope for `code`, with the table's status. */
function expectEnvelope(res: RawResponse, code: ErrorCode, what: string) {
  expect(res.status, `${what}: ${res.raw}`).toBe(ERRORS[code].http);
  expect(res.headers['content-type'], what).toMatch(/^application\/json/);
  const body = JSON.parse(res.body) as { code: number; message: string };
  expect(Object.keys(body).sort(), what).toEqual(['code', 'message']);
  expect(body.code, what).toBe(ERRORS[code].wire);
  expect(body.message, what).toMatch(new RegExp(`^${code}: `));
}

describe('errors below the routes answer in the envelope', () => {
  const cases: Array<{ what: string; request: () => string; code: ErrorCode }> = [
    {
      what: 'bad percent-encoding in the path',
      request: () => `GET ${API}/stt/transcriptions/%E0%A4%A HTTP/1.1\r\nHost: x\r\n\r\n`,
      code: 'BAD_REQUEST',
    },
    { what: 'bad percent-encoding in an unknown path', request: () => `GET /%zz%ff HTTP/1.1\r\nHost: x\r\n\r\n`, code: 'BAD_REQUEST' },
    {
      what: 'an over-long path parameter',
      request: () => `GET ${API}/stt/transcriptions/${'a'.repeat(500)} HTTP/1.1\r\nHost: x\r\n\r\n`,
      code: 'URI_TOO_LONG',
    },
    {
      what: 'a 20 kB header',
      request: () => `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      code: 'HEADERS_TOO_LARGE',
    },
    { what: 'a header name with a space', request: () => `GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n`, code: 'BAD_REQUEST' },
    { what: 'a header line without a colon', request: () => `GET /healthz HTTP/1.1\r\nHost: x\r\nnocolon\r\n\r\n`, code: 'BAD_REQUEST' },
    {
      what: 'a non-numeric Content-Length',
      request: () => `POST ${API}/account HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n`,
      code: 'BAD_REQUEST',
    },
    { what: 'a malformed request line', request: () => `GET\r\n\r\n`, code: 'BAD_REQUEST' },
    { what: 'an unknown HTTP version', request: () => `GET /healthz HTTP/7.1\r\nHost: x\r\n\r\n`, code: 'BAD_REQUEST' },
  ];
  for (const c of cases) {
    it(c.what, async () => {
      const res = await rawRequest(port, c.request());
      res.conn.destroy();
      expectEnvelope(res, c.code, c.what);
    });
  }
});

describe('WebSocket upgrades', () => {
  const bad: Array<{ what: string; headers: Record<string, string | null>; method?: string }> = [
    { what: 'an unsupported Sec-WebSocket-Version', headers: { 'Sec-WebSocket-Version': '12' } },
    { what: 'no Sec-WebSocket-Version', headers: { 'Sec-WebSocket-Version': null } },
    { what: 'no Sec-WebSocket-Key', headers: { 'Sec-WebSocket-Key': null } },
    { what: 'a malformed Sec-WebSocket-Key', headers: { 'Sec-WebSocket-Key': 'not-a-key' } },
    { what: 'an Upgrade that is not websocket', headers: { Upgrade: 'h2c' } },
    { what: 'a malformed Sec-WebSocket-Protocol', headers: { 'Sec-WebSocket-Protocol': 'a,,b c' } },
  ];
  for (const b of bad) {
    it(`refuses ${b.what} in the envelope, says Connection: close and closes, claiming nothing`, async () => {
      const path = await createSession();
      // With valid credentials: the upgrade is refused for its form, before the session is
      // claimed (a claim here would leave the session held by no socket).
      const res = await rawRequest(port, upgradeRequest(path, { accessKey: alice.accessKey, ...b.headers }, b.method));
      expectEnvelope(res, 'UPGRADE_INVALID', b.what);
      expect(res.headers.connection, b.what).toBe('close');
      const ended = await res.conn.ended;
      expect(ended.how, b.what).toBe('end');
      // The session is still free: a proper socket attaches.
      const ws = new WebSocket(`${svc.wsBase}${path}`, { headers: { accessKey: alice.accessKey } });
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('unexpected-response', (_q, r) => reject(new Error(`refused ${r.statusCode}`)));
        ws.once('error', reject);
      });
      ws.close();
      await new Promise((r) => ws.once('close', r));
    });
  }

  it('a plain GET (no upgrade) of a stream URL is refused in the envelope', async () => {
    const path = await createSession();
    const res = await rawRequest(port, `GET ${path} HTTP/1.1\r\nHost: x\r\naccessKey: ${alice.accessKey}\r\n\r\n`);
    res.conn.destroy();
    expectEnvelope(res, 'UPGRADE_INVALID', 'plain GET');
  });

  it('names the versions it speaks when the version is wrong', async () => {
    const path = await createSession();
    const res = await rawRequest(port, upgradeRequest(path, { accessKey: alice.accessKey, 'Sec-WebSocket-Version': '12' }));
    res.conn.destroy();
    expect(res.headers['sec-websocket-version']).toBe('13, 8');
  });

  for (const r of [
    { what: 'no credentials', path: async () => createSession(), code: 'UNAUTHORIZED' as const },
    { what: 'an unknown path', path: async () => '/nowhere', code: 'NOT_FOUND' as const },
    { what: 'a non-socket route', path: async () => '/healthz', code: 'UPGRADE_INVALID' as const },
  ]) {
    it(`a refused handshake (${r.what}) says Connection: close and the server closes cleanly`, async () => {
      const res = await rawRequest(port, upgradeRequest(await r.path()));
      expectEnvelope(res, r.code, r.what);
      expect(res.headers.connection).toBe('close');
      const ended = await res.conn.ended;
      expect(ended.how).toBe('end');
    });
  }

  it('a refused handshake on a reused connection: the client learns to reconnect, not a reset', async () => {
    const conn = await rawConnect(port);
    conn.write(`GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n`);
    const first = await conn.response();
    expect(first.status).toBe(200);
    expect(first.headers.connection).toBe('keep-alive');
    // the same connection, now an upgrade without credentials
    const path = await createSession();
    const before = conn.received().length;
    conn.write(upgradeRequest(path));
    const ended = await conn.ended;
    const second = conn.received().slice(before);
    expect(second).toMatch(/^HTTP\/1\.1 401 /);
    expect(second.toLowerCase()).toContain('connection: close');
    expect(ended.how).toBe('end');
  });
});

describe('client faults on an open socket', () => {
  it('a message over 1 MiB closes with 1009 and logs a warning, not an error with a stack', async () => {
    const path = await createSession();
    const ws = new WebSocket(`${svc.wsBase}${path}`, { headers: { accessKey: alice.accessKey } });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    const before = lines.length;
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    ws.send(Buffer.alloc(1024 * 1024 + 1));
    expect(await closed).toBe(1009);
    await new Promise((r) => setTimeout(r, 100));
    const written = lines.slice(before).map((l) => JSON.parse(l) as { level: number; msg: string; err?: { stack?: string } });
    expect(
      written.filter((l) => l.level >= 50),
      JSON.stringify(written),
    ).toEqual([]);
    const warning = written.find((l) => l.level === 40 && /message|payload/i.test(l.msg));
    expect(warning, JSON.stringify(written)).toBeDefined();
    expect(JSON.stringify(warning)).not.toContain('    at ');
  });
});
