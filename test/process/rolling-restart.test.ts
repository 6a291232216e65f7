// A rolling restart of a three-node cluster behind HAProxy (deploy/haproxy.cfg, agent checks
// on) with live calls through `scribed stream` at real time: each node in turn is drained
// (SIGTERM, or `scribed drain` for the second, which must behave the same), exits once its
// calls have moved, and is started again before the next. Every call must come through with
// 0 samples lost, no final cut by a stop (trigger `shutdown`) and the words of an undisturbed
// run. The ack gap of every handover (the client's last ack on the old node to its first on
// the new) is printed as p50/p95 (docs/benchmarks.md, "Drain").
//
// CALLS = 4, not the 20: the CI machine has 2 cores that also run another test file,
// and the recognizer costs 0.28-0.34 CPU seconds per second of telephony audio
// (docs/benchmarks.md, bench/engine-rtf.ts), so 4 real-time calls are over half a core of
// recognition (plus 3 nodes, HAProxy and 4 CLI processes); 20 would need about 6 cores, the
// calls would fall behind real time, and that is load, not the drain, under test. Manual commit mode (no commit until the end): its words do not depend on how
// the frames were paced, which on a loaded machine differs from run to run in vad mode, moved
// or not (test/process/drain.test.ts); the drain then tells each call after its boundary wait
// and the new node finishes the open segment from the shared spool.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadClips } from '../helpers/audio.js';
import { CLI, startCluster, type Cluster, type ClusterNode } from '../helpers/cluster.js';
import { startStreamCli, streamCliResult, type StreamCliRun } from '../helpers/stream-cli-run.js';

const execFileAsync = promisify(execFile);
const RATE = 8000;
const CALLS = 4;
// About 100 s of speech: long enough to outlast three drains (each 10-17 s here: the notice,
// the boundary wait, the move) and three restarts (15-23 s each at load 10; calls of 75 s
// ended during the last drain there, and their closes stayed on the draining node).
const clip = Buffer.concat(loadClips().map((c) => c.mulaw8k));
const audio = Buffer.concat([clip, clip, clip, clip]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// Read by each node at its (re)start: the tests' HAProxy takes a node out within one 200 ms
// check, so the notice can be short; a grace of 14 s makes the boundary wait 7 s (half), as
// in test/process/drain.test.ts.
const env = { SCRIBED_DRAIN_NOTICE_MS: '400', SCRIBED_DRAIN_GRACE_MS: '14000' };
const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));

let cluster: Cluster;
let accessKey: string;
let dir: string;
/** Every stream CLI started, killed after the test (a failed test must not leave one retrying). */
const started: StreamCliRun[] = [];
let file: string;

beforeAll(async () => {
  Object.assign(process.env, env);
  cluster = await startCluster({ adminUrl: inject('postgresUrl'), nodes: 3, maxDecoders: 3, agents: true });
  accessKey = (await cluster.createAccount(1_000_000)).accessKey;
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-rolling-'));
  file = path.join(dir, 'call.ulaw');
  fs.writeFileSync(file, audio);
}, 120_000);

afterAll(async () => {
  for (const r of started) if (r.proc.exitCode === null) r.proc.kill('SIGKILL');
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  await cluster?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function stream(args: string[] = []): Promise<StreamCliRun> {
  const run = await startStreamCli({
    url: cluster.url,
    accessKey,
    file,
    encoding: 'mulaw_8000',
    rate: RATE,
    dir,
    args: ['--segment-commit-mode', 'manual', ...args],
    echo: process.env.SCRIBED_TEST_LOG !== undefined,
  });
  started.push(run);
  return run;
}

function exitOf(node: ClusterNode): Promise<number | null> {
  const proc = node.proc!;
  return new Promise((resolve) => proc.once('exit', (code) => resolve(code)));
}

/** The q-quantile of `xs` (nearest rank). */
function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}

describe('a rolling restart of three nodes with live calls', () => {
  it('every node drained and restarted in turn: nothing lost, no shutdown final, the words of an undisturbed run', async () => {
    const clean = await stream();
    expect(await clean.exited).toBe(0);
    const reference = streamCliResult(clean).words;
    expect(reference.length).toBeGreaterThan(120);

    process.stderr.write(`rolling restart: reference run done (${reference.length} words)\n`);
    // Started together: one after another, a loaded host took up to 40 s to start the last.
    const runs = await Promise.all(Array.from({ length: CALLS }, () => stream(['--realtime'])));
    await Promise.all(runs.map((r) => r.sessionId()));
    while (Math.min(...(await Promise.all(runs.map(async (r) => (await r.counts()).captured)))) < 3 * RATE) await sleep(100);

    const t0 = Date.now();
    const step = (what: string) => process.stderr.write(`rolling restart +${Date.now() - t0} ms: ${what}\n`);
    const told: string[] = [];
    /** Each node's exit, after its SIGTERM or `scribed drain`. */
    const exitMs: number[] = [];
    for (const [i, node] of cluster.nodes.entries()) {
      // Each drain must find the calls still streaming: a call whose audio has ended waits
      // for its close where it is (src/server/drain.ts). A host too slow for the roll (node
      // restarts of 40-55 s at load 20-30) fails here, saying so.
      const ending = runs.filter((r) => r.log.some((l) => l.msg === 'all audio acknowledged; closing the session'));
      expect(
        ending.length,
        `calls of ${audio.length / RATE} s that ended before ${node.name}'s drain, ${Date.now() - t0} ms into the roll (load ${os.loadavg()[0]!.toFixed(1)})`,
      ).toBe(0);
      const since = node.logs.length;
      const exited = exitOf(node);
      const drainedAt = Date.now();
      step(`draining ${node.name}`);
      if (i === 1) {
        // The operator's command on the node's host, against the node's own port.
        const { stdout } = await execFileAsync(process.execPath, [CLI, 'drain', '--url', node.base], { encoding: 'utf8' });
        expect(JSON.parse(stdout)).toMatchObject({ status: 'draining', graceMs: 14_000 });
      } else node.proc!.kill('SIGTERM');
      expect(await exited, `${node.name} stopped cleanly`).toBe(0);
      exitMs.push(Date.now() - drainedAt);
      const logs = node.logs.slice(since);
      expect(
        logs.find((l) => l.msg === 'drained: no live call left'),
        `${node.name} left when its calls had moved`,
      ).toBeDefined();
      told.push(...logs.filter((l) => l.msg === 'draining: session told to reconnect elsewhere').map((l) => l.sessionId as string));
      step(`${node.name} stopped; starting it again`);
      await node.restart();
      await cluster.haproxy.waitForServer('scribed_live', node.name, 'UP', 20_000);
      step(`${node.name} UP`);
    }
    const rollMs = Date.now() - t0;
    expect(
      runs.every((r) => r.proc.exitCode === null),
      'the calls outlasted the rolling restart',
    ).toBe(true);

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
      expect((result.finals as Array<{ trigger?: string }>).filter((s) => s.trigger === 'shutdown')).toEqual([]);
      expect(result.words).toEqual(reference);
      for (const l of run.log) if (l.msg === 'moved to another node: first ack there') gaps.push(l.ackGapMs as number);
    }
    // Every call was on some node drained after it started, so each moved at least once; each
    // move a drain asked for, and none other (no call dropped to a plain reconnect).
    expect(told.length).toBeGreaterThanOrEqual(CALLS);
    expect(gaps.length).toBe(told.length);
    process.stderr.write(
      `rolling restart: ${CALLS} calls, 3 nodes drained and restarted in ${rollMs} ms; ${gaps.length} handovers; ack gap p50 ${quantile(gaps, 0.5)} ms, p95 ${quantile(gaps, 0.95)} ms (all: ${gaps.join(', ')}); nodes exited ${exitMs.join(', ')} ms after the drain began; load ${os.loadavg()[0]!.toFixed(1)}\n`,
    );
  }, 400_000);
});
