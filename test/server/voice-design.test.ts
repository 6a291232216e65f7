// Voice design through HTTP against a real server: espeak-ng preview synthesis, signed
// callbacks delivered to a real local HTTP receiver (retries with backoff, visible
// delivery state, exhaustion), save as a custom voice, ownership.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secondConnection, startService, tempDir, type TestService } from '../helpers/service.js';
import { call } from '../helpers/api.js';
import { verifyCallback } from '../../src/core/callback-signature.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';

const DESIGN = '/sound_clone/api/v1/voices/design';
/** The receiver listens on loopback, which callbacks reach only when the operator opens it. */
const LOOPBACK = '127.0.0.1/32';
let svc: TestService;
let alice: ProvisionedAccount;
let bob: ProvisionedAccount;

interface Delivery {
  path: string;
  body: string;
  signature: string;
  deliveryId: string;
  attempt: string;
  at: number;
}

/** A real HTTP receiver: answers each path with a scripted sequence of statuses. */
class Receiver {
  readonly deliveries: Delivery[] = [];
  private readonly scripts = new Map<string, number[]>();
  private server!: http.Server;
  base = '';

  async start() {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.deliveries.push({
          path: req.url!,
          body: Buffer.concat(chunks).toString('utf8'),
          signature: String(req.headers['x-scribed-signature']),
          deliveryId: String(req.headers['x-scribed-delivery-id']),
          attempt: String(req.headers['x-scribed-delivery-attempt']),
          at: Date.now(),
        });
        const script = this.scripts.get(req.url!) ?? [];
        res.statusCode = script.shift() ?? 200;
        res.end('ok');
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  url(path: string, statuses: number[] = []) {
    this.scripts.set(path, [...statuses]);
    return `${this.base}${path}`;
  }
  for(path: string) {
    return this.deliveries.filter((d) => d.path === path);
  }
  stop() {
    return new Promise<void>((r) => this.server.close(() => r()));
  }
}

const receiver = new Receiver();

beforeAll(async () => {
  await receiver.start();
  svc = await startService({ callbackBaseDelayMs: 150, callbackMaxAttempts: 3, callbackAllowCidrs: [LOOPBACK] });
  alice = await svc.account();
  bob = await svc.account();
});
afterAll(async () => {
  await svc?.stop();
  await receiver.stop();
});

const api = (method: string, path: string, opts: Parameters<typeof call>[3] = {}) =>
  call(svc.baseUrl, method, path, { key: alice.accessKey, ...opts });

async function startDesign(body: Record<string, unknown>) {
  const r = await api('POST', DESIGN, {
    body: { description: 'A calm British woman', previewText: 'Hello there, this is a preview of my new voice.', ...body },
  });
  expect(r.status, r.text).toBe(200);
  return r.json.data as { designId: string; status: string; callbackSecret: string | null };
}

async function until<T>(fn: () => Promise<T>, done: (v: T) => boolean, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`condition not met: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
const read = async (id: string) => (await api('GET', `${DESIGN}/${id}`)).json.data;

describe('design', () => {
  it('synthesizes a real speech preview with parameters from the description', async () => {
    const d = await startDesign({ description: 'A deep, slow British man' });
    expect(d.designId).toMatch(/^vd_/);
    expect(d.status).toBe('PENDING');
    const done = await until(
      () => read(d.designId),
      (x) => x.status !== 'PENDING',
    );
    expect(done.status).toBe('COMPLETED');
    expect(done.parameters).toMatchObject({ voice: 'en-gb+m3' });
    expect(done.parameters.pitch).toBeLessThan(45);
    expect(done.parameters.speed).toBeLessThan(165);
    const res = await fetch(`${svc.baseUrl}${done.preview.url}`, { headers: { accessKey: alice.accessKey } });
    expect(res.headers.get('content-type')).toBe('audio/wav');
    const wav = Buffer.from(await res.arrayBuffer());
    expect(wav.length).toBe(done.preview.fileSize);
    expect(wav.subarray(0, 4).toString('ascii')).toBe('RIFF');
    const rate = wav.readUInt32LE(24);
    const pcm = wav.subarray(44);
    const seconds = pcm.length / 2 / rate;
    expect(seconds).toBeGreaterThan(1.5); // ten words of speech
    let sum = 0;
    for (let i = 0; i + 1 < pcm.length; i += 2) sum += pcm.readInt16LE(i) ** 2;
    expect(Math.sqrt(sum / (pcm.length / 2))).toBeGreaterThan(300); // not silence
  });

  it('refuses a missing description and a non-http callbackUrl', async () => {
    expect((await api('POST', DESIGN, { body: { previewText: 'hi' } })).status).toBe(422);
    expect((await api('POST', DESIGN, { body: { description: 'x', previewText: 'hi', callbackUrl: 'ftp://example.com/x' } })).status).toBe(
      422,
    );
  });

  it("reads another account's design as not found", async () => {
    const d = await startDesign({});
    expect((await api('GET', `${DESIGN}/${d.designId}`, { key: bob.accessKey })).status).toBe(404);
  });
});

describe('callbacks', () => {
  it('delivers {designId, ...} signed with the design callbackSecret, and shows DELIVERED', async () => {
    const url = receiver.url('/ok');
    const d = await startDesign({ callbackUrl: url });
    expect(d.callbackSecret).toMatch(/^cbs_/);
    const done = await until(
      () => read(d.designId),
      (x) => x.callback?.state === 'DELIVERED',
    );
    expect(done.callback).toEqual({ url, state: 'DELIVERED', attempts: 1, nextAttemptAt: null });
    const [delivery] = receiver.for('/ok');
    const body = JSON.parse(delivery!.body);
    expect(body).toMatchObject({ designId: d.designId, status: 'COMPLETED' });
    expect(verifyCallback(d.callbackSecret!, delivery!.signature, delivery!.body, Math.floor(Date.now() / 1000))).toBe(true);
    expect(
      verifyCallback(d.callbackSecret!, delivery!.signature, delivery!.body.replace('COMPLETED', 'FAILED'), Math.floor(Date.now() / 1000)),
    ).toBe(false);
  });

  it('retries failures with growing delays until a 2xx', async () => {
    const d = await startDesign({ callbackUrl: receiver.url('/flaky', [500, 503]) });
    const done = await until(
      () => read(d.designId),
      (x) => x.callback?.state === 'DELIVERED',
    );
    expect(done.callback).toMatchObject({ state: 'DELIVERED', attempts: 3 });
    const times = receiver.for('/flaky').map((x) => x.at);
    expect(times).toHaveLength(3);
    // One delivery id for every attempt of the design's callback, numbered attempts.
    expect(receiver.for('/flaky').map((x) => [x.deliveryId, x.attempt])).toEqual([
      [d.designId, '1'],
      [d.designId, '2'],
      [d.designId, '3'],
    ]);
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(140); // 150 ms
    expect(times[2]! - times[1]!).toBeGreaterThanOrEqual(290); // then 300 ms
  });

  it('shows the pending retry while it waits', async () => {
    const d = await startDesign({ callbackUrl: receiver.url('/once', [500]) });
    const pending = await until(
      () => read(d.designId),
      (x) => x.callback?.attempts === 1,
    );
    expect(pending.callback).toMatchObject({ state: 'PENDING' });
    expect(pending.callback.nextAttemptAt).not.toBeNull();
  });

  it('gives up after the attempt limit and shows FAILED', async () => {
    const d = await startDesign({ callbackUrl: receiver.url('/down', [500, 500, 500, 500]) });
    const done = await until(
      () => read(d.designId),
      (x) => x.callback?.state === 'FAILED',
    );
    expect(done.callback).toMatchObject({ state: 'FAILED', attempts: 3 });
    expect(receiver.for('/down')).toHaveLength(3);
  });

  it('counts a connection failure as a failed attempt, without saying what failed', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const d = await startDesign({ callbackUrl: `http://127.0.0.1:${port}/gone` });
    const x = await until(
      () => read(d.designId),
      (v) => v.callback?.attempts >= 1,
    );
    expect(Object.keys(x.callback).sort()).toEqual(['attempts', 'nextAttemptAt', 'state', 'url']);
    expect(JSON.stringify(x)).not.toMatch(/ECONNREFUSED|connection failed|refused/i);
  });
});

describe('save', () => {
  it('saves a completed design as a custom voice with its preview as recording', async () => {
    const d = await startDesign({});
    await until(
      () => read(d.designId),
      (x) => x.status === 'COMPLETED',
    );
    const r = await api('POST', `${DESIGN}/save`, { body: { name: 'x'.repeat(32), designId: d.designId } });
    expect(r.json.code).toBe(1);
    expect(r.json.data.id).toMatch(/^vc_/);
    const voices = (await api('GET', '/sound_clone/api/v1/voices')).json.data;
    expect(voices.find((v: any) => v.id === r.json.data.id)).toMatchObject({
      type: 'designed',
      feature: 'text-to-speech',
      channel: 'web',
      fileCount: 1,
    });
    const again = await api('POST', `${DESIGN}/save`, { body: { name: 'other', designId: d.designId } });
    expect(again.json.data.id).toBe(r.json.data.id);
  });

  it('refuses a design that has not completed with 409', async () => {
    // A PENDING design row (its job not started), as it is while espeak-ng runs.
    const pending = await svc.service.store.createVoiceDesign({
      id: 'vd_0000000000pending000',
      accountId: alice.accountId,
      description: 'x',
      previewText: 'y',
      callbackUrl: null,
      params: {},
      createdAt: new Date().toISOString(),
    });
    const r = await api('POST', `${DESIGN}/save`, { body: { name: 'early', designId: pending.id } });
    expect(r.status).toBe(409);
    expect(r.json.message).toMatch(/^VOICE_DESIGN_NOT_READY/);
  });

  it('refuses a name of 33 characters', async () => {
    const d = await startDesign({});
    await until(
      () => read(d.designId),
      (x) => x.status === 'COMPLETED',
    );
    const r = await api('POST', `${DESIGN}/save`, { body: { name: 'x'.repeat(33), designId: d.designId } });
    expect(r.status).toBe(422);
  });

  it("fails for an unknown or another account's designId", async () => {
    const d = await startDesign({});
    await until(
      () => read(d.designId),
      (x) => x.status === 'COMPLETED',
    );
    expect((await api('POST', `${DESIGN}/save`, { key: bob.accessKey, body: { name: 'mine', designId: d.designId } })).status).toBe(404);
    expect((await api('POST', `${DESIGN}/save`, { body: { name: 'mine', designId: 'vd_00000000000000000000' } })).status).toBe(404);
  });
});

describe('preview publish failure', () => {
  it('leaves the design FAILED with no preview when its file cannot be stored, and delivers that', async () => {
    // SQLite: every `recordings/<aa>` directory is taken by a plain file, so the rename into
    // the content-addressed store fails after the design row was committed.
    const dataDir = tempDir();
    fs.mkdirSync(path.join(dataDir, 'recordings'), { recursive: true });
    for (let i = 0; i < 256; i++) fs.writeFileSync(path.join(dataDir, 'recordings', i.toString(16).padStart(2, '0')), '');
    const broken = await startService({ dataDir, callbackBaseDelayMs: 150, callbackMaxAttempts: 3, callbackAllowCidrs: [LOOPBACK] });
    if (broken.storeSettings.databaseUrl) {
      // PostgreSQL keeps previews in the store, not the data dir: its blobs table refuses rows.
      const db = await secondConnection(broken);
      try {
        await db.db.run(
          "CREATE FUNCTION refuse_blob() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no room for blobs'; END $$",
        );
        await db.db.run('CREATE TRIGGER refuse_blob BEFORE INSERT ON blobs FOR EACH ROW EXECUTE FUNCTION refuse_blob()');
      } finally {
        await db.close();
      }
    }
    try {
      const acct = await broken.account();
      const get = async (id: string) => (await call(broken.baseUrl, 'GET', `${DESIGN}/${id}`, { key: acct.accessKey })).json.data;
      const url = receiver.url('/unstored');
      const d = (
        await call(broken.baseUrl, 'POST', DESIGN, {
          key: acct.accessKey,
          body: { description: 'a woman', previewText: 'Hello.', callbackUrl: url },
        })
      ).json.data;
      const done = await until(
        () => get(d.designId),
        (x) => x.callback?.state === 'DELIVERED',
        15_000,
      );
      expect(done).toMatchObject({ status: 'FAILED', preview: null, error: 'storing the preview failed' });
      expect(JSON.parse(receiver.for('/unstored')[0]!.body)).toMatchObject({ designId: d.designId, status: 'FAILED', preview: null });
      const save = await call(broken.baseUrl, 'POST', `${DESIGN}/save`, {
        key: acct.accessKey,
        body: { name: 'ghost', designId: d.designId },
      });
      expect(save.status).toBe(409);
      expect(fs.readdirSync(path.join(dataDir, 'recordings', '.staging'))).toEqual([]);
    } finally {
      await broken.stop();
    }
  });
});

describe('restart', () => {
  it('resumes a callback retry that was pending when the server stopped', async () => {
    const dataDir = tempDir();
    const first = await startService({ dataDir, callbackBaseDelayMs: 60_000, callbackMaxAttempts: 3, callbackAllowCidrs: [LOOPBACK] });
    const acct = await first.account();
    const url = receiver.url('/restart', [500]);
    const d = (
      await call(first.baseUrl, 'POST', DESIGN, {
        key: acct.accessKey,
        body: { description: 'a woman', previewText: 'Hello again.', callbackUrl: url },
      })
    ).json.data;
    await until(
      async () => (await call(first.baseUrl, 'GET', `${DESIGN}/${d.designId}`, { key: acct.accessKey })).json.data,
      (x) => x.callback?.attempts === 1,
    );
    await first.stop();
    // The restarted server's clock is past nextAttemptAt, so the retry is due at once.
    const second = await startService({
      dataDir,
      callbackBaseDelayMs: 60_000,
      callbackMaxAttempts: 3,
      callbackAllowCidrs: [LOOPBACK],
      now: () => new Date(Date.now() + 120_000),
    });
    try {
      const done = await until(
        async () => (await call(second.baseUrl, 'GET', `${DESIGN}/${d.designId}`, { key: acct.accessKey })).json.data,
        (x) => x.callback?.state === 'DELIVERED',
      );
      expect(done.callback.attempts).toBe(2);
      expect(receiver.for('/restart')).toHaveLength(2);
    } finally {
      await second.stop();
    }
  });
});
