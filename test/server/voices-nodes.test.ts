// Voice library, voice design and dashboard user groups on nodes that share one PostgreSQL
// store (docs/scaling.md): what one node stores another serves (design previews and recordings
// are blobs in the store, the server keys are rows), and the design work of a node that stops
// or dies is finished by another, its callback sent under the same delivery id.
//
// The blob publish/delete interleavings run on both stores (the SQL is the same); the rest
// needs two nodes, so PostgreSQL only.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../helpers/api.js';
import { makeWav } from '../helpers/audio-files.js';
import { secondConnection, startService, storeSettingsFor, tempDir, testStore, type TestService } from '../helpers/service.js';
import { verifyCallback } from '../../src/core/callback-signature.js';
import { DatabaseRecordingStore } from '../../src/store/recordings.js';
import type { SqlStore } from '../../src/store/sql-store.js';

const VOICES = '/sound_clone/api/v1/voices';
const DESIGN = `${VOICES}/design`;
const LEASE = 1000;

const services: TestService[] = [];
const started = async (opts: Parameters<typeof startService>[0] = {}) => {
  const s = await startService({
    sessionLeaseMs: LEASE,
    callbackBaseDelayMs: 200,
    callbackMaxAttempts: 3,
    callbackAllowCidrs: ['127.0.0.1/32'],
    ...opts,
  });
  services.push(s);
  return s;
};
/** Another node on the same database, with a data dir of its own. */
const secondNode = (first: TestService, opts: Parameters<typeof startService>[0] = {}) =>
  started({ dataDir: tempDir(), databaseUrl: first.storeSettings.databaseUrl, ...opts });

async function until<T>(fn: () => Promise<T>, done: (v: T) => boolean, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`condition not met: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface Delivery {
  path: string;
  body: string;
  signature: string;
  id: string;
  attempt: string;
}

/** A callback receiver; per path a script of answers: a status, or 'hang' (never answers). */
class Receiver {
  readonly deliveries: Delivery[] = [];
  private readonly scripts = new Map<string, Array<number | 'hang'>>();
  private readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      this.deliveries.push({
        path: req.url!,
        body: Buffer.concat(chunks).toString('utf8'),
        signature: String(req.headers['x-scribed-signature']),
        id: String(req.headers['x-scribed-delivery-id']),
        attempt: String(req.headers['x-scribed-delivery-attempt']),
      });
      const next = this.scripts.get(req.url!)?.shift() ?? 200;
      if (next === 'hang') return;
      res.statusCode = next;
      res.end('ok');
    });
  });
  base = '';
  async start() {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  url(p: string, script: Array<number | 'hang'> = []) {
    this.scripts.set(p, [...script]);
    return `${this.base}${p}`;
  }
  for(p: string) {
    return this.deliveries.filter((d) => d.path === p);
  }
  stop() {
    this.server.closeAllConnections();
    return new Promise<void>((r) => this.server.close(() => r()));
  }
}
const receiver = new Receiver();

// espeak-ng on PATH is wrapped: it logs each start, and waits while the hold file exists.
let runLog: string;
let holdFile: string;
let savedPath: string | undefined;
const espeakRuns = () => (fs.existsSync(runLog) ? fs.readFileSync(runLog, 'utf8').split('\n').filter(Boolean).length : 0);

beforeAll(async () => {
  await receiver.start();
  const dir = tempDir('scribed-espeak-');
  runLog = path.join(dir, 'runs');
  holdFile = path.join(dir, 'hold');
  const real = execFileSync('sh', ['-c', 'command -v espeak-ng'], { encoding: 'utf8' }).trim();
  fs.writeFileSync(
    path.join(dir, 'espeak-ng'),
    `#!/bin/sh\necho start >> '${runLog}'\nwhile [ -e '${holdFile}' ]; do sleep 0.05; done\nexec '${real}' "$@"\n`,
    {
      mode: 0o755,
    },
  );
  savedPath = process.env.PATH;
  process.env.PATH = `${dir}:${savedPath}`;
});
afterAll(async () => {
  fs.rmSync(holdFile, { force: true });
  for (const s of services) await s.stop();
  await receiver.stop();
  process.env.PATH = savedPath;
});

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('store: blobs, server keys and the design claim fence, as two nodes use them', () => {
  let svc: TestService;
  let a: SqlStore;
  let b: SqlStore;
  const log = pino({ level: 'silent' });
  beforeAll(async () => {
    svc = await started();
    a = await secondConnection(svc);
    b = await secondConnection(svc);
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });
  const voice = (id: string, accountId: string, sha: string, size: number) => ({
    id,
    accountId,
    name: 'n',
    type: 'cloned',
    feature: 'text-to-speech',
    channel: 'web',
    designId: null,
    createdAt: new Date().toISOString(),
    recordings: [{ sha256: sha, format: 'wav', sizeBytes: size }],
  });

  it('keeps the blob when the other node deletes it between the store and the commit of the reference', async () => {
    const acct = await svc.account();
    const data = makeWav();
    const recordings = new DatabaseRecordingStore(tempDir(), a, log);
    const staged = await recordings.stageBuffer(data);
    let deletedInBetween: string[] = [];
    await recordings.publish(
      [staged],
      async () => {
        // The blob is stored and not referenced yet: a delete on the other node takes it.
        deletedInBetween = await b.deleteUnreferencedBlobs([staged.sha256]);
        return a.createVoice(voice('vc_race000000000000001', acct.accountId, staged.sha256, data.length));
      },
      async () => undefined,
    );
    expect(deletedInBetween).toEqual([staged.sha256]);
    expect(await b.getBlob(staged.sha256)).toEqual(data); // stored again after the commit
  });

  it('does not delete a blob whose reference committed before the delete looked', async () => {
    const acct = await svc.account();
    const data = makeWav();
    const recordings = new DatabaseRecordingStore(tempDir(), a, log);
    const staged = await recordings.stageBuffer(data);
    await recordings.publish(
      [staged],
      () => a.createVoice(voice('vc_race000000000000002', acct.accountId, staged.sha256, data.length)),
      async () => undefined,
    );
    // A delete computed "unreferenced" from an older voice: the blob stays while referenced.
    expect(await b.deleteUnreferencedBlobs([staged.sha256])).toEqual([]);
    expect(await b.getBlob(staged.sha256)).toEqual(data);
    expect(await a.deleteVoice('vc_race000000000000002', acct.accountId)).toEqual([staged.sha256]);
    expect(await b.deleteUnreferencedBlobs([staged.sha256])).toEqual([staged.sha256]);
    expect(await b.getBlob(staged.sha256)).toBeNull();
  });

  it('stores a server key once: the first writer wins, every later load reads it', async () => {
    const first = Buffer.alloc(32, 1);
    const second = Buffer.alloc(32, 2);
    const [x, y] = await Promise.all([a.loadServerKey('test-key', first, new Date()), b.loadServerKey('test-key', second, new Date())]);
    expect(x).toEqual(y);
    expect(await a.loadServerKey('test-key', Buffer.alloc(32, 3), new Date())).toEqual(x);
  });

  it("refuses a design worker's writes unless its node holds the design's claim", async () => {
    const acct = await svc.account();
    const id = 'vd_fence00000000000001';
    const now = new Date();
    await a.createVoiceDesign({
      id,
      accountId: acct.accountId,
      description: 'x',
      previewText: 'y',
      callbackUrl: 'http://127.0.0.1:9/cb',
      params: {},
      createdAt: now.toISOString(),
    });
    expect(await a.claimJob({ table: 'voice_designs', key: id, node: 'node-x' }, 60_000, now)).toBe(true);
    expect(await b.claimJob({ table: 'voice_designs', key: id, node: 'node-y' }, 60_000, now)).toBe(false);
    expect(await b.finishVoiceDesign(id, { error: 'from y' }, now, 'node-y')).toBeNull();
    const done = await a.finishVoiceDesign(id, { previewSha256: 'a'.repeat(64), previewBytes: 100 }, now, 'node-x');
    expect(done).toMatchObject({ status: 'COMPLETED', callback: { state: 'PENDING' } });
    const attempt = { state: 'DELIVERED' as const, attempts: 1, lastStatus: 200, lastError: null, nextAt: null };
    expect(await b.recordCallbackAttempt(id, attempt, now, 'node-y')).toBe(false);
    expect(await b.failVoiceDesignPreview(id, 'a'.repeat(64), 'from y', now, 'node-y')).toBeNull();
    expect((await a.getVoiceDesign(id, null))!.callback.state).toBe('PENDING');
    // The lease ran out and node Y took the design: X's word no longer counts.
    const later = new Date(now.getTime() + 61_000);
    expect(await b.claimJob({ table: 'voice_designs', key: id, node: 'node-y' }, 60_000, later)).toBe(true);
    expect(await a.recordCallbackAttempt(id, attempt, later, 'node-x')).toBe(false);
    expect(await b.recordCallbackAttempt(id, attempt, later, 'node-y')).toBe(true);
    expect((await a.getVoiceDesign(id, null))!.callback).toMatchObject({ state: 'DELIVERED', attempts: 1 });
  });

  it('removes a failed publish: no blob is left when the commit refuses', async () => {
    const data = makeWav();
    const recordings = new DatabaseRecordingStore(tempDir(), a, log);
    const staged = await recordings.stageBuffer(data);
    await expect(
      recordings.publish(
        [staged],
        async () => Promise.reject(new Error('refused')),
        async () => undefined,
      ),
    ).rejects.toThrow('refused');
    expect(await b.getBlob(staged.sha256)).toBeNull();
    expect(fs.existsSync(staged.stagingPath)).toBe(false);
  });
});

describe.skipIf(testStore() !== 'postgres')('two nodes on one PostgreSQL store', () => {
  it('agree on the server keys even when they start at the same instant', async () => {
    const dirA = tempDir();
    const { databaseUrl } = await storeSettingsFor(dirA);
    const [a, b] = await Promise.all([started({ dataDir: dirA }), started({ dataDir: tempDir(), databaseUrl })]);
    const acct = await a.account();
    const group = (base: string) =>
      call(base, 'PUT', '/api/user', {
        headers: { authorization: `Token ${acct.apiToken}` },
        body: { user_group_id: 'shared-team', name: 'Team' },
      });
    const onA = (await group(a.baseUrl)).json.user_group;
    const onB = (await group(b.baseUrl)).json.user_group;
    expect(onB.team_id).toBe(onA.team_id);
    expect(onB.token).toBe(onA.token);
    // The token stays valid on the other node: B deletes with the token A showed.
    const del = await call(b.baseUrl, 'DELETE', '/api/user', {
      headers: { authorization: `Token ${acct.apiToken}` },
      body: { user_group_id: 'shared-team', current_token: onA.token },
    });
    expect(del.json).toEqual({ success: 1 });
    // Nothing of it is in either data dir.
    for (const s of [a, b]) expect(fs.existsSync(path.join(s.dataDir, 'keys'))).toBe(false);
  });

  it('serve what the other stored: a recording (read and deleted on B) and a design preview (served by B)', async () => {
    const a = await started();
    const b = await secondNode(a);
    const acct = await a.account();
    const wav = makeWav();
    const form = new FormData();
    form.append('name', 'Shared');
    form.append('files', new Blob([wav]), 'a.wav');
    const created = await call(a.baseUrl, 'POST', `${VOICES}/tts`, { key: acct.accessKey, rawBody: form });
    expect(created.status, created.text).toBe(200);
    expect(await b.service.store.getBlob(sha256(wav))).toEqual(wav);

    const d = (
      await call(a.baseUrl, 'POST', DESIGN, {
        key: acct.accessKey,
        body: { description: 'A calm British woman', previewText: 'Hello from node A.' },
      })
    ).json.data;
    const done = await until(
      async () => (await call(b.baseUrl, 'GET', `${DESIGN}/${d.designId}`, { key: acct.accessKey })).json.data,
      (x) => x.status !== 'PENDING',
    );
    expect(done.status).toBe('COMPLETED');
    const res = await fetch(`${b.baseUrl}${done.preview.url}`, { headers: { accessKey: acct.accessKey } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('audio/wav');
    const preview = Buffer.from(await res.arrayBuffer());
    expect(preview.length).toBe(done.preview.fileSize);
    expect(preview.subarray(0, 4).toString('ascii')).toBe('RIFF');
    // Published copies live in the store only: neither data dir holds one.
    for (const s of [a, b]) {
      const root = path.join(s.dataDir, 'recordings');
      const files = fs.existsSync(root) ? fs.readdirSync(root, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()) : [];
      expect(files).toEqual([]);
    }

    // B deletes the voice A created: its recording's blob goes; the preview's stays.
    const del = await call(b.baseUrl, 'DELETE', `${VOICES}/${created.json.data.id}`, { key: acct.accessKey });
    expect(del.json.code).toBe(1);
    expect(await a.service.store.getBlob(sha256(wav))).toBeNull();
    expect(await a.service.store.getBlob(sha256(preview))).toEqual(preview);
  });

  it('moves recordings an earlier version published to the data dir into the store at start', async () => {
    const dataDir = tempDir();
    const first = await started({ dataDir });
    const acct = await first.account();
    await first.stop();
    const kept = makeWav();
    const orphan = makeWav();
    for (const data of [kept, orphan]) {
      const sha = sha256(data);
      fs.mkdirSync(path.join(dataDir, 'recordings', sha.slice(0, 2)), { recursive: true });
      fs.writeFileSync(path.join(dataDir, 'recordings', sha.slice(0, 2), sha), data);
    }
    // A voice whose recording the earlier version kept as a file.
    const db = await secondConnection(first);
    try {
      await db.createVoice({
        id: 'vc_oldfile000000000001',
        accountId: acct.accountId,
        name: 'old',
        type: 'cloned',
        feature: 'text-to-speech',
        channel: 'web',
        designId: null,
        createdAt: new Date().toISOString(),
        recordings: [{ sha256: sha256(kept), format: 'wav', sizeBytes: kept.length }],
      });
    } finally {
      await db.close();
    }
    const again = await started({ dataDir });
    const b = await secondNode(again);
    expect(await b.service.store.getBlob(sha256(kept))).toEqual(kept);
    expect(await b.service.store.getBlob(sha256(orphan))).toBeNull();
    const left = fs.readdirSync(path.join(dataDir, 'recordings'), { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
    expect(left).toEqual([]);
  });

  it('finishes a design whose node stopped mid-synthesis on the other node: preview and one callback', async () => {
    const a = await started();
    const acct = await a.account();
    fs.writeFileSync(holdFile, '');
    try {
      const runs = espeakRuns();
      const url = receiver.url('/stopped');
      const d = (
        await call(a.baseUrl, 'POST', DESIGN, {
          key: acct.accessKey,
          body: { description: 'a deep man', previewText: 'Finished elsewhere.', callbackUrl: url },
        })
      ).json.data;
      await until(
        async () => espeakRuns(),
        (n) => n === runs + 1,
      ); // A's synthesis is running (held)
      const b = await secondNode(a);
      await new Promise((r) => setTimeout(r, 2 * LEASE));
      expect(espeakRuns(), 'B leaves a design A holds').toBe(runs + 1);
      await a.stop(); // A lets its claim go
      await until(
        async () => espeakRuns(),
        (n) => n === runs + 2,
        5000,
      ); // B took it up
      fs.rmSync(holdFile, { force: true });
      const done = await until(
        async () => (await call(b.baseUrl, 'GET', `${DESIGN}/${d.designId}`, { key: acct.accessKey })).json.data,
        (x) => x.callback?.state === 'DELIVERED',
      );
      expect(done).toMatchObject({ status: 'COMPLETED', callback: { state: 'DELIVERED', attempts: 1 } });
      expect((await fetch(`${b.baseUrl}${done.preview.url}`, { headers: { accessKey: acct.accessKey } })).status).toBe(200);
      await new Promise((r) => setTimeout(r, 500)); // A's espeak-ng also ended: it stores nothing
      const deliveries = receiver.for('/stopped');
      expect(deliveries).toHaveLength(1);
      expect(deliveries[0]).toMatchObject({ id: d.designId, attempt: '1' });
      // Signed with the secret node A handed out.
      expect(verifyCallback(d.callbackSecret, deliveries[0]!.signature, deliveries[0]!.body, Math.floor(Date.now() / 1000))).toBe(true);
      expect(JSON.parse(deliveries[0]!.body)).toMatchObject({ designId: d.designId, status: 'COMPLETED' });
    } finally {
      fs.rmSync(holdFile, { force: true });
    }
  });

  it('re-sends a callback attempt of a node that died under the same delivery id, within about a lease', async () => {
    const a = await started();
    const b = await secondNode(a);
    const acct = await a.account();
    // The first request is never answered: A dies while it waits.
    const url = receiver.url('/died', ['hang', 200]);
    // A node that dies neither releases its claims nor renews them.
    const store = a.service.store as unknown as { releaseJob: () => Promise<void> };
    store.releaseJob = async () => undefined;
    const d = (
      await call(a.baseUrl, 'POST', DESIGN, {
        key: acct.accessKey,
        body: { description: 'a calm woman', previewText: 'Dying node.', callbackUrl: url },
      })
    ).json.data;
    await until(
      async () => receiver.for('/died').length,
      (n) => n === 1,
    );
    await a.stop(); // its request is cut off, its claim left to run out
    const t0 = Date.now();
    const done = await until(
      async () => (await call(b.baseUrl, 'GET', `${DESIGN}/${d.designId}`, { key: acct.accessKey })).json.data,
      (x) => x.callback?.state === 'DELIVERED',
    );
    const took = Date.now() - t0;
    if (process.env.SCRIBED_TEST_LOG) process.stderr.write(`[voices-nodes] callback re-sent ${took} ms after the node died\n`);
    expect(took, 'taken up within a lease and a poll').toBeLessThan(LEASE + 1000 + 4000);
    expect(done.callback).toMatchObject({ state: 'DELIVERED', attempts: 1 });
    const deliveries = receiver.for('/died');
    expect(deliveries).toHaveLength(2);
    expect(deliveries.map((x) => [x.id, x.attempt])).toEqual([
      [d.designId, '1'],
      [d.designId, '1'],
    ]);
    for (const x of deliveries) expect(verifyCallback(d.callbackSecret, x.signature, x.body, Math.floor(Date.now() / 1000))).toBe(true);
  });
});
