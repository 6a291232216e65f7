// Failover as a call center sees it: the real `scribed stream` CLI, paced at real
// time, through HAProxy (deploy/haproxy.cfg) to two `scribed serve` nodes on one PostgreSQL;
// the node serving the call is killed -9 twice. The CLI's own reconnect resumes on the other
// node, which takes the session over from the shared spool without waiting for a decoder to
// load: its socket is ready, and new audio acknowledged, before the restored session's decoder
// has loaded (live-session.ts, loadAside). Nothing is lost and the words equal an undisturbed
// run's. (bench/failover-haproxy.ts measures the same path over 10+ kills.)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import pg from 'pg';
import { loadClips } from '../helpers/audio.js';
import { startCluster, type Cluster, type ClusterNode } from '../helpers/cluster.js';
import { startStreamCli, streamCliResult } from '../helpers/stream-cli-run.js';

const RATE = 8000;
const audio = Buffer.concat(loadClips().map((c) => c.mulaw8k)); // about 25 s of speech
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let cluster: Cluster;
let db: pg.Client;
let accessKey: string;
let dir: string;
let file: string;

beforeAll(async () => {
  cluster = await startCluster({ adminUrl: inject('postgresUrl'), nodes: 2, maxDecoders: 1 });
  db = new pg.Client({ connectionString: cluster.dbUrl });
  await db.connect();
  accessKey = (await cluster.createAccount(1_000_000)).accessKey;
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-failover-haproxy-'));
  file = path.join(dir, 'call.ulaw');
  fs.writeFileSync(file, audio);
}, 120_000);

afterAll(async () => {
  await db?.end();
  await cluster?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('failover through HAProxy with `scribed stream` (kill -9, real time)', () => {
  it('the serving node killed twice: new audio is acknowledged before the taking node has loaded a decoder; nothing lost, same words', async () => {
    const stream = (args: string[]) =>
      startStreamCli({
        url: cluster.url,
        accessKey,
        file,
        encoding: 'mulaw_8000',
        rate: RATE,
        dir,
        args: ['--segment-commit-mode', 'manual', ...args],
      });
    // The clips are shorter than the 30 s segment bound, so their one segment ends at the
    // close whatever the frames' sizes: the reference need not be paced.
    const clean = await stream([]);
    expect(await clean.exited).toBe(0);
    const reference = streamCliResult(clean);
    expect(reference.words.length).toBeGreaterThan(40);

    const run = await stream(['--realtime']);
    const sessionId = await run.sessionId();
    const kills: Array<{ ms: number; took: ClusterNode; attachedAt: number; loadedAt: number }> = [];
    let restarting: Promise<void> = Promise.resolve();
    for (const atSeconds of [5, 13]) {
      await restarting;
      while ((await run.counts()).captured < atSeconds * RATE) await sleep(50);
      const r = await db.query<{ owner_node: string | null }>('SELECT owner_node FROM rt_sessions WHERE id = $1', [sessionId]);
      const owner = r.rows[0]?.owner_node ? cluster.nodeById(r.rows[0].owner_node) : null;
      expect(owner, 'a running node serves the call').not.toBeNull();
      const before = await run.counts();
      const marks = new Map(cluster.nodes.map((n) => [n, n.logs.length]));
      const t0 = Date.now();
      await owner!.kill('SIGKILL');
      while ((await run.counts()).acknowledged <= before.captured) {
        expect(Date.now() - t0, 'new audio acknowledged within 30 s of the kill').toBeLessThan(30_000);
        await sleep(5);
      }
      const ms = Date.now() - t0;
      restarting = owner!.restart();
      const took = cluster.nodes.find((n) => n !== owner)!;
      // The taking node's decoder loads beside the session: wait for it to say so.
      const since = marks.get(took)!;
      const at = (msg: string) =>
        took.logs.slice(since).find((l) => l.msg === msg && l.sessionId === sessionId)?.time as number | undefined;
      for (let w = 0; w < 3000 && at('recognizer loaded for the restored session') === undefined; w++) await sleep(10);
      kills.push({ ms, took, attachedAt: at('socket attached')!, loadedAt: at('recognizer loaded for the restored session')! });
    }
    await restarting;
    expect(await run.exited).toBe(0);
    const faulted = streamCliResult(run);
    const f = faulted.finished;

    expect(kills).toHaveLength(2);
    for (const k of kills) {
      expect(k.attachedAt, 'the socket was attached on the other node').toBeDefined();
      expect(k.loadedAt, 'the restored session loaded a decoder').toBeDefined();
      // Ready (and acks) did not wait for the decoder: the socket attached before it loaded.
      expect(k.attachedAt).toBeLessThanOrEqual(k.loadedAt);
    }
    expect(f.capturedSamples).toBe(audio.length);
    expect(f.serverCapturedSamples).toBe(audio.length);
    expect(f.acknowledgedSamples).toBe(audio.length);
    expect(f.gapSamples).toBe(0);
    expect(f.overflowSamples).toBe(0);
    expect(f.resumes).toBeGreaterThanOrEqual(2);
    expect(Math.max(...faulted.finals.map((s) => Number(s.endSample)))).toBe(audio.length);
    expect(faulted.words).toEqual(reference.words);
    process.stderr.write(`failover through HAProxy with scribed stream: kill -> first new ack ${kills.map((k) => k.ms).join(', ')} ms\n`);
  }, 400_000);
});
