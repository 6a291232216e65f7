// Many hosts (issue 12, docs/scaling.md): failover time between nodes, and what the PostgreSQL
// store costs against SQLite on the same workload. One throwaway PostgreSQL cluster
// (test/helpers/postgres-cluster.ts) serves both parts, switched to durable settings (fsync,
// synchronous_commit, full_page_writes on; the test suite runs it with them off) so that it
// is compared fairly with SQLite, which syncs its WAL and the file spool (BENCH_PG_DURABLE=0
// keeps the suite's settings).
//
// 1. Failover. Three `scribed serve --database-url` nodes (--max-decoders 1) behind HAProxy
//    running deploy/haproxy.cfg (test/helpers/cluster.ts; the tests' fast health checks, or
//    the file's own with BENCH_CHECKS=deploy). One SessionStreamer (default reconnect
//    backoff, as `scribed stream` and `scribed rtp` use) streams the sample clips in a loop
//    as 8 kHz mu-law through HAProxy, paced at BENCH_PACE x real time (default 1), no
//    commits (manual mode: segments end at the 30 s bound). BENCH_KILLS times (default 10):
//    wait until the acknowledgements catch up, find the serving node (rt_sessions.owner_node
//    holds `-<pid>-`), kill -9 it and time kill -> the first ack of audio captured after the
//    kill (the stream keeps writing); then restart the killed node and wait 3-6 s (seeded).
//    Each failover is split from the client's log (socket closed, reconnecting delayMs,
//    session resumed, stream ready) and the taking node's ('open segment restored from the
//    spool': how much audio the takeover replayed). At the end: p50/p95/max, and the sample
//    accounting, which must lose nothing.
// 2. Store cost. One `scribed serve` on SQLite (--data-dir only) and one on PostgreSQL
//    (--database-url, a fresh database), BENCH_ROUNDS rounds each in ABBA order (drift
//    cancels), a fresh data dir and database every round. Each round: BENCH_STREAMS (default
//    2) concurrent sessions from this process straight to the server, BENCH_SECONDS (default
//    20) of mu-law in 20 ms frames paced at real time, a commit every 5 s (after a 1 s
//    warm-up session per stream that loads the decoders, not measured). Measured: ack
//    latency per frame (send -> the ack covering it), the server's CPU (utime+stime from
//    /proc/<pid>/stat, threads included) and the PostgreSQL cluster's (postmaster, its live
//    children and its reaped children) per audio second, before the first create to after
//    the last `closed`. Printed per store and as ratios PostgreSQL/SQLite.
//
// Run: npx vite-node bench/scaling.ts   (dist/cli.js must be current: npx tsc -p tsconfig.json)
//      BENCH_PARTS=failover | stores  runs one part; BENCH_DEBUG=1 prints every failover's log lines
//      (client and nodes, ms from the kill). About 4 minutes on 2 cores.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import readline from 'node:readline';
import { promisify } from 'node:util';
import pg from 'pg';
import { pino } from 'pino';
import WebSocket from 'ws';
import { SessionStreamer, type FinalSegment } from '../src/client/session-streamer.js';
import { PacedFrames } from './paced-frames.js';
import { chunks, loadClips } from '../test/helpers/audio.js';
import { CLI, startCluster, type ClusterNode, type LogRecord } from '../test/helpers/cluster.js';
import { FAST_CHECKS } from '../test/helpers/haproxy.js';
import { freeLoopbackPort, freshDatabase, startPostgresCluster } from '../test/helpers/postgres-cluster.js';

const execFileAsync = promisify(execFile);

const PARTS = (process.env.BENCH_PARTS ?? 'failover,stores').split(',');
const KILLS = Number(process.env.BENCH_KILLS ?? 10);
const PACE = Number(process.env.BENCH_PACE ?? 1);
const CHECKS = process.env.BENCH_CHECKS === 'deploy' ? 'deploy' : FAST_CHECKS;
const STREAMS = Number(process.env.BENCH_STREAMS ?? 2);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const PG_DURABLE = process.env.BENCH_PG_DURABLE !== '0';
const RATE = 8000;
const CLK_TCK = 100; // Linux USER_HZ (getconf CLK_TCK)

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Nearest-rank percentile. */
function pct(xs: number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]!;
}
const f0 = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : '-');
const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '-');
let seed = Number(process.env.BENCH_SEED ?? 12);
/** Seeded uniform [0, 1): the kill schedule is the same run to run. */
function rand(): number {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  return seed / 2 ** 32;
}

// The clips back to back: about 25 s of speech, looped.
const clipAudio = Buffer.concat(loadClips().map((c) => c.mulaw8k));
const loop = (seconds: number) =>
  Buffer.concat(Array.from({ length: Math.ceil((seconds * RATE) / clipAudio.length) }, () => clipAudio)).subarray(0, seconds * RATE);

// ------------------------------------------------------------------ /proc CPU

/** Fields of /proc/<pid>/stat after the command name (state is [0], ppid [1], utime [11]). */
function statFields(pid: number): string[] | null {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return s.slice(s.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}
/** utime + stime of a process (all its threads), seconds; with `reaped`, its waited-for children's too. */
function cpuOf(pid: number, reaped = false): number {
  const f = statFields(pid);
  if (!f) return 0;
  const ticks = Number(f[11]) + Number(f[12]) + (reaped ? Number(f[13]) + Number(f[14]) : 0);
  return ticks / CLK_TCK;
}
/** The postmaster listening on `port` (its data dir's postmaster.pid names the port). */
function postmasterPid(port: number): number {
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let argv: string[];
    try {
      argv = fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    const d = argv.indexOf('-D');
    if (!argv[0]?.endsWith('postgres') || d < 0 || !argv[d + 1]) continue;
    try {
      const lines = fs.readFileSync(path.join(argv[d + 1]!, 'postmaster.pid'), 'utf8').split('\n');
      if (Number(lines[0]) === Number(name) && Number(lines[3]) === port) return Number(name);
    } catch {
      continue;
    }
  }
  throw new Error(`no postmaster found for port ${port}`);
}
/** CPU of the whole PostgreSQL cluster so far: postmaster, live children, reaped children. */
function clusterCpu(pm: number): number {
  let sum = cpuOf(pm, true);
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const f = statFields(Number(name));
    if (f && Number(f[1]) === pm) sum += cpuOf(Number(name));
  }
  return sum;
}

// ------------------------------------------------------------------ PostgreSQL

console.log(
  `scaling: node ${process.version}, ${os.cpus().length} x ${os.cpus()[0]?.model}, load ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
const pgc = await startPostgresCluster();
const pgPort = Number(new URL(pgc.url).port);
const pmPid = postmasterPid(pgPort);
{
  const c = new pg.Client({ connectionString: pgc.url });
  await c.connect();
  if (PG_DURABLE) {
    for (const setting of ['fsync', 'synchronous_commit', 'full_page_writes']) await c.query(`ALTER SYSTEM SET ${setting} = on`);
    await c.query('SELECT pg_reload_conf()');
    await sleep(300);
  }
  const v = await c.query<{ server_version: string; fsync: string; sc: string }>(
    "SELECT current_setting('server_version') AS server_version, current_setting('fsync') AS fsync, current_setting('synchronous_commit') AS sc",
  );
  console.log(
    `PostgreSQL ${v.rows[0]!.server_version} (throwaway cluster, loopback, same machine): fsync=${v.rows[0]!.fsync} synchronous_commit=${v.rows[0]!.sc}`,
  );
  await c.end();
}

const cleanups: Array<() => Promise<void>> = [];
async function cleanup(): Promise<void> {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
}
for (const sig of ['SIGINT', 'SIGTERM'] as const)
  process.once(
    sig,
    () =>
      void cleanup()
        .then(() => pgc.stop())
        .finally(() => process.exit(130)),
  );

try {
  if (PARTS.includes('failover')) await failover();
  if (PARTS.includes('stores')) await stores();
} finally {
  await cleanup();
  await pgc.stop();
}
console.log(
  `load at end ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);

// ------------------------------------------------------------------ 1. failover

interface Kill {
  killed: string;
  took: string;
  atSec: number; // session position (s of audio) when killed
  behindSec: number; // captured but not acknowledged at the kill (0.2 s when caught up)
  replaySec: number; // open segment the taking node replayed
  totalMs: number; // kill -> first ack of audio captured after the kill
  firstAckMs: number; // kill -> first ack beyond what was acknowledged at the kill
  detectMs: number; // kill -> client saw its socket close
  backoffMs: number; // reconnect delays the client waited (sum)
  attempts: number;
  resumeMs: number; // end of backoff -> resume answered (HTTP through HAProxy)
  takeoverMs: number; // resume answered -> `ready` (socket, claim, spool read, replay decode)
  ackMs: number; // `ready` -> the first new ack
}

async function failover(): Promise<void> {
  const t0 = performance.now();
  const cluster = await startCluster({ adminUrl: pgc.url, nodes: 3, maxDecoders: 1, checks: CHECKS });
  cleanups.push(() => cluster.stop());
  const db = new pg.Client({ connectionString: cluster.dbUrl });
  await db.connect();
  cleanups.push(() => db.end());
  const { accessKey } = await cluster.createAccount(100_000_000);

  const clientLog: LogRecord[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void clientLog.push(JSON.parse(line) as LogRecord) });
  const streamer = new SessionStreamer({
    url: cluster.url,
    accessKey,
    encoding: 'mulaw_8000',
    streamId: randomUUID(),
    bufferSamples: 120 * RATE,
    logger,
  });
  const { sessionId } = await streamer.start();
  let finalEnd = 0;
  streamer.on('final', (f: FinalSegment) => (finalEnd = Math.max(finalEnd, Number(f.endSample))));

  // The writer: 100 ms pieces of the looped clips at PACE x real time, whatever happens.
  const pieces = chunks(clipAudio, 1, 800);
  let writing = true;
  const writer = (async () => {
    const start = performance.now();
    for (let k = 0; writing; k++) {
      await streamer.write(pieces[k % pieces.length]!);
      await sleep(Math.max(0, start + ((k + 1) * 100) / PACE - performance.now()));
    }
  })();

  async function ownerOf(): Promise<ClusterNode | null> {
    const r = await db.query<{ owner_node: string | null }>('SELECT owner_node FROM rt_sessions WHERE id = $1', [sessionId]);
    const owner = r.rows[0]?.owner_node;
    return owner ? (cluster.nodes.find((n) => n.proc?.pid !== undefined && owner.includes(`-${n.proc.pid}-`)) ?? null) : null;
  }

  const kills: Kill[] = [];
  let restarting: Promise<void> = Promise.resolve();
  await sleep(3000);
  for (let i = 0; i < KILLS; i++) {
    await restarting;
    await sleep(3000 + 3000 * rand());
    // The server acknowledges a frame once its recognizer took it: at more than real time,
    // or on a loaded machine, acks fall behind the capture and a kill would time the backlog.
    // Waited for up to 90 s; a kill behind that is timed anyway and flagged.
    for (let w = 0; w < 9000; w++) {
      const s = streamer.stats();
      if (s.connected && s.acknowledged >= s.captured - 1600) break;
      await sleep(10);
    }
    const owner = await ownerOf();
    if (!owner) throw new Error('no live node owns the session');
    const before = streamer.stats();
    const logMark = clientLog.length;
    const nodeMarks = new Map(cluster.nodes.map((n) => [n, n.logs.length]));
    const tKill = Date.now();
    await owner.kill('SIGKILL');
    let firstAck = 0;
    for (;;) {
      const s = streamer.stats();
      if (!firstAck && s.acknowledged > before.acknowledged) firstAck = Date.now();
      if (s.acknowledged > before.captured) break;
      if (Date.now() - tKill > 120_000) throw new Error('no new ack within 120 s of the kill');
      await sleep(2);
    }
    const tAck = Date.now();
    restarting = owner.restart();

    // The split, from the client's log and the taking node's.
    const recs = clientLog.slice(logMark);
    const at = (msg: string) => recs.find((r) => r.msg === msg)?.time as number | undefined;
    const delays = recs.filter((r) => r.msg === 'reconnecting');
    const backoffMs = delays.reduce((s, r) => s + Number(r.delayMs), 0);
    const lastDelay = delays.at(-1);
    const resumed = recs.filter((r) => r.msg === 'session resumed').at(-1)?.time as number | undefined;
    const ready = recs.filter((r) => r.msg === 'stream ready').at(-1)?.time as number | undefined;
    let took = '?';
    let replaySec = 0;
    for (const [n, mark] of nodeMarks) {
      const nl = n.logs.slice(mark);
      if (nl.some((r) => r.msg === 'socket attached' && r.sessionId === sessionId)) took = n.name;
      const restored = nl.find((r) => r.msg === 'open segment restored from the spool');
      if (restored) replaySec = Number(restored.samples) / RATE;
    }
    kills.push({
      killed: owner.name,
      took,
      atSec: before.acknowledged / RATE,
      behindSec: (before.captured - before.acknowledged) / RATE,
      replaySec,
      totalMs: tAck - tKill,
      firstAckMs: firstAck - tKill,
      detectMs: (at('socket closed') ?? Number.NaN) - tKill,
      backoffMs,
      attempts: delays.length,
      resumeMs: resumed !== undefined && lastDelay ? resumed - (Number(lastDelay.time) + Number(lastDelay.delayMs)) : Number.NaN,
      takeoverMs: resumed !== undefined && ready !== undefined ? ready - resumed : Number.NaN,
      ackMs: ready !== undefined ? tAck - ready : Number.NaN,
    });
    const k = kills.at(-1)!;
    if (process.env.BENCH_DEBUG) {
      const show = (who: string, r: LogRecord) =>
        console.log(
          `    ${String(Number(r.time) - tKill).padStart(7)} ms ${who}: ${r.msg} ${JSON.stringify(Object.fromEntries(Object.entries(r).filter(([key]) => !['level', 'time', 'msg', 'service', 'pid', 'hostname', 'streamId', 'sessionId', 'node'].includes(key))))}`,
        );
      const all: Array<[string, LogRecord]> = [...recs.map((r): [string, LogRecord] => ['client', r])];
      for (const [n, mark] of nodeMarks) for (const r of n.logs.slice(mark)) if (typeof r.time === 'number') all.push([n.name, r]);
      for (const [who, r] of all.sort((a, b) => Number(a[1].time) - Number(b[1].time))) show(who, r);
      console.log(`    ${tAck - tKill} ms: first ack of new audio; first ack of any kind ${firstAck - tKill} ms`);
    }
    console.log(
      `  kill ${String(i + 1).padStart(2)}: ${k.killed} -> ${k.took} at ${f1(k.atSec)} s${k.behindSec > 0.25 ? ` (acks ${f1(k.behindSec)} s behind the capture)` : ''}, replayed ${f1(k.replaySec)} s: ${k.totalMs} ms (first ack ${k.firstAckMs}) ` +
        `(detect ${f0(k.detectMs)}, backoff ${k.backoffMs} in ${k.attempts} attempt(s), resume ${f0(k.resumeMs)}, takeover ${f0(k.takeoverMs)}, ready->ack ${f0(k.ackMs)})`,
    );
  }
  await restarting;
  writing = false;
  await writer;
  const summary = await streamer.end();
  const wall = (performance.now() - t0) / 1000;

  const transcribedEnd = Math.max(0, finalEnd, ...summary.finals.map((f) => Number(f.endSample)));
  const segs = await db.query<{ start_sample: string; end_sample: string }>(
    'SELECT s.start_sample, s.end_sample FROM segments s JOIN rt_sessions r ON r.transcription_id = s.transcription_id WHERE r.id = $1 ORDER BY s.idx',
    [sessionId],
  );
  const contiguous = segs.rows.every((row, i) => row.start_sample === (i === 0 ? '0' : segs.rows[i - 1]!.end_sample));
  const captured = summary.capturedSamples;
  const lost = Math.max(captured - summary.acknowledgedSamples, captured - (summary.serverCapturedSamples ?? 0), captured - transcribedEnd);

  const col = (f: (k: Kill) => number) => kills.map(f).filter(Number.isFinite);
  const row = (name: string, xs: number[]) =>
    `  ${name.padEnd(34)} ${f0(pct(xs, 0.5)).padStart(6)} ${f0(pct(xs, 0.95)).padStart(6)} ${f0(Math.max(...xs)).padStart(6)}`;
  console.log(
    `\n== failover: 3 nodes (--max-decoders 1) behind HAProxy (${CHECKS === 'deploy' ? 'deploy/haproxy.cfg checks: inter 1s fall 2' : 'fast checks: inter 200ms fall 1'}), ${kills.length} kill -9 of the serving node ==`,
  );
  console.log(
    `  1 SessionStreamer, looped sample clips as mu-law 8 kHz at ${PACE}x real time, default backoff (250 ms base), no commits (30 s segment bound); ${wall.toFixed(0)} s wall`,
  );
  console.log(
    `  ${''.padEnd(34)} ${'p50'.padStart(6)} ${'p95'.padStart(6)} ${'max'.padStart(6)}   (ms; n=${kills.length}, p95 of 10 is the 10th)`,
  );
  console.log(
    row(
      'failover: kill -> first new ack',
      col((k) => k.totalMs),
    ),
  );
  console.log(
    row(
      '  kill -> first ack of any kind',
      col((k) => k.firstAckMs),
    ),
  );
  console.log(
    row(
      '  client: kill -> socket closed',
      col((k) => k.detectMs),
    ),
  );
  console.log(
    row(
      '  client: reconnect backoff',
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
      '  server takeover: resume -> ready',
      col((k) => k.takeoverMs),
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
      '  open segment replayed (s x 1000)',
      col((k) => k.replaySec * 1000),
    ),
  );
  const share = (f: (k: Kill) => number) =>
    (100 * kills.reduce((s, k) => s + (Number.isFinite(f(k)) ? f(k) : 0), 0)) / kills.reduce((s, k) => s + k.totalMs, 0);
  console.log(
    `  share of the total failover time: backoff ${share((k) => k.backoffMs).toFixed(0)}%, server takeover ${share((k) => k.takeoverMs).toFixed(0)}%, ` +
      `resume request ${share((k) => k.resumeMs).toFixed(0)}%, detect ${share((k) => k.detectMs).toFixed(0)}%, ready->ack ${share((k) => k.ackMs).toFixed(0)}%`,
  );
  const xs = kills.map((k) => k.replaySec);
  const ys = kills.map((k) => k.takeoverMs);
  const corr = correlation(xs, ys);
  if (Number.isFinite(corr)) {
    const b = slope(xs, ys);
    const a = ys.reduce((p, y) => p + y, 0) / ys.length - (b * xs.reduce((p, x) => p + x, 0)) / xs.length;
    console.log(
      `  server takeover vs open segment replayed: correlation ${corr.toFixed(2)}; takeover ~ ${f0(a)} ms + ${f0(b)} ms per replayed audio second (the replay's wall-clock real-time factor ${(b / 1000).toFixed(2)})`,
    );
  }
  const behind = kills.filter((k) => k.behindSec > 0.25).length;
  if (behind > 0)
    console.log(
      `  ${behind} kill(s) came while acks were behind the capture (the machine did not decode ${PACE}x real time): their kill -> new-ack time includes that backlog`,
    );
  console.log(
    `  samples: captured ${captured}, acknowledged ${summary.acknowledgedSamples}, server-held ${summary.serverCapturedSamples}, transcribed to ${transcribedEnd}` +
      ` (${segs.rows.length} segments, ${contiguous ? 'contiguous' : 'NOT CONTIGUOUS'}); gap ${summary.gapSamples}; ${summary.reconnects} reconnects, ${summary.resumes} resumes`,
  );
  console.log(`  samples lost: ${lost}${lost === 0 && contiguous && summary.gapSamples === 0 ? '' : '   <-- LOSS'}`);
}

function correlation(xs: number[], ys: number[]): number {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    sxy += (xs[i]! - mx) * (ys[i]! - my);
    sxx += (xs[i]! - mx) ** 2;
    syy += (ys[i]! - my) ** 2;
  }
  return sxy / Math.sqrt(sxx * syy);
}
function slope(xs: number[], ys: number[]): number {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < n; i++) {
    sxy += (xs[i]! - mx) * (ys[i]! - my);
    sxx += (xs[i]! - mx) ** 2;
  }
  return sxy / sxx;
}

// ------------------------------------------------------------------ 2. store cost

type StoreName = 'sqlite' | 'postgres';
interface Round {
  store: StoreName;
  ackMs: number[];
  serverCpu: number;
  pgCpu: number;
  audioSec: number;
  wall: number;
  finals: number;
}

/** Start `scribed serve` on a fresh data dir (and database); resolves once it listens. */
async function startServer(store: StoreName): Promise<{ base: string; proc: ChildProcess; accessKey: string; stop(): Promise<void> }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `scribed-bench-${store}-`));
  const db = store === 'postgres' ? await freshDatabase(pgc.url) : null;
  const storeArgs = db ? ['--data-dir', dataDir, '--database-url', db.url] : ['--data-dir', dataDir];
  const { stdout } = await execFileAsync(
    process.execPath,
    [CLI, 'accounts', 'create', '--name', 'bench', '--characters', '100000000', '--json', ...storeArgs],
    { encoding: 'utf8' },
  );
  const accessKey = (JSON.parse(stdout) as { accessKey: string }).accessKey;
  const port = await freeLoopbackPort();
  const proc = spawn(
    process.execPath,
    [CLI, 'serve', '--host', '127.0.0.1', '--port', String(port), '--max-decoders', String(STREAMS), ...storeArgs],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, SCRIBED_LOG_LEVEL: 'info', SCRIBED_MAX_STREAMS_PER_ACCOUNT: '0' },
    },
  );
  const errs: string[] = [];
  readline.createInterface({ input: proc.stderr! }).on('line', (l) => errs.push(l));
  await new Promise<void>((resolve, reject) => {
    readline.createInterface({ input: proc.stdout! }).on('line', (line) => {
      if (line.includes('"scribed listening"')) resolve();
    });
    proc.once('exit', (code, signal) => reject(new Error(`serve (${store}) exited (${code ?? signal}): ${errs.slice(-20).join('\n')}`)));
  });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await exited;
    }
    await db?.drop().catch(() => undefined);
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  cleanups.push(stop);
  return { base: `http://127.0.0.1:${port}`, proc, accessKey, stop };
}

/** One real-time session: 20 ms frames at real time, a commit every 5 s, close after the last ack. */
async function realtimeSession(
  base: string,
  accessKey: string,
  audio: Buffer,
  startDelayMs: number,
): Promise<{ ackMs: number[]; held: number; finals: number }> {
  await sleep(startDelayMs);
  const res = await fetch(`${base}/sound_clone/api/v1/stt/realtime/sessions`, {
    method: 'POST',
    headers: { accessKey, 'Idempotency-Key': `bench-${randomUUID()}`, 'content-type': 'application/json' },
    body: JSON.stringify({ options: { inputEncoding: 'mulaw_8000' } }),
  });
  const created = (await res.json()) as any;
  if (res.status !== 200) throw new Error(`create: HTTP ${res.status} ${created.message}`);
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}${created.data.streamUrl}`, { headers: { accessKey } });
  const paced = new PacedFrames(audio);
  const ackMs = paced.ackMs;
  let finals = 0;
  return new Promise((resolve, reject) => {
    let epoch = 0;
    let closeSent = false;
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      const ev = JSON.parse(data.toString()) as Record<string, any>;
      if (ev.type === 'ready') {
        epoch = ev.epoch;
        // a commit every 5 s (250 frames), none after the last frame
        paced.start(ws, epoch, (k) => {
          if ((k + 1) % 250 === 0 && k + 1 < paced.frames) ws.send(JSON.stringify({ type: 'commit' }));
        });
      } else if (ev.type === 'ack' && ev.epoch === epoch) {
        paced.acknowledged(Number(ev.capturedSamples));
        if (paced.allAcknowledged && !closeSent) {
          closeSent = true;
          ws.send(JSON.stringify({ type: 'close' }));
        }
      } else if (ev.type === 'final') finals += 1;
      else if (ev.type === 'closed') {
        ws.close(1000);
        resolve({ ackMs, held: Number(ev.capturedSamples), finals });
      } else if (ev.type === 'error') reject(new Error(`${ev.code}: ${ev.message}`));
    });
    ws.on('error', reject);
    ws.on('close', (code) => reject(new Error(`socket closed ${code} before closed`)));
  });
}

async function storeRound(store: StoreName): Promise<Round> {
  const server = await startServer(store);
  // Warm-up, not measured: one short session per stream loads the telephony decoders (the
  // server starts with one wideband decoder; spawning a decoder costs about 0.6 CPU s).
  await Promise.all(Array.from({ length: STREAMS }, () => realtimeSession(server.base, server.accessKey, loop(1), 0)));
  await sleep(500);
  const audio = loop(SECONDS);
  const cpu0 = cpuOf(server.proc.pid!);
  const pg0 = clusterCpu(pmPid);
  const t0 = performance.now();
  const runs = await Promise.all(
    Array.from({ length: STREAMS }, (_, i) => realtimeSession(server.base, server.accessKey, audio, (i * 20) / STREAMS + i * 7)),
  );
  const wall = (performance.now() - t0) / 1000;
  const serverCpu = cpuOf(server.proc.pid!) - cpu0;
  const pgCpu = clusterCpu(pmPid) - pg0;
  await server.stop();
  for (const r of runs)
    if (r.held !== audio.length) throw new Error(`${store}: a session closed with ${r.held} samples held, expected ${audio.length}`);
  const round: Round = {
    store,
    ackMs: runs.flatMap((r) => r.ackMs),
    serverCpu,
    pgCpu,
    audioSec: (STREAMS * audio.length) / RATE,
    wall,
    finals: runs.reduce((s, r) => s + r.finals, 0),
  };
  console.log(
    `  ${store.padEnd(8)} ${round.audioSec.toFixed(0)} audio s in ${wall.toFixed(1)} s: ack p50 ${pct(round.ackMs, 0.5).toFixed(1)} ms p95 ${pct(round.ackMs, 0.95).toFixed(1)} ms; ` +
      `server ${serverCpu.toFixed(2)} CPU s, postgres ${pgCpu.toFixed(2)} CPU s; ${round.finals} finals; load ${os.loadavg()[0]!.toFixed(1)}`,
  );
  return round;
}

async function stores(): Promise<void> {
  console.log(
    `\n== store cost: ${STREAMS} real-time sessions x ${SECONDS} s (mu-law 8 kHz, 20 ms frames, commit every 5 s), ${ROUNDS} rounds per store, ABBA ==`,
  );
  const rounds: Round[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const order: StoreName[] = r % 2 === 0 ? ['sqlite', 'postgres'] : ['postgres', 'sqlite'];
    for (const s of order) rounds.push(await storeRound(s));
  }
  const agg = (store: StoreName) => {
    const rs = rounds.filter((r) => r.store === store);
    const audio = rs.reduce((s, r) => s + r.audioSec, 0);
    const lat = rs.flatMap((r) => r.ackMs);
    return {
      p50: pct(lat, 0.5),
      p95: pct(lat, 0.95),
      p99: pct(lat, 0.99),
      server: rs.reduce((s, r) => s + r.serverCpu, 0) / audio,
      pg: rs.reduce((s, r) => s + r.pgCpu, 0) / audio,
    };
  };
  const s = agg('sqlite');
  const p = agg('postgres');
  const w = 26;
  const line = (name: string, a: string, b: string, ratio: string) =>
    console.log(`  ${name.padEnd(w)} ${a.padStart(10)} ${b.padStart(10)} ${ratio.padStart(10)}`);
  console.log('');
  line('', 'SQLite', 'PostgreSQL', 'PG/SQLite');
  line('ack latency p50 (ms)', s.p50.toFixed(1), p.p50.toFixed(1), (p.p50 / s.p50).toFixed(2));
  line('ack latency p95 (ms)', s.p95.toFixed(1), p.p95.toFixed(1), (p.p95 / s.p95).toFixed(2));
  line('ack latency p99 (ms)', s.p99.toFixed(1), p.p99.toFixed(1), (p.p99 / s.p99).toFixed(2));
  line('server CPU s / audio s', s.server.toFixed(4), p.server.toFixed(4), (p.server / s.server).toFixed(2));
  line('postgres CPU s / audio s', `(${s.pg.toFixed(4)})`, p.pg.toFixed(4), '');
  line('total CPU s / audio s', s.server.toFixed(4), (p.server + p.pg).toFixed(4), ((p.server + p.pg) / s.server).toFixed(2));
  console.log(
    `  (the SQLite column's postgres figure is the idle cluster during the SQLite rounds: the noise floor, not counted in its total)`,
  );
  const lagging = rounds.filter((r) => r.wall > SECONDS + 5 || pct(r.ackMs, 0.5) > 500).length;
  if (lagging > 0) {
    console.log(
      `  WARNING: in ${lagging} of ${rounds.length} rounds the decoders fell behind real time (a frame is acknowledged only after its recognizer took it): ` +
        'those ack latencies measure the decoding backlog of a loaded machine, not the store',
    );
  }
  console.log(
    `  extra CPU of the PostgreSQL path: ${((p.server + p.pg - s.server) * 100).toFixed(2)}% of a core per real-time call (server ${((p.server - s.server) * 100).toFixed(2)}%, postgres ${(p.pg * 100).toFixed(2)}%)`,
  );
}
