// What a key holder learns from the server's outbound requests (docs/security.md, "Outbound
// requests"), probed as an attacker mapping the internal network would, through the real
// server: the webhook delivery log and `POST /v1/listen {url}` say delivered, refused by policy
// or failed, nothing more; a name that resolves to a closed address reads exactly like one
// that does not resolve; no address, errno or response body reaches the client (the server log
// keeps them). IPv6 spellings of loopback and metadata are refused when the URL is given, and a
// loopback refusal names the flag that opens it.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capturedLogger, startService, type TestService } from '../helpers/service.js';
import { call } from '../helpers/api.js';
import { createSession, streamAndClose } from '../helpers/live.js';
import type { ResolvedAddress } from '../../src/outbound/guarded-transport.js';

const ENDPOINTS = '/sound_clone/api/v1/webhooks/endpoints';
const INTERNAL_BODY = 'internal-service-stack-trace: db password=hunter2 at 10.9.8.7';

// The scripted DNS: `vm.internal` resolves to a private address the policy keeps closed,
// anything else does not resolve.
const resolver = async (hostname: string): Promise<ResolvedAddress[]> => {
  if (hostname === 'vm.internal') return [{ address: '10.0.0.5', family: 4 }];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
};

let svc: TestService;
let internal: http.Server;
let internalPort = 0;
let closedPort = 0;
const logLines: string[] = [];
const previousBase = process.env.SCRIBED_WEBHOOK_RETRY_BASE_MS;

beforeAll(async () => {
  process.env.SCRIBED_WEBHOOK_RETRY_BASE_MS = '60000';
  // An "internal service" on the one loopback address the operator opened, answering 500 with
  // words no client should read.
  internal = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.statusCode = 500;
      res.end(INTERNAL_BODY);
    });
  });
  await new Promise<void>((r) => internal.listen(0, '127.0.0.1', r));
  internalPort = (internal.address() as AddressInfo).port;
  // A port nothing listens on (ECONNREFUSED).
  const probe = http.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  closedPort = (probe.address() as AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));
  svc = await startService({ callbackAllowCidrs: ['127.0.0.1/32'], callbackResolver: resolver, logger: capturedLogger('info', logLines) });
}, 60_000);
afterAll(async () => {
  await svc?.stop();
  await new Promise<void>((r) => internal.close(() => r()));
  if (previousBase === undefined) delete process.env.SCRIBED_WEBHOOK_RETRY_BASE_MS;
  else process.env.SCRIBED_WEBHOOK_RETRY_BASE_MS = previousBase;
});

describe('the webhook delivery log (F3)', () => {
  it('says failed for a refused port, an internal name, a name that does not resolve and an error page alike; the server log keeps the details', async () => {
    const a = await svc.account();
    const targets = {
      closedPort: `http://127.0.0.1:${closedPort}/hook`,
      internalName: `http://vm.internal:18600/hook`,
      noSuchName: `http://nowhere.internal:18600/hook`,
      errorPage: `http://127.0.0.1:${internalPort}/hook`,
    };
    const ids: Record<string, string> = {};
    for (const [name, url] of Object.entries(targets)) {
      const created = await call(svc.baseUrl, 'POST', ENDPOINTS, { key: a.accessKey, body: { url, events: ['transcription.completed'] } });
      expect(created.status, JSON.stringify(created.json)).toBe(201);
      ids[name] = created.json.data.id;
    }
    const s = await createSession(svc, a.accessKey, {});
    await streamAndClose(svc, a.accessKey, s.streamUrl, new Int16Array(8000));
    const seen: Record<string, any> = {};
    const deadline = Date.now() + 20_000;
    for (const [name, id] of Object.entries(ids)) {
      for (;;) {
        const d = (await call(svc.baseUrl, 'GET', `${ENDPOINTS}/${id}/deliveries`, { key: a.accessKey })).json.data.deliveries[0];
        if (d?.attempts >= 1) {
          seen[name] = d;
          break;
        }
        if (Date.now() > deadline) throw new Error(`no attempt at ${name}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    for (const name of ['closedPort', 'internalName', 'noSuchName']) {
      expect(seen[name], name).toMatchObject({ lastError: 'failed', lastStatusCode: null, lastResponse: null });
      expect(seen[name].attemptLog[0], name).toMatchObject({ statusCode: null, error: 'failed' });
    }
    // An answer's status is the receiver contract (2xx delivered, 410 disables); its body is not.
    expect(seen.errorPage).toMatchObject({ lastStatusCode: 500, lastResponse: null });
    const shown = JSON.stringify(seen);
    expect(
      shown.match(
        /.{0,60}(?:127\.0\.0\.1|10\.0\.0\.5|ECONNREFUSED|ENOTFOUND|resolved|loopback|private|internal-service|hunter2).{0,40}/,
      )?.[0],
    ).toBeUndefined();
    // The operator's log has what happened.
    const log = logLines.join('\n');
    expect(log).toMatch(/ECONNREFUSED/);
    expect(log).toMatch(/vm\.internal:18600 resolved to 10\.0\.0\.5 \(private\)/);
    expect(log).toMatch(/ENOTFOUND nowhere\.internal/);
    expect(log).toMatch(/internal-service-stack-trace/);
  });

  it('refuses IPv6 spellings of loopback and metadata when the endpoint is created; a loopback refusal names the flag that opens it', async () => {
    const a = await svc.account();
    for (const url of [
      'http://[::ffff:0:7f00:2]/hook',
      'http://[::ffff:0:a9fe:a9fe]/latest/meta-data',
      'http://[2001::ffff:5601:5601]/',
      'http://[64:ff9b:1::7f00:2]/',
    ]) {
      const r = await call(svc.baseUrl, 'POST', ENDPOINTS, { key: a.accessKey, body: { url, events: ['transcription.completed'] } });
      expect(r.status, url).toBe(422);
      expect(r.json.message, url).toMatch(/^WEBHOOK_URL_FORBIDDEN/);
    }
    const local = await call(svc.baseUrl, 'POST', ENDPOINTS, {
      key: a.accessKey,
      body: { url: 'http://127.0.0.2:8081/hook', events: ['transcription.completed'] },
    });
    expect(local.status).toBe(422);
    expect(local.json.message).toMatch(/--callback-allow-cidr 127\.0\.0\.2\/32/);
    const metadata = await call(svc.baseUrl, 'POST', ENDPOINTS, {
      key: a.accessKey,
      body: { url: 'http://169.254.169.254/', events: ['transcription.completed'] },
    });
    expect(metadata.json.message).toMatch(/no setting opens it/);
  });
});

describe('POST /v1/listen {url} (F3, F4)', () => {
  async function listen(key: string, url: string) {
    const res = await fetch(`${svc.baseUrl}/v1/listen`, {
      method: 'POST',
      headers: { authorization: `Token ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url }),
    });
    const body = (await res.json()) as Record<string, unknown>;
    delete body.request_id;
    return { status: res.status, body };
  }

  it('a name resolving to a closed address, one that does not resolve, a refused port and an error page read alike', async () => {
    const a = await svc.account(1_000n);
    const answers = [
      await listen(a.accessKey, 'http://vm.internal:18600/a.wav'),
      await listen(a.accessKey, 'http://nowhere.internal:18600/a.wav'),
      await listen(a.accessKey, `http://127.0.0.1:${closedPort}/a.wav`),
    ];
    for (const x of answers) expect(x).toEqual(answers[0]);
    expect(answers[0]!.status).toBe(400);
    expect(JSON.stringify(answers)).not.toMatch(/ENOTFOUND|ECONNREFUSED|10\.0\.0\.5|resolved|getaddrinfo/);
  });

  it('IPv4-translated loopback and metadata are refused by the URL alone, with nothing sent', async () => {
    const a = await svc.account(1_000n);
    for (const url of ['http://[::ffff:0:7f00:2]/a.wav', 'http://[::ffff:0:a9fe:a9fe]/latest']) {
      const r = await listen(a.accessKey, url);
      expect(r.status, url).toBe(400);
      expect(r.body.err_code, url).toBe('REMOTE_CONTENT_FORBIDDEN');
    }
  });
});
