// Signed webhooks (docs/webhooks.md) on a real server and store: a real-time session
// closed over its socket raises transcription.completed through the outbox, one whose socket
// is lost raises session.paused; the delivery
// verifies with the standardwebhooks package under the endpoint's secret and not under
// another; a receiver answering 500 twice gets the same webhook-id a third time and the log
// shows the three attempts; destinations the outbound policy closes are refused; another
// account's endpoint reads as missing; the limits answer with their codes.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { startService, type TestService } from '../helpers/service.js';
import { call } from '../helpers/api.js';
import { createSession, streamAndClose } from '../helpers/live.js';
import { StreamClient } from '../helpers/stream-client.js';
import type { ResolvedAddress } from '../../src/outbound/guarded-transport.js';

const ENDPOINTS = '/sound_clone/api/v1/webhooks/endpoints';

interface Hit {
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A receiver on 127.0.0.1 answering from a script (200 once the script runs out). */
class Receiver {
  readonly hits: Hit[] = [];
  statuses: number[] = [];
  port = 0;
  private waiters: Array<() => void> = [];
  private readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      this.hits.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.statusCode = this.statuses.shift() ?? 200;
      res.end(res.statusCode === 200 ? 'ok' : 'receiver says no '.repeat(100));
      for (const w of this.waiters.splice(0)) w();
    });
  });
  async start() {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }
  get url() {
    return `http://127.0.0.1:${this.port}/hook`;
  }
  async waitFor(n: number, timeoutMs = 20_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (this.hits.length < n) {
      if (Date.now() > until) throw new Error(`receiver got ${this.hits.length} of ${n} requests`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 200);
      });
    }
  }
  stop() {
    return new Promise<void>((r) => this.server.close(() => r()));
  }
}

const resolver = async (hostname: string): Promise<ResolvedAddress[]> => {
  if (hostname === 'rebind.example') return [{ address: '169.254.169.254', family: 4 }];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
};

/** Close a real-time session over its socket: its History row completes. */
async function closeASession(svc: TestService, accessKey: string): Promise<string> {
  const s = await createSession(svc, accessKey, {});
  await streamAndClose(svc, accessKey, s.streamUrl, new Int16Array(8000));
  return s.transcriptionId;
}

describe('webhooks, private destinations allowed by the operator', () => {
  let svc: TestService;
  let receiver: Receiver;
  const previousBase = process.env.SCRIBED_WEBHOOK_RETRY_BASE_MS;

  beforeAll(async () => {
    process.env.SCRIBED_WEBHOOK_RETRY_BASE_MS = '100';
    receiver = await new Receiver().start();
    svc = await startService({ callbackAllowPrivate: true, callbackAllowCidrs: ['127.0.0.1/32'], callbackResolver: resolver });
  });
  afterAll(async () => {
    await svc?.stop();
    await receiver?.stop();
    if (previousBase === undefined) delete process.env.SCRIBED_WEBHOOK_RETRY_BASE_MS;
    else process.env.SCRIBED_WEBHOOK_RETRY_BASE_MS = previousBase;
  });

  it('delivers transcription.completed signed with Standard Webhooks; a wrong secret does not verify', async () => {
    const a = await svc.account();
    const created = await call(svc.baseUrl, 'POST', ENDPOINTS, {
      key: a.accessKey,
      body: { url: receiver.url, events: ['transcription.completed'], includeTranscript: true },
    });
    expect(created.status).toBe(201);
    const ep = created.json.data;
    expect(ep.id).toMatch(/^whe_/);
    expect(ep.secret).toMatch(/^whsec_[A-Za-z0-9+/=]+$/);
    const listed = await call(svc.baseUrl, 'GET', ENDPOINTS, { key: a.accessKey });
    expect(listed.json.data.endpoints).toHaveLength(1);
    expect(listed.json.data.endpoints[0].secret).toBeUndefined();

    const start = receiver.hits.length;
    const transcriptionId = await closeASession(svc, a.accessKey);
    await receiver.waitFor(start + 1);
    const hit = receiver.hits[start]!;
    const headers = {
      'webhook-id': String(hit.headers['webhook-id']),
      'webhook-timestamp': String(hit.headers['webhook-timestamp']),
      'webhook-signature': String(hit.headers['webhook-signature']),
    };
    expect(headers['webhook-id']).toMatch(/^msg_/);
    expect(headers['webhook-signature']).toMatch(/^v1,/);
    const event = new Webhook(ep.secret).verify(hit.body, headers) as any;
    expect(event.type).toBe('transcription.completed');
    expect(event.data.transcriptionId).toBe(transcriptionId);
    expect(event.data.status).toBe('COMPLETED');
    expect(event.data.links.transcript).toBe(`/sound_clone/api/v1/stt/transcriptions/${transcriptionId}/transcript`);
    expect(typeof event.data.transcript.text).toBe('string');
    const other = `whsec_${Buffer.alloc(24, 7).toString('base64')}`;
    expect(() => new Webhook(other).verify(hit.body, headers)).toThrow();
    expect(() => new Webhook(ep.secret).verify(hit.body.replace('COMPLETED', 'FAILED'), headers)).toThrow();

    // After a rotation both secrets sign during the overlap.
    const rotated = await call(svc.baseUrl, 'POST', `${ENDPOINTS}/${ep.id}/rotate-secret`, { key: a.accessKey });
    expect(rotated.status).toBe(200);
    expect(rotated.json.data.secret).not.toBe(ep.secret);
    const before = receiver.hits.length;
    await closeASession(svc, a.accessKey);
    await receiver.waitFor(before + 1);
    const h2 = receiver.hits[before]!;
    const hdr2 = {
      'webhook-id': String(h2.headers['webhook-id']),
      'webhook-timestamp': String(h2.headers['webhook-timestamp']),
      'webhook-signature': String(h2.headers['webhook-signature']),
    };
    expect(new Webhook(rotated.json.data.secret).verify(h2.body, hdr2)).toBeTruthy();
    expect(new Webhook(ep.secret).verify(h2.body, hdr2)).toBeTruthy();
    await call(svc.baseUrl, 'DELETE', `${ENDPOINTS}/${ep.id}`, { key: a.accessKey });
  });

  it('retries a 500 twice with the same webhook-id and logs the three attempts', async () => {
    const a = await svc.account();
    const ep = (
      await call(svc.baseUrl, 'POST', ENDPOINTS, { key: a.accessKey, body: { url: receiver.url, events: ['transcription.completed'] } })
    ).json.data;
    const start = receiver.hits.length;
    receiver.statuses = [500, 500];
    await closeASession(svc, a.accessKey);
    await receiver.waitFor(start + 3);
    const ids = receiver.hits.slice(start, start + 3).map((h) => h.headers['webhook-id']);
    expect(new Set(ids).size).toBe(1);
    // each attempt verifies on its own (a fresh timestamp, the same id)
    for (const h of receiver.hits.slice(start, start + 3)) {
      new Webhook(ep.secret).verify(h.body, {
        'webhook-id': String(h.headers['webhook-id']),
        'webhook-timestamp': String(h.headers['webhook-timestamp']),
        'webhook-signature': String(h.headers['webhook-signature']),
      });
    }
    let d: any;
    for (let i = 0; i < 50; i++) {
      d = (await call(svc.baseUrl, 'GET', `${ENDPOINTS}/${ep.id}/deliveries`, { key: a.accessKey })).json.data.deliveries[0];
      if (d?.status === 'DELIVERED') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(d.id).toBe(ids[0]);
    expect(d.status).toBe('DELIVERED');
    expect(d.attempts).toBe(3);
    expect(d.attemptLog.map((x: any) => x.statusCode)).toEqual([500, 500, 200]);
    expect(d.lastResponse).toBeNull(); // the receiver's words stay in the server log

    // manual retry sends it once more, same id
    const again = await call(svc.baseUrl, 'POST', `/sound_clone/api/v1/webhooks/deliveries/${d.id}/retry`, { key: a.accessKey });
    expect(again.status).toBe(200);
    await receiver.waitFor(start + 4);
    expect(receiver.hits[start + 3]!.headers['webhook-id']).toBe(d.id);
    await call(svc.baseUrl, 'DELETE', `${ENDPOINTS}/${ep.id}`, { key: a.accessKey });
  });

  it('delivers session.paused when a socket is lost without close', async () => {
    const a = await svc.account();
    const ep = (await call(svc.baseUrl, 'POST', ENDPOINTS, { key: a.accessKey, body: { url: receiver.url, events: ['session.paused'] } }))
      .json.data;
    const start = receiver.hits.length;
    const s = await createSession(svc, a.accessKey, {});
    const client = await StreamClient.connect(`${svc.wsBase}${s.streamUrl}`, { accessKey: a.accessKey });
    await client.next('ready');
    client.audio(1, 0, Buffer.alloc(3200));
    await client.next('ack', (e) => e.sampleOffset === 1600);
    client.terminate();
    await receiver.waitFor(start + 1);
    const hit = receiver.hits[start]!;
    const event = new Webhook(ep.secret).verify(hit.body, {
      'webhook-id': String(hit.headers['webhook-id']),
      'webhook-timestamp': String(hit.headers['webhook-timestamp']),
      'webhook-signature': String(hit.headers['webhook-signature']),
    }) as any;
    expect(event).toMatchObject({ type: 'session.paused', data: { sessionId: s.sessionId, status: 'PAUSED' } });
    await call(svc.baseUrl, 'DELETE', `${ENDPOINTS}/${ep.id}`, { key: a.accessKey });
  });

  it('disables an endpoint that answers 410, with the reason shown', async () => {
    const a = await svc.account();
    const ep = (
      await call(svc.baseUrl, 'POST', ENDPOINTS, { key: a.accessKey, body: { url: receiver.url, events: ['transcription.completed'] } })
    ).json.data;
    const start = receiver.hits.length;
    receiver.statuses = [410];
    await closeASession(svc, a.accessKey);
    await receiver.waitFor(start + 1);
    let e: any;
    for (let i = 0; i < 50; i++) {
      e = (await call(svc.baseUrl, 'GET', `${ENDPOINTS}/${ep.id}`, { key: a.accessKey })).json.data;
      if (!e.enabled) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(e.enabled).toBe(false);
    expect(e.disabledReason).toMatch(/410/);
  });

  it('never connects to a name that resolves to a closed address (link-local via DNS)', async () => {
    // the operator's settings never open link-local or metadata space: the name resolves there, nothing is sent
    const a = await svc.account();
    const ep = (
      await call(svc.baseUrl, 'POST', ENDPOINTS, {
        key: a.accessKey,
        body: { url: `http://rebind.example:${receiver.port}/x`, events: ['transcription.completed'] },
      })
    ).json.data;
    const start = receiver.hits.length;
    await closeASession(svc, a.accessKey);
    let d: any;
    for (let i = 0; i < 100; i++) {
      d = (await call(svc.baseUrl, 'GET', `${ENDPOINTS}/${ep.id}/deliveries`, { key: a.accessKey })).json.data.deliveries[0];
      if (d?.status === 'FAILED') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(d.status).toBe('FAILED');
    expect(d.lastError).toBe('failed'); // why (the address it resolved to) is in the server log only
    expect(receiver.hits.length).toBe(start);
  });

  it("reads another account's endpoint as missing and answers the limits with their codes", async () => {
    const a = await svc.account();
    const b = await svc.account();
    const ep = (await call(svc.baseUrl, 'POST', ENDPOINTS, { key: a.accessKey, body: { url: receiver.url, events: ['call.completed'] } }))
      .json.data;
    for (const [method, path] of [
      ['GET', `${ENDPOINTS}/${ep.id}`],
      ['PATCH', `${ENDPOINTS}/${ep.id}`],
      ['DELETE', `${ENDPOINTS}/${ep.id}`],
      ['POST', `${ENDPOINTS}/${ep.id}/rotate-secret`],
      ['GET', `${ENDPOINTS}/${ep.id}/deliveries`],
    ] as const) {
      const r = await call(svc.baseUrl, method, path, { key: b.accessKey, ...(method === 'PATCH' ? { body: { enabled: false } } : {}) });
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.json.message).toMatch(/^NOT_FOUND/);
    }
    const long = await call(svc.baseUrl, 'POST', ENDPOINTS, {
      key: a.accessKey,
      body: { url: `https://example.com/${'a'.repeat(2100)}`, events: ['call.completed'] },
    });
    expect(long.status).toBe(422);
    expect(long.json).toMatchObject({ code: -1 });
    expect(long.json.message).toMatch(/^WEBHOOK_URL_TOO_LONG/);
    const bad = await call(svc.baseUrl, 'POST', ENDPOINTS, { key: a.accessKey, body: { url: receiver.url, events: ['nope'] } });
    expect(bad.status).toBe(422);
    for (let i = 1; i < 20; i++) {
      expect(
        (await call(svc.baseUrl, 'POST', ENDPOINTS, { key: a.accessKey, body: { url: receiver.url, events: ['call.completed'] } })).status,
      ).toBe(201);
    }
    const over = await call(svc.baseUrl, 'POST', ENDPOINTS, { key: a.accessKey, body: { url: receiver.url, events: ['call.completed'] } });
    expect(over.status).toBe(409);
    expect(over.json.message).toMatch(/^WEBHOOK_ENDPOINT_LIMIT/);
  });
});

describe('webhooks, default outbound policy', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService({});
  });
  afterAll(async () => svc?.stop());

  it('refuses link-local, metadata, private and loopback destinations', async () => {
    const a = await svc.account();
    for (const url of [
      'http://169.254.169.254/latest/meta-data',
      'http://[fe80::1]/x',
      'http://metadata.google.internal/x',
      'http://10.0.0.5/x',
      'http://192.168.1.1/x',
      'http://127.0.0.1:8080/x',
      'http://2130706433/x',
      'http://localhost/x',
      'http://[::1]/x',
    ]) {
      const r = await call(svc.baseUrl, 'POST', ENDPOINTS, { key: a.accessKey, body: { url, events: ['transcription.completed'] } });
      expect(r.status, url).toBe(422);
      expect(r.json.message, url).toMatch(/^WEBHOOK_URL_FORBIDDEN/);
    }
    expect(
      (
        await call(svc.baseUrl, 'POST', ENDPOINTS, {
          key: a.accessKey,
          body: { url: 'https://hooks.example.com/x', events: ['transcription.completed'] },
        })
      ).status,
    ).toBe(201);
  });
});
