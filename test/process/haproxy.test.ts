// Three `scribed serve` nodes on one PostgreSQL database behind a real HAProxy running the
// reference config (deploy/haproxy.cfg): requests spread over the nodes, a call streams through
// the balancer and resumes on the node that holds it, a killed node leaves the pools within a
// health check and rejoins after a restart, and a node whose recognizers are all taken answers
// /readyz 503 and gets no new calls while it keeps serving the rest of the API. With the agent
// check (`scribed serve --agent-port`), each node's weight in the live pool follows its free
// recognizers.
//
// HAProxy adds `X-Scribed-Node: <server>` to responses in the tests only, so each test can tell
// which node served a request. The cluster's HAProxy checks every 200 ms (fall 1, rise 1); a
// second HAProxy with the reference file's own timings (1 s, fall 2, rise 2) is started over
// the same nodes to measure what operators get.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import WebSocket from 'ws';
import { call } from '../helpers/api.js';
import { chunks, loadClips } from '../helpers/audio.js';
import { startCluster, type Cluster, type ClusterNode } from '../helpers/cluster.js';
import { checkHaproxyConfig, DEPLOY_HAPROXY_CFG, startHaproxy, type Haproxy } from '../helpers/haproxy.js';
import { StreamClient } from '../helpers/stream-client.js';
import { startService, type TestService } from '../helpers/service.js';

const SESSIONS = '/sound_clone/api/v1/stt/realtime/sessions';
const clip = loadClips().find((c) => c.id === 'librivox-0890')!; // 5.3 s
const FRAME_SAMPLES = 320; // 20 ms at 16 kHz

let cluster: Cluster;
/** The reference file's own check timings, over the same nodes. */
let deployLb: Haproxy;
let accessKey: string;
const log = (msg: string): void => {
  process.stderr.write(`[haproxy.test] ${msg}\n`);
};

beforeAll(async () => {
  cluster = await startCluster({ adminUrl: inject('postgresUrl'), nodes: 3, maxDecoders: 1 });
  deployLb = await startHaproxy({ serverPorts: cluster.nodes.map((n) => n.port), checks: 'deploy' });
  ({ accessKey } = await cluster.createAccount());
}, 120_000);

afterAll(async () => {
  await deployLb?.stop();
  await cluster?.stop();
});

const nodeOf = (r: { headers: Headers }): string => r.headers.get('x-scribed-node') ?? '(none)';

/** `n` sequential GETs through a balancer: statuses and serving nodes. */
async function gets(base: string, path: string, n: number): Promise<{ statuses: number[]; nodes: string[] }> {
  const statuses: number[] = [];
  const nodes: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await call(base, 'GET', path, { key: null });
    statuses.push(r.status);
    nodes.push(nodeOf(r));
  }
  return { statuses, nodes };
}

async function createSession(base: string, title: string): Promise<{ sessionId: string; streamUrl: string; node: string }> {
  const r = await call(base, 'POST', SESSIONS, {
    key: accessKey,
    body: { title, options: { inputEncoding: 'pcm_s16le_16000' } },
    headers: { 'Idempotency-Key': `lb-${randomUUID()}` },
  });
  expect(r.status, r.text).toBe(200);
  return { sessionId: r.json.data.sessionId, streamUrl: r.json.data.streamUrl, node: nodeOf(r) };
}

/** Open a stream socket; also reports which node answered the upgrade (HAProxy's header). */
function connect(base: string, streamUrl: string): Promise<{ client: StreamClient; node: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${base.replace(/^http/, 'ws')}${streamUrl}`, { headers: { accessKey } });
    // StreamClient's constructor is private to steer tests to connect(); here the upgrade
    // response's headers are needed too, so wrap the socket directly.
    const client = new (StreamClient as unknown as new (ws: WebSocket) => StreamClient)(ws);
    let node = '(none)';
    ws.once('upgrade', (res) => (node = String(res.headers['x-scribed-node'] ?? '(none)')));
    ws.once('open', () => resolve({ client, node }));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`handshake refused: ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

function sendClip(client: StreamClient, epoch: number, pcm: Buffer): number {
  let offset = 0;
  for (const frame of chunks(pcm, 2, FRAME_SAMPLES)) {
    client.audio(epoch, offset, frame);
    offset += frame.length / 2;
  }
  return offset;
}

/** Hold a live socket on one node, bypassing the balancer: its only decoder is then taken. */
async function holdDecoder(node: ClusterNode): Promise<StreamClient> {
  const s = await createSession(node.base, `hold ${node.name}`);
  const { client } = await connect(node.base, s.streamUrl);
  await client.next('ready');
  return client;
}

describe('scribed nodes behind HAProxy (deploy/haproxy.cfg)', () => {
  it('the reference config passes haproxy -c without warnings', async () => {
    const { ok, output } = await checkHaproxyConfig(DEPLOY_HAPROXY_CFG);
    expect(ok, output).toBe(true);
    expect(output).not.toMatch(/WARNING|ALERT/);
  });

  it('spreads HTTP requests over the nodes, in both pools', async () => {
    const api = await gets(cluster.url, '/healthz', 12);
    const live = await gets(cluster.url, '/readyz', 12);
    expect(api.statuses.every((s) => s === 200)).toBe(true);
    expect(live.statuses.every((s) => s === 200)).toBe(true);
    log(`API pool: ${api.nodes.join(' ')}; live pool: ${live.nodes.join(' ')}`);
    // leastconn balances round-robin among equally loaded nodes: all three serve.
    expect(new Set(api.nodes)).toEqual(new Set(['node1', 'node2', 'node3']));
    expect(new Set(live.nodes)).toEqual(new Set(['node1', 'node2', 'node3']));
    // The account made by the operator command is known to whichever node answers.
    for (let i = 0; i < 3; i++)
      expect((await call(cluster.url, 'GET', '/sound_clone/api/v1/account', { key: accessKey })).status).toBe(200);
  });

  it('streams a call through HAProxy: final with words, then a resume on the same node', async () => {
    const s = await createSession(cluster.url, 'through the balancer');
    const first = await connect(cluster.url, s.streamUrl);
    const ready = await first.client.next('ready');
    expect(ready.epoch).toBe(1);
    const sent = sendClip(first.client, 1, clip.pcm16k);
    await first.client.next('ack', (e) => e.sampleOffset === sent);
    first.client.control({ type: 'commit' });
    const final = await first.client.next('final', () => true, 30_000);
    await first.client.next('committed');
    log(`created on ${s.node}, streamed on ${first.node}: "${final.text}" (reference "${clip.reference}")`);
    expect(final.trigger).toBe('commit');
    expect(final.words.length).toBeGreaterThan(3);
    expect(final.text).toMatch(/disposed|selfish|cold|rather/);

    // The connection drops: the session pauses on its node, which keeps the decoder.
    first.client.terminate();
    await first.client.closed;
    const resumed = await call(cluster.url, 'POST', `${SESSIONS}/${s.sessionId}/resume`, {
      key: accessKey,
      body: { capturedSamples: String(sent) },
    });
    expect(resumed.status, resumed.text).toBe(200);
    expect(resumed.json.data.epoch).toBe(2);
    // Stickiness on the session id: the resume and the new socket reach the node that held it.
    expect(nodeOf(resumed)).toBe(first.node);
    const second = await connect(cluster.url, resumed.json.data.streamUrl);
    expect(second.node).toBe(first.node);
    expect((await second.client.next('ready')).epoch).toBe(2);
    second.client.audio(2, 0, clip.pcm16k.subarray(0, 16_000));
    await second.client.next('ack');
    second.client.control({ type: 'close' });
    await second.client.next('closed', () => true, 30_000);
    expect((await second.client.closed).code).toBe(1000);
  }, 60_000);

  it('a killed node leaves both pools within a check, requests keep succeeding, and it rejoins after a restart', async () => {
    const victim = cluster.nodes[1]!;
    await victim.kill('SIGKILL');
    // Requests sent at once: a refused connect is retried on another node (retry-on conn-failure).
    const during = await Promise.all([
      gets(cluster.url, '/healthz', 10),
      gets(deployLb.url, '/healthz', 10),
      gets(deployLb.url, '/readyz', 10),
    ]);
    const waits = await Promise.all([
      cluster.haproxy.waitForServer('scribed_live', victim.name, 'DOWN'),
      cluster.haproxy.waitForServer('scribed_api', victim.name, 'DOWN'),
      deployLb.waitForServer('scribed_live', victim.name, 'DOWN'),
      deployLb.waitForServer('scribed_api', victim.name, 'DOWN'),
    ]);
    const fastDown = Math.max(waits[0], waits[1]);
    const deployDown = Math.max(waits[2], waits[3]);
    log(
      `kill -9 ${victim.name}: DOWN after ${fastDown.toFixed(0)} ms (inter 200ms fall 1), ${deployDown.toFixed(0)} ms (reference: inter 1s fall 2)`,
    );
    for (const d of during) {
      expect(d.statuses.every((st) => st === 200)).toBe(true);
      expect(d.nodes).not.toContain(victim.name);
    }
    expect(fastDown).toBeLessThan(1000);
    expect(deployDown).toBeLessThan(3000);
    const after = await gets(cluster.url, '/healthz', 9);
    expect(after.statuses.every((st) => st === 200)).toBe(true);
    expect(after.nodes).not.toContain(victim.name);
    const stats = await deployLb.servers('scribed_api');
    log(`reference LB after the kill: ${victim.name} retries ${stats[victim.name]!.wretr}, redispatches ${stats[victim.name]!.wredis}`);

    await victim.restart();
    const t1 = performance.now();
    const ups = await Promise.all([
      cluster.haproxy.waitForServer('scribed_live', victim.name, 'UP'),
      cluster.haproxy.waitForServer('scribed_api', victim.name, 'UP'),
      deployLb.waitForServer('scribed_live', victim.name, 'UP'),
      deployLb.waitForServer('scribed_api', victim.name, 'UP'),
    ]);
    log(
      `${victim.name} restarted: UP after ${Math.max(ups[0], ups[1]).toFixed(0)} ms (rise 1), ${Math.max(ups[2], ups[3]).toFixed(0)} ms (reference: rise 2)`,
    );
    expect(performance.now() - t1).toBeLessThan(5000);
    const back = await gets(cluster.url, '/healthz', 9);
    expect(back.statuses.every((st) => st === 200)).toBe(true);
    expect(back.nodes).toContain(victim.name);
  }, 60_000);

  it('a node whose decoders are all taken answers /readyz 503 and gets no new calls, but still serves the API', async () => {
    const full = cluster.nodes[0]!;
    const held = await holdDecoder(full);
    // Through the reference LB at once, before its checks (1 s, fall 2) notice: a request that
    // lands on the full node gets its 503 and is redispatched (retry-on 503).
    const early = await gets(deployLb.url, '/readyz', 12);

    const direct = await call(full.base, 'GET', '/readyz', { key: null });
    expect(direct.status).toBe(503);
    expect(direct.json).toMatchObject({
      status: 'not_ready',
      checks: { store: true, engine: true, capacity: false },
      capacity: { decoders: 1, busy: 1, reclaimable: 0 },
    });
    expect(direct.json.engine.name).toBeTruthy();
    expect((await call(full.base, 'GET', '/healthz', { key: null })).status).toBe(200);

    // Full is not dead: the node drains (NOLB: no new calls, sticky requests only).
    const fastOut = await cluster.haproxy.waitForServer('scribed_live', full.name, 'NOLB');
    const deployOut = await deployLb.waitForServer('scribed_live', full.name, 'NOLB');
    log(
      `${full.name} full: NOLB in the live pool after ${fastOut.toFixed(0)} ms (fast checks), ${deployOut.toFixed(0)} ms more (reference checks)`,
    );
    expect(early.statuses.every((s) => s === 200)).toBe(true);
    expect(early.nodes).not.toContain(full.name);
    const redispatched = Number((await deployLb.servers('scribed_live'))[full.name]!.wredis);
    log(`reference LB: ${redispatched} request(s) answered 503 by ${full.name} were redispatched`);

    // The live pool: /readyz through the balancer stays 200, and a new call lands elsewhere.
    const live = await gets(cluster.url, '/readyz', 9);
    expect(live.statuses.every((s) => s === 200)).toBe(true);
    expect(live.nodes).not.toContain(full.name);
    const s = await createSession(cluster.url, 'while one node is full');
    const call2 = await connect(cluster.url, s.streamUrl);
    expect(call2.node).not.toBe(full.name);
    await call2.client.next('ready');
    call2.client.control({ type: 'close' });
    await call2.client.next('closed');

    // The API pool keeps the full node: it needs no recognizer.
    expect((await cluster.haproxy.servers('scribed_api'))[full.name]!.status).toMatch(/^UP/);
    const api = await gets(cluster.url, '/healthz', 9);
    expect(api.statuses.every((st) => st === 200)).toBe(true);
    expect(api.nodes).toContain(full.name);

    // The held socket drops: its paused session keeps the decoder (60 s hold), but a new socket
    // would reclaim it, so the node is ready again and rejoins the live pool.
    held.terminate();
    await held.closed;
    let again = await call(full.base, 'GET', '/readyz', { key: null });
    for (let i = 0; i < 50 && again.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 50));
      again = await call(full.base, 'GET', '/readyz', { key: null });
    }
    expect(again.status).toBe(200);
    expect(again.json.checks).toEqual({ store: true, engine: true });
    expect(again.json.capacity).toEqual({ decoders: 1, busy: 1, reclaimable: 1 });
    await cluster.haproxy.waitForServer('scribed_live', full.name, 'UP');
  }, 60_000);
});

describe('weights from free capacity (agent-check, --agent-port)', () => {
  it("each node's weight in the live pool follows its free recognizers, read from HAProxy's runtime API", async () => {
    // Two nodes of 2 recognizers each, answering the agent on ephemeral ports.
    const nodes: TestService[] = [];
    let lb: Haproxy | null = null;
    const clients: StreamClient[] = [];
    try {
      for (let i = 0; i < 2; i++) nodes.push(await startService({ maxDecoders: 2, maxDeferredSeconds: 0, agentPort: 0 }));
      const port = (svc: TestService): number => Number(new URL(svc.baseUrl).port);
      lb = await startHaproxy({ serverPorts: nodes.map(port), agentPorts: nodes.map((n) => n.service.agentPort()!) });
      const balancer = lb;
      // `get weight` answers "<current> (initial <configured>)".
      const weight = async (name: string): Promise<number> =>
        Number((await balancer.runtime(`get weight scribed_live/${name}`)).trim().split(/\s+/)[0]);
      const untilWeight = async (name: string, expected: number): Promise<void> => {
        const t0 = Date.now();
        for (;;) {
          const w = await weight(name);
          if (w === expected) return;
          if (Date.now() - t0 > 10_000) throw new Error(`${name}: weight ${w}, not ${expected}, after 10 s`);
          await new Promise((r) => setTimeout(r, 50));
        }
      };
      /** A call held straight on a node: it takes one of its recognizers. */
      const holdRecognizer = async (svc: TestService): Promise<StreamClient> => {
        const account = await svc.account();
        const r = await call(svc.baseUrl, 'POST', SESSIONS, {
          key: account.accessKey,
          body: { options: { inputEncoding: 'pcm_s16le_16000' } },
          headers: { 'Idempotency-Key': randomUUID() },
        });
        expect(r.status).toBe(200);
        const c = await StreamClient.connect(`${svc.wsBase}${r.json.data.streamUrl as string}`, { accessKey: account.accessKey });
        await c.next('ready');
        clients.push(c);
        return c;
      };

      await untilWeight('node1', 100);
      await untilWeight('node2', 100);
      expect(await balancer.runtime('show servers state scribed_live')).toMatch(/node1/);

      await holdRecognizer(nodes[0]!);
      await untilWeight('node1', 50);
      expect(await weight('node2')).toBe(100);
      await holdRecognizer(nodes[0]!);
      await untilWeight('node1', 0);
      await holdRecognizer(nodes[1]!);
      await untilWeight('node2', 50);
      expect(await weight('node1')).toBe(0);

      // Calls end: their recognizers go back, and so does the weight.
      for (const c of clients.splice(0)) {
        c.control({ type: 'close' });
        await c.next('closed');
        c.close();
      }
      await untilWeight('node1', 100);
      await untilWeight('node2', 100);
    } finally {
      for (const c of clients) c.terminate();
      await lb?.stop();
      for (const n of nodes) await n.stop();
    }
  }, 90_000);
});
