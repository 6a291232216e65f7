// Failover end to end (issue 34, docs/scaling.md): the real `scribed stream` CLI, its own
// reconnect, through a real HAProxy running deploy/haproxy.cfg (its own health check timings,
// `inter 1s fall 2`, unless BENCH_CHECKS=fast), to BENCH_NODES (default 3) `scribed serve
// --database-url` nodes (--max-decoders 1) on one PostgreSQL (a throwaway cluster, durable:
// fsync and synchronous_commit on).
//
// The audio: the sample clips looped to BENCH_SECONDS (default 150) as 8 kHz mu-law, a file the
// CLI paces at real time (`--realtime`, 20 ms pieces), manual segments (`--segment-commit-mode
// manual`: a segment ends at the 30 s bound, so a kill finds up to 30 s of open segment to
// take over, the worst case; and the words must equal an undisturbed run's exactly).
//
// 1. Undisturbed: one CLI run over the file, paced the same way (a manual segment ends with
//    the frame that reaches the bound, so frame sizes move it); its words are the reference.
// 2. Faulted: the same file, BENCH_KILLS (default 12) times: after 3-6 s (seeded), find the node
//    serving the session (rt_sessions.owner_node names its pid), read the CLI's captured count
//    (its --metrics-port), kill -9 that node, and poll the CLI's metrics every 5 ms until it
//    acknowledges audio captured after the kill: kill -> first acknowledgement of NEW audio.
//    Then the killed node is restarted (the next kill waits for two running nodes, not for
//    it). Split from the CLI's log (socket closed, reconnecting delayMs, session resumed,
//    stream ready) and the taking node's ('session taken over': claim and spool read;
//    'socket attached').
// At the end: p50/p95/max over the kills, samples lost (captured - held by the server + gap +
// overflow; must be 0), and words equal to the undisturbed run's.
//
// Run: npm run build:ts && npx vite-node bench/failover-haproxy.ts   (5-10 minutes)
//      BENCH_KILLS, BENCH_SECONDS, BENCH_NODES, BENCH_CHECKS=fast, BENCH_SEED, BENCH_DEBUG=1
//      (every kill's log lines in ms from the kill), BENCH_PG_DURABLE=0.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { loadClips } from '../test/helpers/audio.js';
import { startCluster, type Cluster, type ClusterNode, type LogRecord } from '../test/helpers/cluster.js';
import { FAST_CHECKS } from '../test/helpers/haproxy.js';
import { startStreamCli, streamCliResult } from '../test/helpers/stream-cli-run.js';
import { startPostgresCluster } from '../test/helpers/postgres-cluster.js';

const KILLS = Number(process.env.BENCH_KILLS ?? 12);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 150);
const NODES = Number(process.env.BENCH_NODES ?? 3);
const CHECKS = process.env.BENCH_CHECKS === 'fast' ? FAST_CHECKS : 'deploy';
const PG_DURABLE = process.env.BENCH_PG_DURABLE !== '0';
const RATE = 8000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
function pct(xs: number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]!;
}
const f0 = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : '-');
let seed = Number(process.env.BENCH_SEED ?? 34);
function rand(): number {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  return seed / 2 ** 32;
}
const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

const clips = Buffer.concat(loadClips().map((c) => c.mulaw8k));
const audio = Buffer.concat(Array.from({ length: Math.ceil((SECONDS * RATE) / clips.length) }, () => clips)).subarray(0, SECONDS * RATE);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-failover-bench-'));
const file = path.join(dir, 'call.ulaw');
fs.writeFileSync(file, audio);

console.log(`failover-haproxy: node ${process.version}, ${os.cpus().length} x ${os.cpus()[0]?.model}, load ${load()}`);
const pgc = await startPostgresCluster();
if (PG_DURABLE) {
  const c = new pg.Client({ connectionString: pgc.url });
  await c.connect();
  for (const setting of ['fsync', 'synchronous_commit', 'full_page_writes']) await c.query(`ALTER SYSTEM SET ${setting} = on`);
  await c.query('SELECT pg_reload_conf()');
  await c.end();
}
let cluster: Cluster | null = null;
let db: pg.Client | null = null;
const cleanup = async () => {
  await db?.end().catch(() => undefined);
  await cluster?.stop().catch(() => undefined);
  await pgc.stop().catch(() => undefined);
  fs.rmSync(dir, { recursive: true, force: true });
};
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void cleanup().finally(() => process.exit(130)));

const startCli = (accessKey: string, args: string[]) =>
  startStreamCli({
    url: cluster!.url,
    accessKey,
    file,
    encoding: 'mulaw_8000',
    rate: RATE,
    dir,
    args: ['--segment-commit-mode', 'manual', ...args],
    echo: process.env.BENCH_DEBUG === '2',
  });

interface Kill {
  killed: string;
  took: string;
  atSec: number;
  totalMs: number; // kill -> first ack of audio captured after the kill
  detectMs: number; // kill -> the CLI saw its socket close
  backoffMs: number; // reconnect delays the CLI waited (sum)
  attempts: number;
  resumeMs: number; // end of the last delay -> resume answered
  takeoverMs: number; // resume answered -> `ready`
  ackMs: number; // `ready` -> first new ack
  claimMs: number; // the taking node: claim in the store
  spoolMs: number; // the taking node: spool read
  replaySec: number; // open segment handed to the new decoder
}

try {
  cluster = await startCluster({ adminUrl: pgc.url, nodes: NODES, maxDecoders: 1, checks: CHECKS });
  db = new pg.Client({ connectionString: cluster.dbUrl });
  await db.connect();
  const { accessKey } = await cluster.createAccount(100_000_000);
  console.log(
    `${NODES} nodes, HAProxy ${CHECKS === 'deploy' ? 'with deploy/haproxy.cfg as is (checks inter 1s fall 2 rise 2)' : 'with fast checks (200 ms, fall 1)'}; ${SECONDS} s of speech per run; load ${load()}`,
  );

  const t0 = Date.now();
  // Paced as well: a manual segment ends with the frame that reaches the bound, and the
  // CLI's frames are 20 ms paced, up to 100 ms unpaced, so the bounds (and words) would differ.
  const clean = await startCli(accessKey, ['--realtime']);
  if ((await clean.exited) !== 0) throw new Error(`undisturbed run failed: ${JSON.stringify(clean.log.slice(-5))}`);
  const reference = streamCliResult(clean);
  console.log(
    `undisturbed: ${reference.words.length} words, ${reference.finals.length} segments, ${((Date.now() - t0) / 1000).toFixed(0)} s wall; load ${load()}`,
  );

  const run = await startCli(accessKey, ['--realtime']);
  const kills: Kill[] = [];
  let restarting: Promise<void> = Promise.resolve();
  const starting = new Set<ClusterNode>();
  const sessionId = await run.sessionId();
  const ownerOf = async (): Promise<ClusterNode | null> => {
    const r = await db!.query<{ owner_node: string | null }>('SELECT owner_node FROM rt_sessions WHERE id = $1', [sessionId]);
    const owner = r.rows[0]?.owner_node;
    return owner ? cluster!.nodeById(owner) : null;
  };
  for (let i = 0; i < KILLS; i++) {
    // The next kill needs a node to go to, not the last one killed back: with three nodes the
    // kills come every 3-6 s, whatever a restart takes on a loaded machine.
    for (let w = 0; cluster.nodes.filter((n) => n.proc !== null && !starting.has(n)).length < 2; w++) {
      if (w > 12_000) throw new Error('fewer than two nodes run for 120 s');
      await sleep(10);
    }
    if (NODES < 3) await restarting;
    await sleep(3000 + 3000 * rand());
    // The stream must be attached somewhere (a node restarting may have adopted it meanwhile).
    let owner: ClusterNode | null = null;
    for (let w = 0; w < 500 && !owner; w++) {
      owner = await ownerOf();
      if (!owner) await sleep(10);
    }
    if (!owner) throw new Error('no running node serves the session');
    const before = await run.counts();
    if (before.captured >= audio.length - 3 * RATE) {
      console.log(`  the audio ran out after ${kills.length} kills (raise BENCH_SECONDS)`);
      break;
    }
    const logMark = run.log.length;
    const nodeMarks = new Map(cluster.nodes.map((n) => [n, n.logs.length]));
    if (starting.has(owner)) await restarting; // not killed again while it starts
    const tKill = Date.now();
    await owner.kill('SIGKILL');
    for (;;) {
      const c = await run.counts();
      if (c.acknowledged > before.captured) break;
      if (Date.now() - tKill > 60_000) throw new Error('no new ack within 60 s of the kill');
      await sleep(5);
    }
    const tAck = Date.now();
    starting.add(owner);
    const killed = owner;
    restarting = owner.restart().finally(() => starting.delete(killed));

    const recs = run.log.slice(logMark);
    const first = (msg: string) => recs.find((r) => r.msg === msg)?.time as number | undefined;
    const last = (msg: string) => recs.filter((r) => r.msg === msg).at(-1)?.time as number | undefined;
    const delays = recs.filter((r) => r.msg === 'reconnecting');
    const lastDelay = delays.at(-1);
    const resumed = last('session resumed');
    const ready = last('stream ready');
    let took = '?';
    let claimMs = Number.NaN;
    let spoolMs = Number.NaN;
    let replaySec = 0;
    for (const [n, mark] of nodeMarks) {
      const nl = n.logs.slice(mark);
      if (nl.some((r) => r.msg === 'socket attached')) took = n.name;
      const taken = nl.find((r) => r.msg === 'session taken over');
      if (taken) {
        claimMs = Number(taken.claimMs);
        spoolMs = Number(taken.spoolReadMs);
        replaySec = Number(taken.openSamples) / RATE;
      }
    }
    const k: Kill = {
      killed: owner.name,
      took,
      atSec: before.captured / RATE,
      totalMs: tAck - tKill,
      detectMs: (first('socket closed') ?? Number.NaN) - tKill,
      backoffMs: delays.reduce((s, r) => s + Number(r.delayMs), 0),
      attempts: delays.length,
      resumeMs: resumed !== undefined && lastDelay ? resumed - (Number(lastDelay.time) + Number(lastDelay.delayMs)) : Number.NaN,
      takeoverMs: resumed !== undefined && ready !== undefined ? ready - resumed : Number.NaN,
      ackMs: ready !== undefined ? tAck - ready : Number.NaN,
      claimMs,
      spoolMs,
      replaySec,
    };
    kills.push(k);
    if (process.env.BENCH_DEBUG) {
      const all: Array<[string, LogRecord]> = recs.map((r): [string, LogRecord] => ['cli', r]);
      for (const [n, mark] of nodeMarks) for (const r of n.logs.slice(mark)) if (typeof r.time === 'number') all.push([n.name, r]);
      for (const [who, r] of all.sort((a, b) => Number(a[1].time) - Number(b[1].time))) {
        const rest = Object.fromEntries(
          Object.entries(r).filter(
            ([key]) => !['level', 'time', 'msg', 'service', 'pid', 'hostname', 'streamId', 'sessionId', 'node'].includes(key),
          ),
        );
        console.log(`    ${String(Number(r.time) - tKill).padStart(7)} ms ${who}: ${r.msg} ${JSON.stringify(rest)}`);
      }
    }
    console.log(
      `  kill ${String(i + 1).padStart(2)}: ${k.killed} -> ${k.took} at ${k.atSec.toFixed(1)} s, open segment ${k.replaySec.toFixed(1)} s: ${k.totalMs} ms ` +
        `(detect ${f0(k.detectMs)}, backoff ${k.backoffMs} in ${k.attempts}, resume ${f0(k.resumeMs)}, takeover ${f0(k.takeoverMs)} [claim ${f0(k.claimMs)}, spool ${f0(k.spoolMs)}], ready->ack ${f0(k.ackMs)}); load ${load()}`,
    );
  }
  await restarting;
  const code = await run.exited;
  if (code !== 0) throw new Error(`faulted run exited ${code}: ${JSON.stringify(run.log.slice(-5))}`);
  const faulted = streamCliResult(run);
  const f = faulted.finished;
  const lost = Number(f.capturedSamples) - Number(f.serverCapturedSamples) + Number(f.gapSamples) + Number(f.overflowSamples);
  const transcribedEnd = Math.max(...faulted.finals.map((s) => Number(s.endSample)));
  const sameWords = JSON.stringify(faulted.words) === JSON.stringify(reference.words);

  const col = (g: (k: Kill) => number) => kills.map(g).filter(Number.isFinite);
  const row = (name: string, xs: number[]) =>
    `  ${name.padEnd(36)} ${f0(pct(xs, 0.5)).padStart(6)} ${f0(pct(xs, 0.95)).padStart(6)} ${f0(Math.max(...xs)).padStart(6)}`;
  console.log(
    `\n== failover through HAProxy with \`scribed stream\` (--realtime, manual segments), ${kills.length} kill -9 of the serving node, ${NODES} nodes (--max-decoders 1) ==`,
  );
  console.log(`  ${''.padEnd(36)} ${'p50'.padStart(6)} ${'p95'.padStart(6)} ${'max'.padStart(6)}   (ms)`);
  console.log(
    row(
      'kill -> first ack of new audio',
      col((k) => k.totalMs),
    ),
  );
  console.log(
    row(
      '  CLI: kill -> socket closed',
      col((k) => k.detectMs),
    ),
  );
  console.log(
    row(
      '  CLI: reconnect delay(s)',
      col((k) => k.backoffMs),
    ),
  );
  console.log(
    row(
      '  resume request (HAProxy, store)',
      col((k) => k.resumeMs),
    ),
  );
  console.log(
    row(
      '  resume answered -> ready',
      col((k) => k.takeoverMs),
    ),
  );
  console.log(
    row(
      '    taking node: claim',
      col((k) => k.claimMs),
    ),
  );
  console.log(
    row(
      '    taking node: spool read',
      col((k) => k.spoolMs),
    ),
  );
  console.log(
    row(
      '  ready -> first new ack',
      col((k) => k.ackMs),
    ),
  );
  console.log(
    row(
      '  open segment taken over (s x 1000)',
      col((k) => k.replaySec * 1000),
    ),
  );
  console.log(
    `samples captured ${f.capturedSamples}, held by the server ${f.serverCapturedSamples}, acknowledged ${f.acknowledgedSamples}, transcribed to ${transcribedEnd}, gap ${f.gapSamples}, overflow ${f.overflowSamples}: lost ${lost}; ` +
      `${f.resumes} resumes; words ${faulted.words.length} vs undisturbed ${reference.words.length}: ${sameWords ? 'equal' : 'DIFFERENT'}; load at end ${load()}`,
  );
  if (lost !== 0 || !sameWords || transcribedEnd !== Number(f.capturedSamples)) process.exitCode = 1;
} finally {
  await cleanup();
}
