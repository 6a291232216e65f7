// Webhook delivery survives the node that holds it, with real processes: the node
// sending a delivery is killed with SIGKILL while the receiver has not answered; the delivery
// goes out again with the same webhook-id, after a restart on the same data dir (SQLite) or
// from another node once the claim's lease runs out (PostgreSQL), where the session was served
// by the killed node and the event is delivered by the other one.
import http from 'node:http';
import type { ChildProcess } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { createAccount, freePort, kill9, startServe } from '../helpers/serve-process.js';
import { startCluster, type Cluster } from '../helpers/cluster.js';
import { tempDir, testStore } from '../helpers/service.js';
import { StreamClient } from '../helpers/stream-client.js';
import { call } from '../helpers/api.js';

const API = '/sound_clone/api/v1';
const ALLOW_RECEIVER = ['--callback-allow-cidr', '127.0.0.1/32'];
/** The lease a claim holds with the default session lease (src/server/routes/webhooks.ts). */
const WEBHOOK_LEASE_MS = 15_000;

/** Holds the first request unanswered (its sender is about to die); answers 200 after. */
class HoldingReceiver {
  readonly hits: Array<{ headers: http.IncomingHttpHeaders; body: string; at: number }> = [];
  private held: http.ServerResponse[] = [];
  port = 0;
  private readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      this.hits.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
      if (this.hits.length === 1) this.held.push(res);
      else res.end('ok');
    });
  });
  async start() {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }
  async waitFor(n: number, timeoutMs: number) {
    const until = Date.now() + timeoutMs;
    while (this.hits.length < n) {
      if (Date.now() > until) throw new Error(`receiver got ${this.hits.length} of ${n}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  stop() {
    for (const r of this.held) r.destroy();
    this.server.closeAllConnections();
    return new Promise<void>((r) => this.server.close(() => r()));
  }
}

async function endpointTo(base: string, accessKey: string, receiver: HoldingReceiver) {
  const r = await call(base, 'POST', `${API}/webhooks/endpoints`, {
    key: accessKey,
    body: { url: `http://127.0.0.1:${receiver.port}/hook`, events: ['transcription.completed'] },
  });
  expect(r.status).toBe(201);
  return r.json.data as { id: string; secret: string };
}

/** Create a session on `base`, stream half a second of silence and close it. */
async function closeSessionOn(base: string, accessKey: string): Promise<string> {
  const created = await call(base, 'POST', `${API}/stt/realtime/sessions`, {
    key: accessKey,
    body: { title: 'webhook failover' },
    headers: { 'Idempotency-Key': randomUUID() },
  });
  expect(created.status).toBe(200);
  const { streamUrl, sessionId } = created.json.data;
  const client = await StreamClient.connect(`${base.replace('http', 'ws')}${streamUrl}`, { accessKey });
  await client.next('ready');
  client.audio(1, 0, Buffer.alloc(16_000));
  await client.next('ack', (e) => e.sampleOffset === 8000, 60_000);
  client.control({ type: 'close' });
  await client.next('closed', () => true, 60_000);
  return sessionId as string;
}

function verified(hit: HoldingReceiver['hits'][number], secret: string) {
  return new Webhook(secret).verify(hit.body, {
    'webhook-id': String(hit.headers['webhook-id']),
    'webhook-timestamp': String(hit.headers['webhook-timestamp']),
    'webhook-signature': String(hit.headers['webhook-signature']),
  }) as { type: string; data: { sessionId: string } };
}

describe.runIf(testStore() === 'sqlite')('webhook delivery through kill -9 (SQLite: the restarted node)', () => {
  const children = new Set<ChildProcess>();
  let receiver: HoldingReceiver;
  beforeAll(async () => {
    receiver = await new HoldingReceiver().start();
  });
  afterAll(async () => {
    for (const c of children) await kill9(c);
    await receiver?.stop();
  });

  it('is sent again after the restart, with the same webhook-id', async () => {
    const dataDir = tempDir();
    const accessKey = createAccount(dataDir);
    const port = await freePort();
    const first = await startServe(dataDir, { port, children, args: ALLOW_RECEIVER });
    const ep = await endpointTo(first.base, accessKey, receiver);
    const sessionId = await closeSessionOn(first.base, accessKey);
    await receiver.waitFor(1, 20_000);
    await kill9(first.proc);
    const killedAt = Date.now();
    const second = await startServe(dataDir, { port, children, args: ALLOW_RECEIVER });
    await receiver.waitFor(2, 20_000);
    const [held, again] = receiver.hits;
    expect(again!.headers['webhook-id']).toBe(held!.headers['webhook-id']);
    expect(verified(again!, ep.secret).data.sessionId).toBe(sessionId);
    // The data-dir lock proves the old process gone: no lease to wait out.
    expect(again!.at - killedAt).toBeLessThan(WEBHOOK_LEASE_MS);
    const log = await call(second.base, 'GET', `${API}/webhooks/endpoints/${ep.id}/deliveries`, { key: accessKey });
    const d = log.json.data.deliveries[0];
    expect(d.id).toBe(held!.headers['webhook-id']);
    expect(d.status).toBe('DELIVERED');
  }, 120_000);
});

describe.runIf(testStore() === 'postgres')('webhook delivery through kill -9 (PostgreSQL: another node)', () => {
  let cluster: Cluster;
  let receiver: HoldingReceiver;
  let db: pg.Client;
  beforeAll(async () => {
    receiver = await new HoldingReceiver().start();
    cluster = await startCluster({ adminUrl: inject('postgresUrl'), nodes: 2, maxDecoders: 1, extraArgs: ALLOW_RECEIVER });
    db = new pg.Client({ connectionString: cluster.dbUrl });
    await db.connect();
  }, 120_000);
  afterAll(async () => {
    await db?.end();
    await cluster?.stop();
    await receiver?.stop();
  });

  it('a session served by node A, A killed while sending its event: node B delivers it, same webhook-id', async () => {
    const [a, b] = cluster.nodes as [Cluster['nodes'][number], Cluster['nodes'][number]];
    const { accessKey } = await cluster.createAccount(1_000_000);
    const ep = await endpointTo(a.base, accessKey, receiver);
    // Only A is up while the session closes, so A serves the session and claims the delivery.
    await b.kill();
    const sessionId = await closeSessionOn(a.base, accessKey);
    await receiver.waitFor(1, 20_000);
    const claim = await db.query<{ claimed_by: string }>('SELECT claimed_by FROM webhook_deliveries WHERE id = $1', [
      receiver.hits[0]!.headers['webhook-id'],
    ]);
    expect(cluster.nodeById(claim.rows[0]!.claimed_by)?.name).toBe(a.name);
    await b.restart();
    await a.kill();
    const killedAt = Date.now();
    await receiver.waitFor(2, WEBHOOK_LEASE_MS + 15_000);
    const [held, again] = receiver.hits;
    expect(again!.headers['webhook-id']).toBe(held!.headers['webhook-id']);
    expect(verified(again!, ep.secret).data.sessionId).toBe(sessionId);
    // within the documented bound: one lease and a poll after the death
    expect(again!.at - killedAt).toBeLessThan(WEBHOOK_LEASE_MS + 2_000);
    const log = await call(b.base, 'GET', `${API}/webhooks/endpoints/${ep.id}/deliveries`, { key: accessKey });
    const d = log.json.data.deliveries[0];
    expect(d.status).toBe('DELIVERED');
    expect(d.attemptLog).toHaveLength(1);
  }, 150_000);
});
