// Density (issue 13): how many concurrent real-time calls a node carries, and what the service
// spends per audio second against the bare recognizer on the same audio, in the same run.
//
// Workload per K (BENCH_K, default 1,4,6,8): one `scribed serve --max-decoders K` (dist/cli.js,
// SQLite in a fresh data dir; BENCH_SERVE_ARGS adds flags), K concurrent sessions of 8 kHz
// mu-law from this process, 20 ms frames paced at real time, the dev clips back to back (each
// session starts at another clip), a `commit` after each clip (~3-7 s), BENCH_SECONDS (default
// 30) of audio per session, starts staggered over one second. Before the measured run, one
// short warm-up session per stream loads the decoders (a cold decoder costs ~0.6 CPU s); RSS is
// read before the warm-up, so "RSS per stream" includes the decoder each stream holds.
// Measured:
//   commit-to-final   the commit sent -> the `final` of that segment (trigger commit);
//   ack lag           a frame sent -> the first ack covering it;
//   CPU / audio s     utime+stime of the serve process (worker threads included) from the
//                     first create to the last `closed`, over the audio seconds sent; split
//                     into the main thread and the other threads (recognition workers);
//   RSS per stream    (peak VmRSS during the run - VmRSS of the fresh server) / K;
//   refusals          sessions refused (ENGINE_BUSY or any other error).
// Baselines, same clips, same run:
//   CLI    Debian's pocketsphinx_continuous -infile on the clips' mu-law decoded and upsampled
//          to 16 kHz by sox (as a gateway would), with the service's fast search flags and
//          telephony front end (-remove_noise no, models/telephony/feat.params when built),
//          CPU from /usr/bin/time minus the CLI's start-up (measured on 0.2 s of silence);
//   addon  the service's own decoder (src/engine/backends/pocketsphinx.ts) driven in this
//          process on the same upsampled audio in 20 ms calls, no worker, no service: what
//          the recognizer itself costs as the service calls it.
//   K live CLIs  the CLI as above, K processes at once, each fed the clips back to back
//          through a pipe at real time (20 ms writes, starts staggered as the sessions' are):
//          the bare engine doing the service's job without the service, K real-time streams
//          on the same cores (it reads 2048 samples at a time, so it wakes every 128 ms, as
//          the service's decoders wake once per 200 ms batch).
// Ratios: service CPU per audio second over each baseline's.
//
// A/B: BENCH_BEFORE_CLI=/path/to/another/checkout/dist/cli.js measures that build as well, at
// every K in the same run (order alternating per K), as a "before" row. BENCH_BEFORE_ENV=
// "NAME=value ..." gives the "before" server that environment (with this build unless
// BENCH_BEFORE_CLI names another): an A/B of a setting.
//
// A slow disk: BENCH_SLOW_WAL_MS=300 runs each server under strace's fault injection, so every
// fsync/fdatasync of its store's WAL (data dir/scribed.db-wal) returns that much later, as on a
// disk that stalls (seen on this VM: seconds, rarely). The latencies then show whether a store
// sync holds the event loop; CPU figures in this mode count the server, not strace.
//
// Run: npx tsc -p tsconfig.json && npx vite-node bench/density.ts
//      BENCH_K=8 BENCH_SECONDS=60 for one point; BENCH_PROFILE=1 passes --cpu-prof to serve
//      (profiles land in the data dir, kept and printed). About 1 minute per K at the defaults.
import { execFile, execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import readline from 'node:readline';
import { promisify } from 'node:util';
import WebSocket from 'ws';
import { PacedFrames } from './paced-frames.js';
import { createPocketsphinx, DEFAULT_MODEL_DIR, FAST_ARGS } from '../src/engine/backends/pocketsphinx.js';
import { CLI } from '../test/helpers/cluster.js';
import { devSetDir, loadClips, wavData } from '../test/helpers/audio.js';
import { freeLoopbackPort } from '../test/helpers/postgres-cluster.js';
import { soxUpsample } from './sox-upsample.js';

const execFileAsync = promisify(execFile);
const KS = (process.env.BENCH_K ?? '1,4,6,8').split(',').map(Number);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 30);
const EXTRA_SERVE_ARGS = (process.env.BENCH_SERVE_ARGS ?? '').split(' ').filter(Boolean);
const PROFILE = process.env.BENCH_PROFILE === '1';
const SLOW_WAL_MS = Number(process.env.BENCH_SLOW_WAL_MS ?? 0);
const BEFORE_ENV = Object.fromEntries(
  (process.env.BENCH_BEFORE_ENV ?? '')
    .split(' ')
    .filter(Boolean)
    .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
);
const BEFORE_CLI = process.env.BENCH_BEFORE_CLI ?? (Object.keys(BEFORE_ENV).length > 0 ? CLI : undefined);
const RATE = 8000;
const FRAME = RATE / 50;
const CLK_TCK = 100;
const ROOT = path.resolve(import.meta.dirname, '..');
const TELEPHONY_FEAT = path.join(ROOT, 'models', 'telephony', 'feat.params');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
function pct(xs: number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]!;
}
const ms = (x: number) => (Number.isFinite(x) ? `${x.toFixed(0)} ms` : '-');

function cpuOf(pid: number): number {
  const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / CLK_TCK;
}
/** CPU seconds of the main thread (tid = pid: the event loop, HTTP, sockets, sessions) and of
 * every other thread (the recognition workers, V8's and libuv's helpers). */
function cpuSplit(pid: number): { main: number; other: number; threads: Map<number, number> } {
  let main = 0;
  let other = 0;
  const threads = new Map<number, number>();
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    const s = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    const t = (Number(f[11]) + Number(f[12])) / CLK_TCK;
    threads.set(Number(tid), t);
    if (Number(tid) === pid) main += t;
    else other += t;
  }
  return { main, other, threads };
}
function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

const devDir = devSetDir();
const clips = loadClips(devDir);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-density-'));
console.log(
  `density: node ${process.version}, ${os.cpus().length} x ${os.cpus()[0]?.model}, load ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}; ` + `clips ${devDir} (${clips.length}, ${clips.reduce((a, c) => a + c.durationSec, 0).toFixed(1)} s)`,
);

// ------------------------------------------------------------------ baselines

/** Each clip's mu-law decoded and upsampled to 16 kHz by sox: the CLI's and the addon's input. */
const upsampled = clips.map((clip) => {
  const out = path.join(tmp, `${clip.id}.16k.wav`);
  soxUpsample(clip.ulawFile, out);
  return out;
});
const telephonyFlags = ['-remove_noise', 'no', ...(fs.existsSync(TELEPHONY_FEAT) ? ['-featparams', TELEPHONY_FEAT] : [])];
if (!fs.existsSync(TELEPHONY_FEAT)) console.log(`(no ${TELEPHONY_FEAT}: the service and both baselines use the stock feat.params)`);
const M = DEFAULT_MODEL_DIR;
const cliFlags = [
  '-hmm',
  path.join(M, 'en-us'),
  '-lm',
  path.join(M, 'en-us.lm.bin'),
  '-dict',
  path.join(M, 'cmudict-en-us.dict'),
  '-logfn',
  '/dev/null',
  ...Object.entries(FAST_ARGS).flat(),
  ...telephonyFlags,
];

function cliCpu(file: string): number {
  const r = spawnSync('/usr/bin/time', ['-f', '%U %S', 'pocketsphinx_continuous', '-infile', file, ...cliFlags], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`pocketsphinx_continuous failed: ${r.stderr}`);
  const [u, s] = r.stderr.trim().split('\n').at(-1)!.split(' ').map(Number);
  return u! + s!;
}

let cliStartup = 0;
function cliBaseline(): number {
  const silence = path.join(tmp, 'silence.wav');
  execFileSync('sox', ['-n', '-r', '16000', '-b', '16', '-c', '1', silence, 'trim', '0', '0.2']);
  const startup = [0, 1, 2].map(() => cliCpu(silence)).sort((a, b) => a - b)[1]!;
  cliStartup = startup;
  let cpu = 0;
  let audio = 0;
  for (let round = 0; round < 2; round++) {
    clips.forEach((clip, i) => {
      cpu += Math.max(0, cliCpu(upsampled[i]!) - startup);
      audio += clip.durationSec;
    });
  }
  return cpu / audio;
}

/** K CLIs at once, each fed every clip back to back (the same 24.7 s of audio) from a pipe at
 * real time in 20 ms writes, starts staggered over one second: what K bare decoders cost per
 * audio second on K live streams sharing the machine as the service's K do. */
async function liveCliCost(k: number, startup: number): Promise<number> {
  const all = path.join(tmp, 'all.16k.wav');
  if (!fs.existsSync(all)) execFileSync('sox', [...upsampled, all]);
  const pcm = wavData(fs.readFileSync(all));
  const chunk = 640; // 20 ms of 16 kHz s16
  const audioSec = pcm.length / 2 / 16_000;
  const one = async (delayMs: number): Promise<number> => {
    await sleep(delayMs);
    // Node's stdin 'pipe' is a socket, which fopen("/dev/stdin") refuses: cat hands the
    // audio on through a real pipe (its CPU is not counted: time wraps the CLI alone).
    const cmd = 'cat | /usr/bin/time -f "%U %S" pocketsphinx_continuous -infile /dev/stdin "$@"';
    const proc = spawn('sh', ['-c', cmd, 'sh', ...cliFlags], { stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => proc.on('exit', resolve));
    const t0 = performance.now();
    for (let at = 0; at < pcm.length; at += chunk) {
      const due = t0 + (at / chunk) * 20 - performance.now();
      if (due > 0) await sleep(due);
      proc.stdin!.write(pcm.subarray(at, at + chunk));
    }
    proc.stdin!.end();
    if ((await exited) !== 0) throw new Error(`pocketsphinx_continuous (live) failed: ${stderr}`);
    const [u, s] = stderr.trim().split('\n').at(-1)!.split(' ').map(Number);
    return Math.max(0, u! + s! - startup);
  };
  const runs = await Promise.all(Array.from({ length: k }, (_, i) => one((i * 1000) / k)));
  return runs.reduce((a, b) => a + b, 0) / (k * audioSec);
}

function addonBaseline(): number {
  const assetsDir = path.dirname(TELEPHONY_FEAT);
  const be = createPocketsphinx({ engine: 'pocketsphinx', profile: 'telephony', assetsDir });
  let cpu = 0;
  let audio = 0;
  for (let round = 0; round < 2; round++) {
    upsampled.forEach((file) => {
      const pcm = wavData(fs.readFileSync(file));
      const samples = new Int16Array(pcm.buffer.slice(pcm.byteOffset, pcm.byteOffset + pcm.byteLength));
      be.resetStream();
      const t0 = process.cpuUsage();
      for (let i = 0; i < samples.length; i += 320) be.process(samples.subarray(i, i + 320));
      be.endUtterance();
      const u = process.cpuUsage(t0);
      cpu += (u.user + u.system) / 1e6;
      audio += samples.length / 16_000;
    });
  }
  be.destroy();
  return cpu / audio;
}

// ------------------------------------------------------------------ the service

interface Server {
  base: string;
  proc: ChildProcess;
  /** The serve process (under BENCH_SLOW_WAL_MS, strace's child). */
  pid: number;
  accessKey: string;
  dataDir: string;
  stop(): Promise<void>;
}

/** A server to measure: a build's cli.js and what it adds to the environment. */
interface Build {
  label: 'this' | 'before';
  cli: string;
  env: Record<string, string>;
}

async function startServer(k: number, build: Build): Promise<Server> {
  const cli = build.cli;
  const dataDir = fs.mkdtempSync(path.join(tmp, `serve-k${k}-`));
  const { stdout } = await execFileAsync(
    process.execPath,
    [cli, 'accounts', 'create', '--name', 'bench', '--characters', '100000000', '--json', '--data-dir', dataDir],
    { encoding: 'utf8' },
  );
  const accessKey = (JSON.parse(stdout) as { accessKey: string }).accessKey;
  const port = await freeLoopbackPort();
  const nodeArgs = PROFILE ? ['--cpu-prof', '--cpu-prof-dir', path.join(dataDir, 'profiles')] : [];
  const serve = [
    process.execPath,
    ...nodeArgs,
    cli,
    'serve',
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '--data-dir',
    dataDir,
    '--max-decoders',
    String(k),
    ...EXTRA_SERVE_ARGS,
  ];
  const slowWal = [
    'strace',
    '-f',
    '--seccomp-bpf',
    '-qq',
    '-o',
    '/dev/null',
    '-P',
    path.join(dataDir, 'scribed.db-wal'),
    '-e',
    'trace=fsync,fdatasync',
    '-e',
    `inject=fsync,fdatasync:delay_exit=${SLOW_WAL_MS * 1000}`,
  ];
  const argv = SLOW_WAL_MS > 0 ? [...slowWal, ...serve] : serve;
  const proc = spawn(argv[0]!, argv.slice(1), {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, SCRIBED_LOG_LEVEL: 'info', SCRIBED_MAX_STREAMS_PER_ACCOUNT: '0', ...build.env },
  });
  const errs: string[] = [];
  readline.createInterface({ input: proc.stderr! }).on('line', (l) => errs.push(l));
  await new Promise<void>((resolve, reject) => {
    readline.createInterface({ input: proc.stdout! }).on('line', (line) => {
      if (line.includes('"scribed listening"')) resolve();
    });
    proc.once('exit', (code, signal) => reject(new Error(`serve exited (${code ?? signal}): ${errs.slice(-20).join('\n')}`)));
  });
  const pid =
    SLOW_WAL_MS > 0 ? Number(fs.readFileSync(`/proc/${proc.pid}/task/${proc.pid}/children`, 'utf8').trim().split(' ')[0]) : proc.pid!;
  return {
    base: `http://127.0.0.1:${port}`,
    proc,
    pid,
    accessKey,
    dataDir,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        const exited = new Promise((r) => proc.once('exit', r));
        process.kill(pid, 'SIGTERM'); // serve itself: strace exits with it
        await exited;
      }
    },
  };
}

interface SessionRun {
  ackMs: number[];
  commitToFinalMs: number[];
  refused: string | null;
  audioSec: number;
}

/** The audio of session `i`: the clips back to back from clip i, looped, cut at `seconds`;
 * and the sample offsets where a clip ends (a commit goes after each). */
function sessionAudio(i: number, seconds: number): { audio: Buffer; commitsAt: number[] } {
  const parts: Buffer[] = [];
  const commitsAt: number[] = [];
  let len = 0;
  for (let n = 0; len < seconds * RATE; n++) {
    const c = clips[(i + n) % clips.length]!.mulaw8k;
    parts.push(c);
    len += c.length;
    const at = Math.min(len, seconds * RATE);
    // One commit per frame at most: a clip ending in the last frame, cut there, is one segment
    // (the session's frame loop sends one commit per frame).
    if (commitsAt.length === 0 || Math.ceil(at / FRAME) > Math.ceil(commitsAt.at(-1)! / FRAME)) commitsAt.push(at);
  }
  return { audio: Buffer.concat(parts).subarray(0, seconds * RATE), commitsAt };
}

async function realtimeSession(server: Server, i: number, seconds: number, startDelayMs: number): Promise<SessionRun> {
  await sleep(startDelayMs);
  const { audio, commitsAt } = sessionAudio(i, seconds);
  const res = await fetch(`${server.base}/sound_clone/api/v1/stt/realtime/sessions`, {
    method: 'POST',
    headers: { accessKey: server.accessKey, 'Idempotency-Key': `bench-${randomUUID()}`, 'content-type': 'application/json' },
    body: JSON.stringify({ options: { inputEncoding: 'mulaw_8000' } }),
  });
  const created = (await res.json()) as any;
  if (res.status !== 200) return { ackMs: [], commitToFinalMs: [], refused: `create HTTP ${res.status} ${created.code}`, audioSec: 0 };
  const ws = new WebSocket(`${server.base.replace(/^http/, 'ws')}${created.data.streamUrl}`, { headers: { accessKey: server.accessKey } });
  const paced = new PacedFrames(audio);
  const ackMs = paced.ackMs;
  const commitSentAt: number[] = [];
  const commitToFinalMs: number[] = [];
  return new Promise((resolve) => {
    let epoch = 0;
    let commitFinals = 0;
    let closeSent = false;
    let done = false;
    const finish = (refused: string | null) => {
      if (done) return;
      done = true;
      ws.close(1000);
      resolve({ ackMs, commitToFinalMs, refused, audioSec: refused === null ? audio.length / RATE : 0 });
    };
    ws.on('unexpected-response', (_req, r) => finish(`handshake HTTP ${r.statusCode}`));
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      const ev = JSON.parse(data.toString()) as Record<string, any>;
      if (ev.type === 'ready') {
        epoch = ev.epoch;
        let nextCommit = 0;
        paced.start(ws, epoch, (k) => {
          if (nextCommit < commitsAt.length && (k + 1) * FRAME >= commitsAt[nextCommit]!) {
            commitSentAt.push(performance.now());
            ws.send(JSON.stringify({ type: 'commit' }));
            nextCommit += 1;
          }
        });
      } else if (ev.type === 'ack' && ev.epoch === epoch) {
        paced.acknowledged(Number(ev.capturedSamples));
      } else if (ev.type === 'final' && ev.trigger === 'commit') {
        const sent = commitSentAt[commitFinals++];
        if (sent !== undefined) commitToFinalMs.push(performance.now() - sent);
      } else if (ev.type === 'error') {
        finish(ev.code);
        return;
      } else if (ev.type === 'closed') {
        finish(null);
        return;
      }
      if (!closeSent && paced.allAcknowledged && commitFinals >= commitsAt.length) {
        closeSent = true;
        ws.send(JSON.stringify({ type: 'close' }));
      }
    });
    ws.on('error', (err) => finish(`socket error ${err.message}`));
    ws.on('close', (code) => finish(`socket closed ${code}`));
  });
}

interface Point {
  k: number;
  build: string;
  c2f: number[];
  ack: number[];
  cpuPerAudioSec: number;
  mainPerAudioSec: number;
  otherPerAudioSec: number;
  rssPerStream: number;
  refused: string[];
}

async function measure(k: number, build: Build): Promise<Point> {
  const server = await startServer(k, build);
  try {
    await sleep(300);
    const pid = server.pid;
    const rss0 = rssMiB(pid);
    // Warm-up, not measured: loads one telephony decoder per stream.
    await Promise.all(Array.from({ length: k }, (_, i) => realtimeSession(server, i, 1, 0)));
    await sleep(500);
    let peak = rssMiB(pid);
    const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(pid))), 250);
    const cpu0 = cpuOf(pid);
    const split0 = cpuSplit(pid);
    const runs = await Promise.all(Array.from({ length: k }, (_, i) => realtimeSession(server, i, SECONDS, (i * 1000) / k)));
    const cpu = cpuOf(pid) - cpu0;
    const split1 = cpuSplit(pid);
    if (process.env.BENCH_THREADS === '1') {
      const rows = [...split1.threads].map(([tid, t]) => [tid, t - (split0.threads.get(tid) ?? 0)] as const).filter(([, t]) => t > 0);
      console.log(
        `  threads (CPU s over the run): ${rows
          .sort((a, b) => b[1] - a[1])
          .map(([tid, t]) => `${tid === pid ? 'main' : tid} ${t.toFixed(2)}`)
          .join(', ')}`,
      );
    }
    clearInterval(sampler);
    const audioSec = runs.reduce((s, r) => s + r.audioSec, 0);
    return {
      k,
      build: build.label,
      c2f: runs.flatMap((r) => r.commitToFinalMs),
      ack: runs.flatMap((r) => r.ackMs),
      cpuPerAudioSec: cpu / audioSec,
      mainPerAudioSec: (split1.main - split0.main) / audioSec,
      otherPerAudioSec: (split1.other - split0.other) / audioSec,
      rssPerStream: (peak - rss0) / k,
      refused: runs.flatMap((r) => (r.refused === null ? [] : [r.refused])),
    };
  } finally {
    await server.stop();
    if (PROFILE) {
      const dir = path.join(server.dataDir, 'profiles');
      const keep = path.join(ROOT, 'bench', 'profiles', `k${k}`);
      fs.mkdirSync(keep, { recursive: true });
      for (const f of fs.existsSync(dir) ? fs.readdirSync(dir) : []) fs.copyFileSync(path.join(dir, f), path.join(keep, f));
      console.log(`  cpu profiles: ${keep}`);
    }
  }
}

// ------------------------------------------------------------------ run

const cliCost = cliBaseline();
const addonCost = addonBaseline();
console.log(
  `baseline CPU per audio second: CLI ${cliCost.toFixed(3)}, addon in-process ${addonCost.toFixed(3)} (real-time streams on ${os.cpus().length} cores at the CLI's cost: ${(os.cpus().length / cliCost).toFixed(1)})`,
);
console.log(
  `service: ${SECONDS} s of 8 kHz mu-law per session, 20 ms frames at real time, a commit after each clip; serve ${EXTRA_SERVE_ARGS.join(' ') || '(defaults)'}\n`,
);
if (BEFORE_CLI) console.log(`before: ${BEFORE_CLI}${Object.keys(BEFORE_ENV).length > 0 ? ` with ${process.env.BENCH_BEFORE_ENV}` : ''}\n`);
const header = [
  'K',
  'build',
  'commit-to-final p50/p95/max',
  'ack lag p50/p95/max',
  'CPU/audio s',
  'main / workers',
  'vs CLI',
  'vs K live CLIs',
  'vs addon',
  'RSS/stream',
  'refused',
];
console.log(`| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|`);
for (const [i, k] of KS.entries()) {
  const current: Build = { label: 'this', cli: CLI, env: {} };
  const before: Build | null = BEFORE_CLI ? { label: 'before', cli: BEFORE_CLI, env: BEFORE_ENV } : null;
  const builds = before ? (i % 2 === 0 ? [before, current] : [current, before]) : [current];
  const points: Point[] = [];
  for (const build of builds) points.push(await measure(k, build));
  const kClis = await liveCliCost(k, cliStartup);
  points.sort((a, b) => (a.build === 'before' ? -1 : b.build === 'before' ? 1 : 0));
  for (const p of points) {
    console.log(
      `| ${p.k} | ${p.build} | ${ms(pct(p.c2f, 0.5))} / ${ms(pct(p.c2f, 0.95))} / ${ms(pct(p.c2f, 1))} | ${ms(pct(p.ack, 0.5))} / ${ms(pct(p.ack, 0.95))} / ${ms(pct(p.ack, 1))} | ${p.cpuPerAudioSec.toFixed(3)} | ` +
        `${p.mainPerAudioSec.toFixed(3)} / ${p.otherPerAudioSec.toFixed(3)} | ${(p.cpuPerAudioSec / cliCost).toFixed(2)}x | ${(p.cpuPerAudioSec / kClis).toFixed(2)}x (${kClis.toFixed(3)}) | ${(p.cpuPerAudioSec / addonCost).toFixed(2)}x | ` +
        `${p.rssPerStream.toFixed(0)} MiB | ${p.refused.length === 0 ? 0 : p.refused.join(', ')} |`,
    );
  }
}
console.log(
  `\nload after: ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
fs.rmSync(tmp, { recursive: true, force: true });
