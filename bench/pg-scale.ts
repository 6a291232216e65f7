// PostgreSQL at scale (issue 34, docs/benchmarks.md "PostgreSQL at scale"): what the shared
// spool costs PostgreSQL per call when one node carries many calls.
//
// One throwaway PostgreSQL cluster (test/helpers/postgres-cluster.ts) switched to durable
// settings (fsync, synchronous_commit, full_page_writes on, as bench/scaling.ts). For each N in
// BENCH_STREAMS (default 1,10,50,100,200): a fresh database, one `scribed serve
// --database-url` from dist (--max-decoders 1, --max-deferred-seconds 86400: recognition is
// deferred, so audio is acknowledged and spooled without being decoded and the spool path is
// measured at a scale this machine's recognizer could not carry), and N paced 8 kHz mu-law
// streams from bench/pg-scale-sender.mjs (one light process per 100 streams). After the
// streams run and BENCH_WARMUP_S (5) s pass, a window of BENCH_SECONDS (20) s is measured:
// - PostgreSQL CPU: utime+stime of the cluster's processes from /proc (postmaster, live
//   children, reaped children), per call as % of a core;
// - WAL bytes: pg_current_wal_lsn() difference, per call per second and per audio byte (the
//   audio as it comes, 8 kHz mu-law: one byte a sample, 8,000 B/s a call);
// - audio spooled: the spool's end summed over sessions, at the window's ends;
// - transactions/s: pg_stat_database.xact_commit of the database (stats lag a second or so);
// - the node's ack lag (send -> ack of each frame sent in the window) p50/p95, and how late
//   the senders sent (p95): a sender that fell behind measures itself, not the node;
// - the node's CPU per call.
// The streams belong to accounts of BENCH_STREAMS_PER_ACCOUNT (2) each, and the node's pool has
// BENCH_POOL (50) connections: a session debits its account once a second in a transaction of
// several round trips that locks the account row, so on a loaded machine 100 calls of one
// account (or 100 calls through 10 connections) fall behind real time on the debits alone.
// Then the extrapolation to 1,000 calls from the largest N: PostgreSQL cores and WAL MB/s.
//
// A/B: BENCH_BEFORE_CLI=/path/to/other/dist/cli.js measures that build too at every N, in the
// same run, order alternating per N, and prints ratios after/before.
//
// Run: npm run build:ts; npx vite-node bench/pg-scale.ts
//      BENCH_BEFORE_CLI=/work/main/dist/cli.js BENCH_STREAMS=1,10,50,100,200 npx vite-node bench/pg-scale.ts
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { promisify } from 'node:util';
import pg from 'pg';
import { loadClips } from '../test/helpers/audio.js';
import { CLI } from '../test/helpers/cluster.js';
import { findPostgresBinDir, freeLoopbackPort, freshDatabase, startPostgresCluster } from '../test/helpers/postgres-cluster.js';

const execFileAsync = promisify(execFile);
const STREAMS = (process.env.BENCH_STREAMS ?? '1,10,50,100,200').split(',').map(Number);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const WARMUP_S = Number(process.env.BENCH_WARMUP_S ?? 5);
const BEFORE_CLI = process.env.BENCH_BEFORE_CLI;
const PER_SENDER = Number(process.env.BENCH_STREAMS_PER_SENDER ?? 100);
/** Frame length: 20 ms as telephony sends; longer frames cost the node (and the senders) less
 * per second of audio on a loaded machine, while the spool still commits once a window. */
const FRAME_MS = Number(process.env.BENCH_FRAME_MS ?? 20);
const PER_ACCOUNT = Number(process.env.BENCH_STREAMS_PER_ACCOUNT ?? 2);
/** The node's --database-pool-size: a debit a second per call, each a transaction of several
 * round trips, must not queue for a connection (the default 10 carries about 30 calls at a
 * loaded machine's round-trip times). */
const POOL = Number(process.env.BENCH_POOL ?? 50);
const CLK_TCK = 100;
/** BENCH_WALDUMP=1: print pg_waldump's per-record-type statistics of each window (what the
 * WAL is made of: heap inserts, index entries, full-page images, commits). */
const WALDUMP = process.env.BENCH_WALDUMP === '1';
const SENDER = path.join(path.dirname(new URL(import.meta.url).pathname), 'pg-scale-sender.mjs');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
function pct(xs: number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = Float64Array.from(xs).sort();
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]!;
}
const load = () => os.loadavg()[0]!.toFixed(1);

// ------------------------------------------------------------------ /proc CPU (as bench/scaling.ts)

function statFields(pid: number): string[] | null {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return s.slice(s.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}
function cpuOf(pid: number, reaped = false): number {
  const f = statFields(pid);
  if (!f) return 0;
  return (Number(f[11]) + Number(f[12]) + (reaped ? Number(f[13]) + Number(f[14]) : 0)) / CLK_TCK;
}
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
function clusterCpu(pm: number): number {
  let sum = cpuOf(pm, true);
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const f = statFields(Number(name));
    if (f && Number(f[1]) === pm) sum += cpuOf(Number(name));
  }
  return sum;
}

// ------------------------------------------------------------------ set-up

console.log(
  `pg-scale: node ${process.version}, ${os.cpus().length} x ${os.cpus()[0]?.model}, load ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
const pgc = await startPostgresCluster();
const pmPid = postmasterPid(Number(new URL(pgc.url).port));
const admin = new pg.Client({ connectionString: pgc.url });
await admin.connect();
for (const setting of ['fsync', 'synchronous_commit', 'full_page_writes']) await admin.query(`ALTER SYSTEM SET ${setting} = on`);
await admin.query('SELECT pg_reload_conf()');
await sleep(300);
{
  const v = await admin.query<{ v: string; fsync: string; fpw: string }>(
    "SELECT current_setting('server_version') AS v, current_setting('fsync') AS fsync, current_setting('full_page_writes') AS fpw",
  );
  console.log(
    `PostgreSQL ${v.rows[0]!.v} (throwaway cluster, loopback, same machine): fsync=${v.rows[0]!.fsync} full_page_writes=${v.rows[0]!.fpw}`,
  );
}
const audioFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pg-scale-')), 'clips.ulaw');
fs.writeFileSync(audioFile, Buffer.concat(loadClips().map((c) => c.mulaw8k)));

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

interface Row {
  build: string;
  n: number;
  wall: number;
  audioBytes: number; // audio spooled in the window, as mu-law bytes (one a sample)
  pgCpu: number;
  serverCpu: number;
  wal: number;
  xacts: number;
  ackP50: number;
  ackP95: number;
  lateP95: number;
  errors: string[];
  nodeLog: string[];
  load: string;
}

async function startNode(
  cli: string,
  dbUrl: string,
  dataDir: string,
  n: number,
): Promise<{ base: string; proc: ChildProcess; accessKeys: string[]; log: string[] }> {
  const storeArgs = ['--data-dir', dataDir, '--database-url', dbUrl];
  // Accounts of PER_ACCOUNT streams each: every session debits its account once a second in a
  // transaction that locks the account row, so one account of 100 calls queues 100 such
  // transactions a second on one row (see docs/benchmarks.md); this bench measures the spool.
  const accounts = Math.ceil(n / PER_ACCOUNT);
  const accessKeys: string[] = [];
  for (let i = 0; i < accounts; i += 8) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(8, accounts - i) }, () =>
        execFileAsync(
          process.execPath,
          [cli, 'accounts', 'create', '--name', 'bench', '--characters', '1000000000', '--json', ...storeArgs],
          { encoding: 'utf8' },
        ),
      ),
    );
    accessKeys.push(...batch.map((r) => (JSON.parse(r.stdout) as { accessKey: string }).accessKey));
  }
  const port = await freeLoopbackPort();
  const proc = spawn(
    process.execPath,
    [
      cli,
      'serve',
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--max-decoders',
      '1',
      '--max-deferred-seconds',
      '86400',
      '--database-pool-size',
      String(POOL),
      ...storeArgs,
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, SCRIBED_LOG_LEVEL: 'warn', SCRIBED_MAX_STREAMS_PER_ACCOUNT: '0' },
    },
  );
  const errs: string[] = [];
  readline.createInterface({ input: proc.stderr! }).on('line', (l) => errs.push(l));
  const out = readline.createInterface({ input: proc.stdout! });
  await new Promise<void>((resolve, reject) => {
    const t = setInterval(() => {
      fetch(`http://127.0.0.1:${port}/readyz`).then(
        (r) => r.status < 500 && (clearInterval(t), resolve()),
        () => undefined,
      );
    }, 200);
    proc.once(
      'exit',
      (code, signal) => (clearInterval(t), reject(new Error(`serve exited (${code ?? signal}): ${errs.slice(-20).join('\n')}`))),
    );
  });
  // Its warnings and errors (pino JSON on stdout), the first few kept for the report.
  out.on('line', (l) => {
    if (errs.length < 200 && /"level":(40|50|60)/.test(l)) errs.push(l.slice(0, 600));
  });
  return { base: `http://127.0.0.1:${port}`, proc, accessKeys, log: errs };
}

function startSenders(base: string, accessKeys: string[], n: number): Array<{ proc: ChildProcess; lines: AsyncIterableIterator<string> }> {
  const out = [];
  for (let left = n; left > 0; left -= PER_SENDER) {
    const proc = spawn(
      process.execPath,
      [SENDER, '--url', base, '--file', audioFile, '--streams', String(Math.min(PER_SENDER, left)), '--frame-ms', String(FRAME_MS)],
      {
        stdio: ['pipe', 'pipe', 'inherit'],
        env: { ...process.env, SCRIBED_ACCESS_KEY: accessKeys.join(',') },
      },
    );
    out.push({ proc, lines: readline.createInterface({ input: proc.stdout! })[Symbol.asyncIterator]() });
  }
  return out;
}

async function spooledSamples(db: pg.Client): Promise<number> {
  // The last chunk's start per session (index-only, cheap): the spool's end within one window.
  const r = await db.query<{ s: string | null }>(
    'SELECT SUM((SELECT MAX(start_sample) FROM spool_chunks c WHERE c.session_id = s.id)) AS s FROM rt_sessions s',
  );
  return Number(r.rows[0]!.s ?? 0);
}

async function measure(build: string, cli: string, n: number): Promise<Row> {
  const db = await freshDatabase(pgc.url);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-scale-node-'));
  const node = await startNode(cli, db.url, dataDir, n);
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  const dbName = new URL(db.url).pathname.slice(1);
  const senders = startSenders(node.base, node.accessKeys, n);
  try {
    for (const s of senders) {
      const first = await s.lines.next();
      if (first.value !== 'ready') throw new Error(`sender: ${first.value}`);
    }
    await sleep(WARMUP_S * 1000);
    for (const s of senders) s.proc.stdin!.write('mark\n');
    const snap = async () => ({
      t: performance.now(),
      pg: clusterCpu(pmPid),
      server: cpuOf(node.proc.pid!),
      lsn: (await client.query<{ l: string }>('SELECT pg_current_wal_lsn()::text AS l')).rows[0]!.l,
      xacts: Number(
        (await client.query<{ x: string }>('SELECT xact_commit::text AS x FROM pg_stat_database WHERE datname = $1', [dbName])).rows[0]!.x,
      ),
      samples: await spooledSamples(client),
    });
    const a = await snap();
    await sleep(SECONDS * 1000);
    const b = await snap();
    const wal = Number((await client.query<{ d: string }>('SELECT pg_wal_lsn_diff($1, $2)::text AS d', [b.lsn, a.lsn])).rows[0]!.d);
    if (WALDUMP) await walBreakdown(client, a.lsn, b.lsn);
    const results = await Promise.all(
      senders.map(async (s) => {
        s.proc.stdin!.write('stop\n');
        const line = await s.lines.next();
        return JSON.parse(String(line.value)) as { ackMs: number[]; lateMs: number[]; errors: string[] };
      }),
    );
    const ackMs = results.flatMap((r) => r.ackMs);
    const lateMs = results.flatMap((r) => r.lateMs);
    return {
      build,
      n,
      wall: (b.t - a.t) / 1000,
      audioBytes: b.samples - a.samples,
      pgCpu: b.pg - a.pg,
      serverCpu: b.server - a.server,
      wal,
      xacts: b.xacts - a.xacts,
      ackP50: pct(ackMs, 0.5),
      ackP95: pct(ackMs, 0.95),
      lateP95: pct(lateMs, 0.95),
      errors: results.flatMap((r) => r.errors),
      nodeLog: node.log.slice(0, 5),
      load: load(),
    };
  } finally {
    for (const s of senders) s.proc.kill('SIGKILL');
    await client.end().catch(() => undefined);
    // kill -9: a deferred session's orderly stop would wait for its backlog to be recognized
    node.proc.kill('SIGKILL');
    await new Promise((r) => (node.proc.exitCode !== null || node.proc.signalCode !== null ? r(null) : node.proc.once('exit', r)));
    await db.drop().catch(() => undefined);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** pg_waldump --stats=record over [from, to) of the cluster's pg_wal (as the user running it:
 * root reads the postgres user's files). */
async function walBreakdown(client: pg.Client, from: string, to: string): Promise<void> {
  const dataDir = (await client.query<{ data_directory: string }>('SHOW data_directory')).rows[0]!.data_directory;
  const bin = findPostgresBinDir();
  try {
    const { stdout } = await execFileAsync(
      path.join(bin!, 'pg_waldump'),
      ['--stats=record', '-p', path.join(dataDir, 'pg_wal'), '-s', from, '-e', to],
      {
        maxBuffer: 16 << 20,
      },
    );
    console.log(
      stdout
        .split('\n')
        .filter((l) => !/\b0 \(\s*0\.00\)\s+0 \(\s*0\.00\)\s+0 \(\s*0\.00\)/.test(l))
        .join('\n'),
    );
  } catch (err) {
    console.log(`pg_waldump failed: ${(err as Error).message.slice(0, 500)}`);
  }
}

/** Per real-time call: per second of audio spooled (when the node falls behind real time on a
 * loaded machine, per stream would flatter it). */
const perRt = (r: Row, x: number) => x / (r.audioBytes / 8000);

function print(r: Row): void {
  const perCall = (x: number) => x / r.wall / r.n;
  console.log(
    `  ${r.build.padEnd(6)} N=${String(r.n).padStart(3)}  postgres ${(perRt(r, r.pgCpu) * 100).toFixed(3).padStart(6)}% core/rt call (${(perCall(r.pgCpu) * 100).toFixed(3)}%/stream)  ` +
      `WAL ${(perCall(r.wal) / 1024).toFixed(1).padStart(6)} KiB/s/call ${(r.wal / r.audioBytes).toFixed(2).padStart(5)} B/audio B  ` +
      `xact ${(r.xacts / r.wall).toFixed(0).padStart(5)}/s  ack p50 ${r.ackP50.toFixed(0).padStart(4)} p95 ${r.ackP95.toFixed(0).padStart(5)} ms  ` +
      `node ${(perRt(r, r.serverCpu) * 100).toFixed(2).padStart(5)}% core/rt call  send late p95 ${r.lateP95.toFixed(0)} ms  audio ${(r.audioBytes / 8000 / r.wall / r.n).toFixed(2)}x rt  load ${r.load}` +
      (r.errors.length > 0 ? `  errors: ${r.errors.slice(0, 3).join('; ')}` : ''),
  );
  if (process.env.BENCH_DEBUG === '1') for (const l of r.nodeLog) console.log(`    node: ${l}`);
}

const builds: Array<{ label: string; cli: string }> = [{ label: 'after', cli: CLI }];
if (BEFORE_CLI) builds.push({ label: 'before', cli: BEFORE_CLI });
console.log(
  `builds: ${builds.map((b) => `${b.label}=${b.cli}`).join(', ')}; N = ${STREAMS.join(', ')}; ${FRAME_MS} ms frames; ${SECONDS} s measured after ${WARMUP_S} s\n`,
);
const rows: Row[] = [];
try {
  for (const [i, n] of STREAMS.entries()) {
    const order = i % 2 === 0 ? builds : [...builds].reverse();
    for (const b of order) {
      const r = await measure(b.label, b.cli, n);
      rows.push(r);
      print(r);
    }
  }
} finally {
  await cleanup();
  await admin.end().catch(() => undefined);
  await pgc.stop();
}

console.log(
  '\n  build   N   PG %core/rt call  WAL B/audio B  WAL KiB/s/rt call  xact/s  ack p50 ms  ack p95 ms  send late p95  audio x rt  load',
);
for (const r of rows) {
  console.log(
    `  ${r.build.padEnd(6)} ${String(r.n).padStart(3)}  ${(perRt(r, r.pgCpu) * 100).toFixed(3).padStart(15)}  ${(r.wal / r.audioBytes).toFixed(2).padStart(13)}  ${(perRt(r, r.wal) / 1024).toFixed(1).padStart(17)}  ${(r.xacts / r.wall).toFixed(0).padStart(6)}  ${r.ackP50.toFixed(0).padStart(10)}  ${r.ackP95.toFixed(0).padStart(10)}  ${r.lateP95.toFixed(0).padStart(13)}  ${(r.audioBytes / 8000 / r.wall / r.n).toFixed(2).padStart(10)}  ${r.load}`,
  );
}
if (BEFORE_CLI) {
  console.log('\n  ratios after/before:   N   PG CPU/call  WAL/audio byte  xact/s  ack p95');
  for (const n of STREAMS) {
    const a = rows.find((r) => r.build === 'after' && r.n === n);
    const b = rows.find((r) => r.build === 'before' && r.n === n);
    if (!a || !b) continue;
    const cpu = (r: Row) => perRt(r, r.pgCpu);
    console.log(
      `                       ${String(n).padStart(3)}  ${(cpu(a) / cpu(b)).toFixed(3).padStart(11)}  ${(a.wal / a.audioBytes / (b.wal / b.audioBytes)).toFixed(2).padStart(14)}  ${(a.xacts / a.wall / (b.xacts / b.wall)).toFixed(3).padStart(6)}  ${(a.ackP95 / b.ackP95).toFixed(2).padStart(7)}`,
    );
  }
}
for (const build of builds) {
  const mine = rows.filter((r) => r.build === build.label);
  const top = mine.reduce<Row | null>((m, r) => (m === null || r.n > m.n ? r : m), null);
  if (!top) continue;
  const cores = perRt(top, top.pgCpu) * 1000;
  const walMBs = (perRt(top, top.wal) * 1000) / 1e6;
  console.log(
    `\n  ${build.label}: 1,000 calls (from N=${top.n}): PostgreSQL ${cores.toFixed(1)} cores, WAL ${walMBs.toFixed(1)} MB/s (the audio itself: ${((1000 * 8000) / 1e6).toFixed(0)} MB/s)`,
  );
}
console.log(
  `load at end ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
