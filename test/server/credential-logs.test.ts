// Issue 14, "a credential in a URL is logged": whatever a query parameter is called and
// however it is encoded, and wherever in the URL a credential sits (query, path), no part of
// its secret reaches a log line, a metric or an error message, on the stream socket's
// handshake or on plain HTTP routes. The check is on the captured log lines of a real server
// built with the service's own logger (src/obs/log.ts).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capturedLogger, startService, type TestService } from '../helpers/service.js';
import { rawRequest, upgradeRequest } from '../helpers/raw-http.js';
import { generateCredential } from '../../src/core/credentials.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';

const API = '/sound_clone/api/v1';
let svc: TestService;
let alice: ProvisionedAccount;
let port: number;
let sessionPath: string;
const lines: string[] = [];

beforeAll(async () => {
  svc = await startService({ logger: capturedLogger('debug', lines) });
  port = Number(new URL(svc.baseUrl).port);
  alice = await svc.account();
  const res = await fetch(`${svc.baseUrl}${API}/stt/realtime/sessions`, {
    method: 'POST',
    headers: { accessKey: alice.accessKey, 'content-type': 'application/json', 'Idempotency-Key': `logs-${randomUUID()}` },
    body: '{}',
  });
  sessionPath = ((await res.json()) as { data: { streamUrl: string } }).data.streamUrl;
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

/** Every character percent-encoded, as a client (or an attacker probing the redaction) may. */
const encodeAll = (s: string) => [...Buffer.from(s, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');
/** Percent-decoding repeated until stable, tolerant of stray '%': what a reader of the log could recover. */
function decodeAll(s: string): string {
  for (let i = 0; i < 4; i++) {
    const next = s.replace(/%([0-9a-fA-F]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    if (next === s) break;
    s = next;
  }
  return s;
}
const secretOf = (credential: string) => credential.split('_').slice(2).join('_');

/** The URLs a careless or hostile client sends a credential in, for one credential value. */
function variants(credential: string): Array<{ name: string; path: string }> {
  const streamPathFor = (q: string) => `${sessionPath}?${q}`;
  return [
    { name: 'ws ?key=', path: streamPathFor(`key=${credential}`) },
    { name: 'ws ?api-key=', path: streamPathFor(`api-key=${credential}`) },
    { name: 'ws ?authorization=', path: streamPathFor(`authorization=${credential}`) },
    { name: 'ws ?%6Bey= (encoded name)', path: streamPathFor(`%6Bey=${credential}`) },
    { name: 'ws ?key=<all percent-encoded>', path: streamPathFor(`key=${encodeAll(credential)}`) },
    { name: 'ws ?note=<value> (no key-like name)', path: streamPathFor(`note=${credential}`) },
    { name: 'ws ?ticket=<encoded separators>', path: streamPathFor(`ticket=${credential.replaceAll('_', '%5F')}`) },
    { name: 'http ?key= on a JSON route', path: `${API}/account?key=${credential}` },
    { name: 'http ?api-key= on History', path: `${API}/stt/transcriptions?api-key=${credential}&limit=5` },
    { name: 'http credential as a path parameter', path: `${API}/stt/transcriptions/${credential}` },
    { name: 'http credential in an unknown path', path: `/${credential}/x?y=1` },
    { name: 'http encoded credential in an unknown path', path: `/${encodeAll(credential)}` },
    { name: 'http ?%61pi%5Fkey= on a POST route', path: `${API}/stt/realtime/sessions?%61pi%5Fkey=${credential}` },
  ];
}

describe('credentials in URLs', () => {
  for (const kind of ['real access key', 'shape-valid key', 'API token', 'ticket'] as const) {
    it(`never logs, counts or echoes a ${kind} in any URL variant`, async () => {
      const credential =
        kind === 'real access key'
          ? alice.accessKey
          : kind === 'API token'
            ? alice.apiToken
            : generateCredential(kind === 'ticket' ? 'tkt' : 'sk').value;
      const secret = secretOf(credential);
      for (const v of variants(credential)) {
        const before = lines.length;
        const isWs = v.name.startsWith('ws');
        const method = v.name.includes('POST') ? 'POST' : 'GET';
        const request = isWs
          ? upgradeRequest(v.path)
          : `${method} ${v.path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`;
        const res = await rawRequest(port, request);
        res.conn.destroy();
        expect(res.status, v.name).toBeGreaterThanOrEqual(400);
        expect(res.status, v.name).toBeLessThan(500);
        // The answer's message may name what was wrong, never the secret.
        expect(decodeAll(res.body), v.name).not.toContain(secret);
        // Give the "request completed" line time to be written.
        await new Promise((r) => setTimeout(r, 20));
        const written = lines.slice(before);
        expect(written.length, `${v.name}: the request was logged at all`).toBeGreaterThan(0);
        for (const line of written) expect(decodeAll(line), `${v.name}: ${line}`).not.toContain(secret);
      }
      const metrics = await (await fetch(`${svc.baseUrl}/metrics`)).text();
      expect(decodeAll(metrics)).not.toContain(secret);
    });
  }

  it('refuses a key in the socket URL as ACCESS_KEY_IN_URL, whatever the parameter is called', async () => {
    const key = generateCredential('sk').value;
    for (const q of [`key=${key}`, `api-key=x`, `Authorization=x`, `%6Bey=x`, `access_token=x`, `note=${key}`, `note=${alice.apiToken}`]) {
      const res = await rawRequest(port, upgradeRequest(`${sessionPath}?${q}`));
      res.conn.destroy();
      expect(res.status, q).toBe(401);
      expect(JSON.parse(res.body).message, q).toMatch(/^ACCESS_KEY_IN_URL: /);
    }
  });

  it('still logs the request itself: method, path and the names of the parameters', async () => {
    const before = lines.length;
    const credential = generateCredential('sk').value;
    const res = await rawRequest(port, upgradeRequest(`${sessionPath}?api-key=${credential}`));
    res.conn.destroy();
    await new Promise((r) => setTimeout(r, 20));
    const incoming = lines
      .slice(before)
      .map((l) => JSON.parse(l) as { msg: string; req?: { url: string } })
      .find((l) => l.msg === 'incoming request');
    expect(incoming?.req?.url).toContain(`${sessionPath}?api-key=`);
    expect(incoming?.req?.url).not.toContain(secretOf(credential));
  });
});
