// Voice design callbacks cannot probe the network: on a real server with the
// default setting, a callbackUrl naming loopback, private, link-local, metadata or other
// closed space is refused at create time (422 CALLBACK_URL_FORBIDDEN) in any notation; a name
// that resolves there (or rebinds there between attempts) ends FAILED with nothing sent; the
// operator's setting opens exactly what it names and never metadata; the read shows delivered
// or failed and the attempt count, never the target's answer, which goes to the server log.
import http from 'node:http';
import { Writable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createService, type Service } from '../../src/service.js';
import type { ConfigInput } from '../../src/config.js';
import { provisionAccount, type ProvisionedAccount } from '../../src/accounts/provision.js';
import type { ResolvedAddress } from '../../src/outbound/guarded-transport.js';
import { storeSettingsFor, tempDir } from '../helpers/service.js';
import { call } from '../helpers/api.js';

const DESIGN = '/sound_clone/api/v1/voices/design';

/** A receiver on 127.0.0.1 that records every request and answers from a script. */
class Receiver {
  readonly hits: Array<{ host: string | undefined; path: string | undefined }> = [];
  statuses: number[] = [];
  port = 0;
  private readonly server = http.createServer((req, res) => {
    this.hits.push({ host: req.headers.host, path: req.url });
    req.resume();
    req.on('end', () => {
      res.statusCode = this.statuses.shift() ?? 200;
      res.end('internal details: ECONNREFUSED stack trace');
    });
  });
  async start() {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as AddressInfo).port;
  }
  stop() {
    return new Promise<void>((r) => this.server.close(() => r()));
  }
}

/** A scripted resolver: per name a list of answers, one per call, the last repeating. */
function scriptedDns(answers: Record<string, string[][]>) {
  const calls: string[] = [];
  const resolve = async (hostname: string): Promise<ResolvedAddress[]> => {
    calls.push(hostname);
    const script = answers[hostname];
    if (!script) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    const n = calls.filter((c) => c === hostname).length;
    return script[Math.min(n - 1, script.length - 1)]!.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return { resolve, calls };
}

interface Server {
  service: Service;
  baseUrl: string;
  account: ProvisionedAccount;
  /** Every log line the server wrote, parsed. */
  logs: Array<Record<string, any>>;
}

const servers: Server[] = [];

/** A real service (store of the project under test) whose log lines the test can read. */
async function start(cfg: ConfigInput): Promise<Server> {
  const dataDir = tempDir();
  const store = await storeSettingsFor(dataDir);
  const logs: Array<Record<string, any>> = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line.trim()) logs.push(JSON.parse(line));
      done();
    },
  });
  const service = await createService({
    maxDecoders: 1,
    databaseUrl: store.databaseUrl,
    databasePoolSize: store.databasePoolSize,
    callbackBaseDelayMs: 50,
    callbackMaxAttempts: 2,
    ...cfg,
    host: '127.0.0.1',
    port: 0,
    dataDir,
    logger: pino({ level: 'info' }, sink),
  });
  const address = new URL(await service.listen());
  const s = {
    service,
    baseUrl: `http://127.0.0.1:${address.port}`,
    account: await provisionAccount(service.store, 'test', 100_000n),
    logs,
  };
  servers.push(s);
  return s;
}

const receiver = new Receiver();
beforeAll(async () => {
  await receiver.start();
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.service.stop()));
  await receiver.stop();
});

const create = (s: Server, callbackUrl: string) =>
  call(s.baseUrl, 'POST', DESIGN, {
    key: s.account.accessKey,
    body: { description: 'A calm woman', previewText: 'Hello there.', callbackUrl },
  });
const read = async (s: Server, id: string) => (await call(s.baseUrl, 'GET', `${DESIGN}/${id}`, { key: s.account.accessKey })).json.data;

async function until<T>(fn: () => Promise<T>, done: (v: T) => boolean, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`condition not met: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The read's callback carries the state and the count, and nothing the target said. */
function expectOnlyState(callback: Record<string, unknown>) {
  expect(Object.keys(callback).sort()).toEqual(['attempts', 'nextAttemptAt', 'state', 'url']);
}

describe('the default setting', () => {
  let s: Server;
  const dns = scriptedDns({ 'loopback.test': [['127.0.0.1']], 'rebind.test': [['127.0.0.1']] });
  beforeAll(async () => {
    s = await start({ callbackResolver: dns.resolve });
  });

  it.each([
    ['IPv4 loopback', () => `http://127.0.0.1:${receiver.port}/a`, 'loopback'],
    ['another 127/8 address, in short form', () => `http://127.1:${receiver.port}/a`, 'loopback'],
    ['decimal IPv4', () => `http://2130706433:${receiver.port}/a`, 'loopback'],
    ['IPv6 loopback', () => `http://[::1]:${receiver.port}/a`, 'loopback'],
    ['IPv4-mapped IPv6', () => `http://[::ffff:127.0.0.1]:${receiver.port}/a`, 'loopback'],
    ['localhost', () => `http://localhost:${receiver.port}/a`, 'loopback'],
    ['a private IPv4 address', () => 'http://10.1.2.3/hook', 'private'],
    ['a CGNAT address', () => 'http://100.64.0.7/hook', 'private'],
    ['a mapped private address', () => 'http://[::ffff:192.168.1.1]/hook', 'private'],
    ['a unique-local IPv6 address', () => 'http://[fd12:3456::1]/hook', 'private'],
    ['the cloud metadata address', () => 'http://169.254.169.254/latest/meta-data/', 'metadata'],
    ['the IPv6 metadata address', () => 'http://[fd00:ec2::254]/latest/meta-data/', 'metadata'],
    ['the metadata name', () => 'http://metadata.google.internal/computeMetadata/v1/', 'metadata'],
    ['a link-local IPv6 address', () => 'http://[fe80::1]/hook', 'link-local'],
    ['the unspecified address', () => `http://0.0.0.0:${receiver.port}/a`, 'unspecified'],
    ['a multicast address', () => 'http://224.0.0.251/hook', 'multicast'],
    ['the broadcast address', () => 'http://255.255.255.255/hook', 'broadcast'],
  ])('refuses %s at create time', async (_what, url, cls) => {
    const before = receiver.hits.length;
    const r = await create(s, url());
    expect(r.status, r.text).toBe(422);
    expect(r.json).toMatchObject({ code: -1 });
    expect(r.json.message).toMatch(new RegExp(`^CALLBACK_URL_FORBIDDEN: callbackUrl: .* \\(${cls}\\)`));
    await new Promise((res) => setTimeout(res, 100));
    expect(receiver.hits.length).toBe(before);
  });

  it('sends nothing to a name that resolves to loopback; the read says FAILED and no more; the log says why', async () => {
    const before = receiver.hits.length;
    const r = await create(s, `http://loopback.test:${receiver.port}/named`);
    expect(r.status, r.text).toBe(200);
    const id = r.json.data.designId as string;
    const done = await until(
      () => read(s, id),
      (x) => ['DELIVERED', 'FAILED'].includes(x.callback?.state),
    );
    expect(done.callback).toMatchObject({ state: 'FAILED', attempts: 2 });
    expectOnlyState(done.callback);
    expect(JSON.stringify(done)).not.toMatch(/loopback \(|127\.0\.0\.1|not allowed/);
    expect(receiver.hits.length).toBe(before);
    expect(dns.calls.filter((c) => c === 'loopback.test').length).toBe(2); // resolved when connecting, each attempt
    const warned = s.logs.filter((l) => l.designId === id && l.msg === 'voice design callback attempt failed');
    expect(warned).toHaveLength(2);
    expect(warned[0]).toMatchObject({ level: 40, attempt: 1, status: null, destination: `http://loopback.test:${receiver.port}/named` });
    expect(warned[0]!.error).toMatch(/127\.0\.0\.1 \(loopback\)/);
  });
});

describe('when the operator opens ranges', () => {
  it('opens exactly the listed CIDR: delivered to it by address and by name, with the name as Host', async () => {
    const dns = scriptedDns({ 'hooks.test': [['127.0.0.1']] });
    const s = await start({ callbackAllowCidrs: ['127.0.0.1/32'], callbackResolver: dns.resolve });
    const byName = await create(s, `http://hooks.test:${receiver.port}/by-name`);
    expect(byName.status, byName.text).toBe(200);
    const done = await until(
      () => read(s, byName.json.data.designId),
      (x) => ['DELIVERED', 'FAILED'].includes(x.callback?.state),
    );
    expect(done.callback).toEqual({
      url: `http://hooks.test:${receiver.port}/by-name`,
      state: 'DELIVERED',
      attempts: 1,
      nextAttemptAt: null,
    });
    expect(receiver.hits.filter((h) => h.path === '/by-name')).toEqual([{ host: `hooks.test:${receiver.port}`, path: '/by-name' }]);
    const byAddress = await create(s, `http://[::ffff:127.0.0.1]:${receiver.port}/by-address`);
    expect(byAddress.status, byAddress.text).toBe(200);
    await until(
      () => read(s, byAddress.json.data.designId),
      (x) => x.callback?.state === 'DELIVERED',
    );
    // Only that range: ::1, another loopback address and private space stay closed.
    for (const url of [`http://[::1]:${receiver.port}/x`, `http://127.0.0.2:${receiver.port}/x`, 'http://10.0.0.1/x'])
      expect((await create(s, url)).status, url).toBe(422);
  });

  it('--callback-allow-private opens private ranges but neither loopback nor metadata', async () => {
    const s = await start({ callbackAllowPrivate: true, callbackMaxAttempts: 1 });
    for (const url of ['http://10.1.2.3:9/x', 'http://[fd12::1]:9/x', 'http://192.168.7.7:9/x'])
      expect((await create(s, url)).status, url).toBe(200);
    for (const url of [
      `http://127.0.0.1:${receiver.port}/x`,
      `http://localhost:${receiver.port}/x`,
      'http://169.254.169.254/latest/meta-data/',
      'http://[fd00:ec2::254]/latest/meta-data/',
      'http://[::ffff:169.254.169.254]/',
    ]) {
      const r = await create(s, url);
      expect(r.status, url).toBe(422);
      expect(r.json.message, url).toMatch(/^CALLBACK_URL_FORBIDDEN/);
    }
    // Stop before the accepted callbacks go out to those (unrelated) private addresses.
    servers.splice(servers.indexOf(s), 1);
    await s.service.stop();
  });

  it('cannot be rebound: a name whose answer moves from an open address to a closed one never reaches it', async () => {
    // 127.0.0.2 is open (nothing listens there on the receiver's port); 127.0.0.1, where the
    // receiver listens, is closed. The answer changes after the first resolution.
    const dns = scriptedDns({ 'rebind.test': [['127.0.0.2'], ['127.0.0.1']] });
    const s = await start({ callbackAllowCidrs: ['127.0.0.2/32'], callbackResolver: dns.resolve, callbackMaxAttempts: 3 });
    const before = receiver.hits.length;
    const r = await create(s, `http://rebind.test:${receiver.port}/rebind`);
    expect(r.status, r.text).toBe(200);
    const done = await until(
      () => read(s, r.json.data.designId),
      (x) => ['DELIVERED', 'FAILED'].includes(x.callback?.state),
    );
    expect(done.callback).toMatchObject({ state: 'FAILED', attempts: 3 });
    expect(receiver.hits.length).toBe(before);
    expect(dns.calls).toEqual(['rebind.test', 'rebind.test', 'rebind.test']);
    // The attempt is stored (the read shows FAILED) before it is logged: wait for the third line.
    const failures = () => s.logs.filter((l) => l.msg === 'voice design callback attempt failed').map((l) => l.error as string);
    const errors = await until(
      async () => failures(),
      (e) => e.length === 3,
    );
    expect(errors[0]).toMatch(/^connection failed: .*ECONNREFUSED/); // attempt 1 went to 127.0.0.2
    expect(errors.slice(1)).toEqual([
      expect.stringMatching(/127\.0\.0\.1 \(loopback\)/),
      expect.stringMatching(/127\.0\.0\.1 \(loopback\)/),
    ]);
  });
});

describe('the read', () => {
  it("shows PENDING/DELIVERED/FAILED and the count, never the target's status or answer", async () => {
    const s = await start({ callbackAllowCidrs: ['127.0.0.1/32'], callbackMaxAttempts: 3, callbackBaseDelayMs: 600 });
    receiver.statuses.push(503);
    const r = await create(s, `http://127.0.0.1:${receiver.port}/answers`);
    const id = r.json.data.designId as string;
    const pending = await until(
      () => read(s, id),
      (x) => x.callback?.attempts >= 1,
    );
    expect(pending.callback.state).toBe('PENDING');
    expectOnlyState(pending.callback);
    expect(JSON.stringify(pending)).not.toMatch(/503|HTTP|ECONNREFUSED|internal details/);
    const done = await until(
      () => read(s, id),
      (x) => ['DELIVERED', 'FAILED'].includes(x.callback?.state),
    );
    expect(done.callback).toMatchObject({ state: 'DELIVERED', attempts: 2 });
    expectOnlyState(done.callback);
    // The operator sees the answer in the log.
    expect(s.logs.find((l) => l.designId === id && l.msg === 'voice design callback attempt failed')).toMatchObject({
      level: 40,
      status: 503,
      error: 'HTTP 503',
    });
  });
});
