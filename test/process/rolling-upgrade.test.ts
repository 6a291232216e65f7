// A rolling upgrade with live calls (docs/scaling.md, "Rolling upgrades"): nodes of the
// previous release (built from the commit before the drain work, test/helpers/previous-release.ts)
// and of this one on one PostgreSQL behind HAProxy, with calls through `scribed stream` moving
// from old nodes to new and back:
//   1. node1 and node2 run the previous release; two calls start on them.
//   2. node3 starts on this release: it migrates the database while the old nodes serve.
//   3. An old node with a call (oldA) stops: the previous release has no drain, so its call's
//      open segment is finalized (trigger `shutdown`) and the call resumes on node3, the only
//      other node taking calls (the other old node, oldB, held in maintenance for the moment),
//      old to new. oldA comes back on this release.
//   4. Both new nodes drain at once: their calls move to oldB, new to old.
//   5. oldB stops: every call resumes on the new nodes, old to new; oldB comes back on this
//      release. The cluster is upgraded.
// Each call: every sample captured, acknowledged and stored once (0 lost), and a continuous
// transcript (manual commit mode: each final starts where the last ended, the last ends at
// the call's end).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import pg from 'pg';
import { loadClips } from '../helpers/audio.js';
import { CLI, startCluster, type Cluster, type ClusterNode } from '../helpers/cluster.js';
import { buildPreviousRelease, type PreviousRelease } from '../helpers/previous-release.js';
import { startStreamCli, streamCliResult, type StreamCliRun } from '../helpers/stream-cli-run.js';

const execFileAsync = promisify(execFile);
const RATE = 8000;
const clip = Buffer.concat(loadClips().map((c) => c.mulaw8k));
// About 100 s: the calls must outlast five node stops and four starts (each start 10-15 s on
// a quiet machine, 40-55 s at load 20-30).
const audio = Buffer.concat([clip, clip, clip, clip]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
// A grace of 30 s (boundary wait 15 s): room for a loaded host's move.
const env = { SCRIBED_DRAIN_NOTICE_MS: '400', SCRIBED_DRAIN_GRACE_MS: '30000' };
const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));

let previous: PreviousRelease;
let db: pg.Client;
let cluster: Cluster;
let accessKey: string;
let dir: string;
/** Every stream CLI started, killed after the test (a failed test must not leave one retrying). */
const started: StreamCliRun[] = [];
let file: string;

beforeAll(async () => {
  Object.assign(process.env, env);
  previous = await buildPreviousRelease();
  process.stderr.write(`previous release ${previous.commit.slice(0, 10)} built in ${previous.buildMs} ms\n`);
  cluster = await startCluster({
    adminUrl: inject('postgresUrl'),
    nodes: 3,
    maxDecoders: 3,
    agents: true,
    cliFor: (i) => (i < 2 ? previous.cli : CLI),
    startLater: [2],
  });
  // The account through the previous release's command: the database stays at its schema
  // until the first new node starts.
  const { stdout } = await execFileAsync(
    process.execPath,
    [previous.cli, 'accounts', 'create', '--name', 'upgrade', '--characters', '1000000', '--json', '--database-url', cluster.dbUrl],
    { encoding: 'utf8' },
  );
  accessKey = (JSON.parse(stdout) as { accessKey: string }).accessKey;
  db = new pg.Client({ connectionString: cluster.dbUrl });
  await db.connect();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-upgrade-'));
  file = path.join(dir, 'call.ulaw');
  fs.writeFileSync(file, audio);
}, 300_000);

afterAll(async () => {
  for (const r of started) if (r.proc.exitCode === null) r.proc.kill('SIGKILL');
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  await db?.end();
  await cluster?.stop();
  await previous?.remove();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function stream(): Promise<StreamCliRun> {
  const run = await startStreamCli({
    url: cluster.url,
    accessKey,
    file,
    encoding: 'mulaw_8000',
    rate: RATE,
    dir,
    args: ['--segment-commit-mode', 'manual', '--realtime'],
    echo: process.env.SCRIBED_TEST_LOG !== undefined,
  });
  started.push(run);
  return run;
}

/** Every call still streaming: one whose audio ended waits for its close where it is (a
 * draining node does not move it: src/server/drain.ts), so a step after that tests nothing of
 * the move. A host too slow for the scenario fails here, saying so. */
function stillStreaming(runs: StreamCliRun[], step: string): void {
  const ending = runs.filter((r) => r.log.some((l) => l.msg === 'all audio acknowledged; closing the session'));
  expect(ending.length, `calls of ${audio.length / RATE} s that ended before ${step} (load ${os.loadavg()[0]!.toFixed(1)})`).toBe(0);
}

async function stop(node: ClusterNode): Promise<void> {
  const proc = node.proc!;
  const since = node.logs.length;
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  proc.kill('SIGTERM');
  const code = await exited;
  node.proc = null;
  const logs = node.logs.slice(since).map((l) => l.msg);
  // The previous release stops within its 10 s bound or exits 1 when a loaded host makes it
  // overrun it (finalizing the open segments): a stop cut short, which loses nothing
  // acknowledged (the spool has it; the checks below say so). This release drains first.
  if (code === 1 && node.cli !== CLI && logs.includes('shutdown bound exceeded; exiting')) {
    process.stderr.write(`upgrade: ${node.name} (previous release) overran its stop bound\n`);
    return;
  }
  expect(code, `${node.name} stopped cleanly: ${JSON.stringify(logs.slice(-8))}`).toBe(0);
}

/** The node that owns the session now (rt_sessions.owner_node), or null between owners. */
async function ownerOf(sessionId: string): Promise<ClusterNode | null> {
  const r = await db.query<{ owner_node: string | null }>('SELECT owner_node FROM rt_sessions WHERE id = $1', [sessionId]);
  return r.rows[0]?.owner_node ? cluster.nodeById(r.rows[0].owner_node) : null;
}

/** The sessions not (yet) owned by one of `nodes` after waiting up to `ms`. */
async function notOwnedBy(ids: string[], nodes: ClusterNode[], ms = 30_000): Promise<string[]> {
  const until = Date.now() + ms;
  for (;;) {
    const left: string[] = [];
    for (const id of ids) if (!nodes.includes((await ownerOf(id))!)) left.push(id);
    if (left.length === 0 || Date.now() > until) return left;
    await sleep(100);
  }
}

async function ownedBy(ids: string[], nodes: ClusterNode[]): Promise<string[]> {
  const out: string[] = [];
  for (const id of ids) if (nodes.includes((await ownerOf(id))!)) out.push(id);
  return out;
}

describe('a rolling upgrade from the previous release with live calls', () => {
  it('calls move old to new and back: nothing lost, transcripts continuous', async () => {
    const [node1, node2, node3] = cluster.nodes as [ClusterNode, ClusterNode, ClusterNode];
    // Started together: one after another, a loaded host took 10-40 s to start the next.
    const runs = await Promise.all([stream(), stream()]);
    const ids = await Promise.all(runs.map((r) => r.sessionId()));
    while (Math.min(...(await Promise.all(runs.map(async (r) => (await r.counts()).captured)))) < 3 * RATE) await sleep(100);
    expect(await notOwnedBy(ids, [node1, node2]), 'both calls start on the previous release').toEqual([]);

    stillStreaming(runs, 'node3 joins');
    // 2. The first node of this release joins and migrates.
    await node3.restart();
    expect(node3.cli).toBe(CLI);
    await cluster.haproxy.waitForServer('scribed_live', 'node3', 'UP', 20_000);

    // 3. Old to new: an old node that has a call stops (oldA); with the other old node (oldB)
    // held in maintenance, its calls can only resume on node3. oldA comes back on this release.
    const [oldA, oldB] = (await ownedBy(ids, [node1])).length > 0 ? [node1, node2] : [node2, node1];
    await cluster.haproxy.runtime(`set server scribed_live/${oldB.name} state maint`);
    const fromOldA = await ownedBy(ids, [oldA]);
    expect(fromOldA.length).toBeGreaterThan(0);
    stillStreaming(runs, 'the old node stops');
    await stop(oldA);
    expect(await notOwnedBy(fromOldA, [node3]), `${oldA.name} (old) calls resumed on node3 (new)`).toEqual([]);
    await cluster.haproxy.runtime(`set server scribed_live/${oldB.name} state ready`);
    await cluster.haproxy.waitForServer('scribed_live', oldB.name, 'UP', 20_000);
    await oldA.restart(CLI);
    await cluster.haproxy.waitForServer('scribed_live', oldA.name, 'UP', 20_000);

    // 4. New to old: both new nodes drain at once; oldB is the only node left.
    const onNew = await ownedBy(ids, [oldA, node3]);
    expect(onNew.length, 'a call is on a new node').toBeGreaterThan(0);
    stillStreaming(runs, 'the new nodes drain');
    await Promise.all([stop(oldA), stop(node3)]);
    expect(await notOwnedBy(onNew, [oldB]), `the new nodes calls moved to ${oldB.name} (old)`).toEqual([]);
    await Promise.all([oldA.restart(), node3.restart()]);
    await cluster.haproxy.waitForServer('scribed_live', oldA.name, 'UP', 20_000);
    await cluster.haproxy.waitForServer('scribed_live', 'node3', 'UP', 20_000);

    // 5. Old to new again: oldB stops; every call resumes on a new node, and oldB comes back
    // on this release: the cluster is upgraded.
    stillStreaming(runs, 'the last old node stops');
    await stop(oldB);
    expect(await notOwnedBy(ids, [oldA, node3]), 'every call resumed on a new node').toEqual([]);
    await oldB.restart(CLI);
    expect(
      runs.every((r) => r.proc.exitCode === null),
      'the calls outlasted the upgrade',
    ).toBe(true);

    for (const run of runs) {
      expect(await run.exited).toBe(0);
      const result = streamCliResult(run);
      const f = result.finished;
      expect(f.capturedSamples).toBe(audio.length);
      expect(f.acknowledgedSamples).toBe(audio.length);
      expect(f.serverCapturedSamples).toBe(audio.length);
      expect(f.gapSamples).toBe(0);
      expect(f.overflowSamples).toBe(0);
      const finals = [...result.finals].sort((a, b) => Number(a.startSample) - Number(b.startSample));
      let end = 0;
      for (const s of finals) {
        expect(Number(s.startSample), 'each final starts where the last ended').toBe(end);
        end = Number(s.endSample);
      }
      expect(end).toBe(audio.length);
      expect(result.words.length).toBeGreaterThan(80);
      process.stderr.write(
        `upgrade: call ${f.sessionId}: ${finals.map((s) => `${s.startSample}-${s.endSample}${(s as { trigger?: string }).trigger ? `(${(s as { trigger?: string }).trigger})` : ''}`).join(' ')}\n`,
      );
    }
  }, 400_000);
});
