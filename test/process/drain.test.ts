// Draining a node (SIGTERM) with live calls, as a call center deploys: `scribed stream` at
// real time through HAProxy (deploy/haproxy.cfg, agent checks on) to two `scribed serve`
// nodes on one PostgreSQL. The draining node tells each call to reconnect at its next segment
// boundary; the CLI moves make-before-break to the other node; the node exits once no call is
// left. Nothing lost, no final cut by the stop (trigger `shutdown`), the words of an
// undisturbed run. Bad paths: a client that ignores `reconnect` keeps its call until the grace
// ends, then gets the stop's close (1012, its open segment finalized); a second SIGTERM during
// a drain stops at once and loses no acknowledged audio.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import pg from 'pg';
import { loadClips } from '../helpers/audio.js';
import { startCluster, type Cluster, type ClusterNode } from '../helpers/cluster.js';
import { startStreamCli, streamCliResult, type StreamCliRun } from '../helpers/stream-cli-run.js';
import { StreamClient } from '../helpers/stream-client.js';

const RATE = 8000;
const audio = Buffer.concat(loadClips().map((c) => c.mulaw8k)); // about 25 s of speech
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const API = '/sound_clone/api/v1';

let cluster: Cluster;
let db: pg.Client;
let accessKey: string;
let dir: string;
let file: string;

// Read by each node at its (re)start: the tests' HAProxy takes a node out within one 200 ms
// check, so the notice before the first `reconnect` can be short.
// A grace of 14 s makes the boundary wait 7 s (half of it): the calls here are in manual mode
// with no commit, one segment to the close, so they are told after that wait and the new node
// finishes their open segment from the spool. Manual mode because its words do not depend on
// how the frames were paced (vad mode's segment edges do, and a loaded machine paces them
// differently from run to run, moved or not); moving at a final is test/server/drain.test.ts's.
const env = { SCRIBED_DRAIN_NOTICE_MS: '400', SCRIBED_DRAIN_GRACE_MS: '14000' };
const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));

beforeAll(async () => {
  Object.assign(process.env, env);
  cluster = await startCluster({ adminUrl: inject('postgresUrl'), nodes: 2, maxDecoders: 3, agents: true });
  db = new pg.Client({ connectionString: cluster.dbUrl });
  await db.connect();
  accessKey = (await cluster.createAccount(1_000_000)).accessKey;
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-drain-'));
  file = path.join(dir, 'call.ulaw');
  fs.writeFileSync(file, audio);
}, 120_000);

afterAll(async () => {
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  await db?.end();
  await cluster?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const stream = (args: string[] = []) =>
  startStreamCli({
    url: cluster.url,
    accessKey,
    file,
    encoding: 'mulaw_8000',
    rate: RATE,
    dir,
    args: ['--segment-commit-mode', 'manual', ...args],
  });

async function ownerOf(sessionId: string): Promise<ClusterNode | null> {
  const r = await db.query<{ owner_node: string | null }>('SELECT owner_node FROM rt_sessions WHERE id = $1', [sessionId]);
  return r.rows[0]?.owner_node ? cluster.nodeById(r.rows[0].owner_node) : null;
}

function exitOf(node: ClusterNode): Promise<number | null> {
  const proc = node.proc!;
  return new Promise((resolve) => proc.once('exit', (code) => resolve(code)));
}

function liveFinals(run: StreamCliRun): Array<{ text: string; trigger?: string; startSample: string; endSample: string }> {
  return streamCliResult(run).finals as Array<{ text: string; trigger?: string; startSample: string; endSample: string }>;
}

describe('draining a node with live calls (SIGTERM)', () => {
  it('calls move make-before-break: nothing lost, no shutdown final, the same words; the node exits once they left', async () => {
    const clean = await stream();
    expect(await clean.exited).toBe(0);
    const reference = streamCliResult(clean);
    expect(reference.words.length).toBeGreaterThan(40);

    const runs = [await stream(['--realtime']), await stream(['--realtime'])];
    const ids = await Promise.all(runs.map((r) => r.sessionId()));
    while ((await runs[0]!.counts()).captured < 6 * RATE) await sleep(50);
    const owner = (await ownerOf(ids[0]!))!;
    expect(owner, 'a running node serves the first call').not.toBeNull();
    const onOwner = [];
    for (const id of ids) if ((await ownerOf(id)) === owner) onOwner.push(id);
    const since = owner.logs.length;
    const exited = exitOf(owner);
    const t0 = Date.now();
    owner.proc!.kill('SIGTERM');

    // HAProxy's agent check reads `drain` from it.
    let state = '';
    for (let i = 0; i < 50 && !state.includes(' 8 '); i++) {
      state =
        (await cluster.haproxy.runtime('show servers state scribed_live')).split('\n').find((l) => l.includes(` ${owner.name} `)) ?? '';
      await sleep(100);
    }
    expect(await exited).toBe(0);
    const drainMs = Date.now() - t0;
    const logs = owner.logs.slice(since);
    expect(
      logs.find((l) => l.msg === 'drained: no live call left'),
      'the node left when its calls had moved',
    ).toBeDefined();
    const told = logs.filter((l) => l.msg === 'draining: session told to reconnect elsewhere');
    expect(told.map((l) => l.sessionId).sort()).toEqual([...onOwner].sort());
    await owner.restart();

    const gaps: number[] = [];
    for (const run of runs) {
      expect(await run.exited).toBe(0);
      const result = streamCliResult(run);
      const f = result.finished;
      expect(f.capturedSamples).toBe(audio.length);
      expect(f.acknowledgedSamples).toBe(audio.length);
      expect(f.serverCapturedSamples).toBe(audio.length);
      expect(f.gapSamples).toBe(0);
      expect(f.overflowSamples).toBe(0);
      expect(liveFinals(run).filter((s) => s.trigger === 'shutdown')).toEqual([]);
      expect(result.words).toEqual(reference.words);
      for (const l of run.log) if (l.msg === 'moved to another node: first ack there') gaps.push(l.ackGapMs as number);
    }
    expect(gaps.length).toBe(onOwner.length);
    process.stderr.write(
      `drain: ${onOwner.length} call(s) moved, node exited after ${drainMs} ms; ack gap per handover ${gaps.join(', ')} ms; agent state line: ${state}\n`,
    );
  }, 400_000);

  it('a client that ignores reconnect keeps its call until the grace ends, then gets the stop close (1012, open segment finalized)', async () => {
    const node = cluster.nodes[0]!;
    await node.kill('SIGKILL');
    process.env.SCRIBED_DRAIN_GRACE_MS = '6000';
    await node.restart();
    process.env.SCRIBED_DRAIN_GRACE_MS = env.SCRIBED_DRAIN_GRACE_MS;
    const h = { accessKey, 'content-type': 'application/json' };
    const created = (await (
      await fetch(`${node.base}${API}/stt/realtime/sessions`, {
        method: 'POST',
        headers: { ...h, 'Idempotency-Key': `drain-${Date.now()}` },
        body: JSON.stringify({ options: { inputEncoding: 'mulaw_8000' } }),
      })
    ).json()) as { data: { sessionId: string } };
    const ws = await StreamClient.connect(
      `${node.base.replace('http', 'ws')}${API}/stt/realtime/sessions/${created.data.sessionId}/stream`,
      { accessKey },
    );
    await ws.next('ready');
    let offset = 0;
    const frame = 160; // 20 ms
    const pacer = setInterval(() => {
      if (ws.ws.readyState !== ws.ws.OPEN) return;
      const end = Math.min(offset + frame, audio.length);
      if (end > offset) ws.audio(1, offset, audio.subarray(offset, end));
      offset = end;
    }, 20);
    try {
      await sleep(2000);
      const exited = exitOf(node);
      const t0 = Date.now();
      node.proc!.kill('SIGTERM');
      const reconnect = await ws.next('reconnect', () => true, 10_000);
      expect(reconnect.reason).toBe('NODE_DRAINING');
      expect(reconnect.withinMs).toBeLessThanOrEqual(6000);
      const closed = await ws.closed;
      const heldMs = Date.now() - t0;
      expect(closed.code).toBe(1012);
      expect(heldMs, 'the socket was kept through the grace').toBeGreaterThanOrEqual(5500);
      expect(await exited).toBe(0);
      expect(ws.ofType('final').at(-1)?.trigger).toBe('shutdown');
      expect(node.logs.some((l) => l.msg === 'drain grace over; stopping with the calls left')).toBe(true);
    } finally {
      clearInterval(pacer);
      await node.restart().catch(() => undefined);
    }
  }, 120_000);

  it('a second SIGTERM during a drain stops at once; every acknowledged sample is kept and the call goes on elsewhere', async () => {
    const run = await stream(['--realtime']);
    const id = await run.sessionId();
    while ((await run.counts()).captured < 4 * RATE) await sleep(50);
    const owner = (await ownerOf(id))!;
    const exited = exitOf(owner);
    owner.proc!.kill('SIGTERM');
    await sleep(100);
    owner.proc!.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(owner.logs.some((l) => l.msg === 'drain cut short; stopping')).toBe(true);
    await owner.restart();
    expect(await run.exited).toBe(0);
    const f = streamCliResult(run).finished;
    expect(f.capturedSamples).toBe(audio.length);
    expect(f.acknowledgedSamples).toBe(audio.length);
    expect(f.serverCapturedSamples).toBe(audio.length);
    expect(f.gapSamples).toBe(0);
    // The transcript covers the whole call without a hole: every sample is in a final.
    const finals = liveFinals(run).sort((a, b) => Number(a.startSample) - Number(b.startSample));
    let covered = 0;
    for (const s of finals) {
      expect(Number(s.startSample), 'no hole between finals').toBeLessThanOrEqual(covered);
      covered = Math.max(covered, Number(s.endSample));
    }
    expect(covered).toBeGreaterThanOrEqual(audio.length);
    process.stderr.write(
      `second SIGTERM: finals ${finals.map((s) => `${s.startSample}-${s.endSample}${s.trigger ? `(${s.trigger})` : ''}`).join(' ')}; audio ${audio.length}\n`,
    );
  }, 200_000);
});
