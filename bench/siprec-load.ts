// The SIPREC on-ramp under load: CALLS concurrent recording sessions (two RTP streams each) into
// one `scribed serve` child process, real speech paced at real time by bench/siprec-load-sender.mjs
// (its own process). Measured over the RTP window (the first INVITE to the last packet):
//
// - Loss caused by scribed: packets the sender sent against packets the on-ramp's sockets
//   received (scribed_siprec_rtp_packets_total), those its jitter buffer declared lost, and the
//   kernel's drop counter of each RTP socket (/proc/net/udp, read while the sockets are open:
//   datagrams the socket buffer had no room for because the process read too slowly).
// - CPU: every thread of the server from /proc/PID/task/*/stat. The recognizer runs on worker
//   threads (src/engine/decoder-thread.ts), the on-ramp on the main thread with the rest of the
//   node (sessions, spool, store, HTTP). The main thread's share that is the on-ramp comes from a
//   V8 CPU profile of the same run (--cpu-prof): each sample inside the window is walked from
//   its leaf up, and the first frame of the on-ramp (server/siprec, rtp, core/sip, core/audio/
//   g722, node:dgram) or of the rest of scribed (session, engine, store, other server code)
//   decides it; the rest (GC, timers, native) is left out of both, so the share is that of the
//   attributed samples. On-ramp CPU = main-thread CPU x that share. The recognizer's CPU = the
//   worker threads' CPU (decoders; also libuv's and V8's helper threads, a small part).
//   Both are divided by the audio seconds they handled in the window: received for the
//   on-ramp, decoded for the recognizer (received less the growth of the recognition backlog:
//   with more streams than decoders, legs are deferred and decoded as decoders free), so the
//   ratio is per call whatever the backlog.
//
// Run: npx tsc -p tsconfig.json && npx vite-node bench/siprec-load.ts
//   CALLS=50 SECONDS=60 MAX_DECODERS=2
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';

const CALLS = Number(process.env.CALLS ?? 50);
const SECONDS = Number(process.env.SECONDS ?? 60);
const MAX_DECODERS = Number(process.env.MAX_DECODERS ?? 2);
const ROOT = path.resolve(import.meta.dirname, '..');
const CLI = path.join(ROOT, 'dist/cli.js');
const TICKS = 100; // USER_HZ

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** CPU seconds of each thread of `pid`, by thread id. */
function threadCpu(pid: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(Number(tid), (Number(f[11]) + Number(f[12])) / TICKS);
    } catch {
      // the thread ended
    }
  }
  return out;
}

async function metrics(base: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const m = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const i = line.lastIndexOf(' ');
    const name = line.slice(0, i);
    m.set(name, (m.get(name) ?? 0) + Number(line.slice(i + 1)));
  }
  return m;
}
const metric = (m: Map<string, number>, name: string) => {
  let sum = 0;
  for (const [k, v] of m) if (k === name || k.startsWith(`${name}{`)) sum += v;
  return sum;
};

/** Kernel drops of the UDP sockets bound to ports in [min, max] (field 13 of /proc/net/udp). */
function udpDrops(min: number, max: number): { sockets: number; drops: number; queued: number } {
  let sockets = 0;
  let drops = 0;
  let queued = 0;
  for (const line of fs.readFileSync('/proc/net/udp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 13) continue;
    const port = parseInt(f[1]!.split(':')[1]!, 16);
    if (port < min || port > max) continue;
    sockets++;
    queued += parseInt(f[4]!.split(':')[1]!, 16);
    drops += Number(f[12]);
  }
  return { sockets, drops, queued };
}

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-siprec-load-'));
const profDir = path.join(dataDir, 'prof');
const created = JSON.parse(
  execFileSync(
    process.execPath,
    [CLI, 'accounts', 'create', '--name', 'siprec-load', '--characters', '100000000', '--json', '--data-dir', dataDir],
    {
      encoding: 'utf8',
    },
  ).trim(),
);
const accountId: string = created.id ?? created.accountId ?? created.account?.id;
const httpPort = await freePort();
const sipPort = await freePort();
const rtpMin = 41000;
const rtpMax = rtpMin + 4 * CALLS + 10;
const server = spawn(
  process.execPath,
  [
    '--cpu-prof',
    '--cpu-prof-dir',
    profDir,
    CLI,
    'serve',
    '--data-dir',
    dataDir,
    '--port',
    String(httpPort),
    '--max-decoders',
    String(MAX_DECODERS),
    '--max-deferred-seconds',
    String(4 * CALLS * SECONDS),
    '--drain-grace-ms',
    '0',
    '--siprec-port',
    String(sipPort),
    '--siprec-account',
    accountId,
    '--siprec-rtp-ports',
    `${rtpMin}-${rtpMax}`,
  ],
  { env: { ...process.env, SCRIBED_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'ignore', 'inherit'] },
);
const base = `http://127.0.0.1:${httpPort}`;
for (let i = 0; ; i++) {
  try {
    if ((await fetch(`${base}/metrics`)).ok) break;
  } catch {
    // not yet
  }
  if (i > 600) throw new Error('the server did not start');
  await new Promise((r) => setTimeout(r, 200));
}
const pid = server.pid!;

const cpu0 = threadCpu(pid);
const m0 = await metrics(base);
const t0 = process.hrtime.bigint();
const load0 = fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const sender = spawn(
  process.execPath,
  [path.join(ROOT, 'bench/siprec-load-sender.mjs'), String(sipPort), String(CALLS), String(SECONDS), path.join(ROOT, 'samples')],
  {
    stdio: ['pipe', 'pipe', 'inherit'],
  },
);
const lines = readline.createInterface({ input: sender.stdout! });
const next = (prefix: string) =>
  new Promise<any>((resolve, reject) => {
    sender.once('exit', (code) => reject(new Error(`sender exited ${code}`)));
    lines.on('line', (l) => {
      if (l.startsWith(`${prefix} `)) resolve(JSON.parse(l.slice(prefix.length + 1)));
    });
  });
const sent = await next('rtp-done');
// Let the last packets land and the jitter buffers release them.
await new Promise((r) => setTimeout(r, 500));
const t1 = process.hrtime.bigint();
const cpu1 = threadCpu(pid);
const m1 = await metrics(base);
const drops = udpDrops(rtpMin, rtpMax);
const load1 = fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
sender.stdin!.write('bye\n');
const bye = await next('done');

const main = (cpu1.get(pid) ?? 0) - (cpu0.get(pid) ?? 0);
let workers = 0;
const threads: number[] = [];
for (const [tid, s] of cpu1)
  if (tid !== pid) {
    workers += s - (cpu0.get(tid) ?? 0);
    threads.push(s - (cpu0.get(tid) ?? 0));
  }
threads.sort((a, b) => b - a);
// The decoders' threads are the busiest; the others (libuv's pool writing the spools, V8's
// helpers) are counted with the recognizer above, and left out in the conservative figure.
const decoderThreads = threads.filter((t) => t >= 0.25 * threads[0]!);
const decoderCpu = decoderThreads.reduce((a, b) => a + b, 0);
const d = (name: string) => metric(m1, name) - metric(m0, name);
const received = d('scribed_siprec_rtp_packets_total');
const lost = d('scribed_siprec_rtp_packets_lost_total');
const dropped = d('scribed_siprec_rtp_packets_dropped_total');
const audioIn = d('scribed_siprec_audio_seconds_total');
const backlogGrowth =
  metric(m1, 'scribed_recognition_deferred_backlog_seconds') -
  metric(m0, 'scribed_recognition_deferred_backlog_seconds') +
  (metric(m1, 'scribed_decode_backlog_seconds') - metric(m0, 'scribed_decode_backlog_seconds'));
const decoded = Math.max(0, audioIn - backlogGrowth);

// Stop the server (SIGTERM: no drain) so it writes its profiles, then attribute the main thread's.
server.kill('SIGTERM');
await new Promise((r) => server.once('exit', r));
interface ProfileNode {
  id: number;
  callFrame: { url: string; functionName: string };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}
const ON_RAMP = /\/server\/siprec\/|\/rtp\/|\/core\/sip\/|\/core\/audio\/g722|^node:dgram$/;
const REST = /\/(session|engine|store|server|spool|recording|search|obs|core)\//;
const profiles = fs.readdirSync(profDir).map((f) => JSON.parse(fs.readFileSync(path.join(profDir, f), 'utf8')) as Profile);
// The main thread's profile is the one with samples in the server's code outside the engine worker.
const mainProfile = profiles
  .map((p) => ({ p, http: p.nodes.filter((n) => /fastify|\/server\/siprec\//.test(n.callFrame.url)).length }))
  .sort((a, b) => b.http - a.http)[0]!.p;
const parent = new Map<number, number>();
for (const n of mainProfile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const byId = new Map(mainProfile.nodes.map((n) => [n.id, n]));
const verdict = new Map<number, 'onramp' | 'rest' | 'none'>();
const classify = (id: number): 'onramp' | 'rest' | 'none' => {
  const known = verdict.get(id);
  if (known) return known;
  const url = byId.get(id)!.callFrame.url;
  const v = ON_RAMP.test(url) ? 'onramp' : REST.test(url) ? 'rest' : parent.has(id) ? classify(parent.get(id)!) : 'none';
  verdict.set(id, v);
  return v;
};
const from = Number(t0 / 1000n);
const to = Number(t1 / 1000n);
let at = mainProfile.startTime;
const counts = { onramp: 0, rest: 0, none: 0, idle: 0 };
mainProfile.samples.forEach((id, i) => {
  at += mainProfile.timeDeltas[i]!;
  if (at < from || at > to) return;
  if (byId.get(id)!.callFrame.functionName === '(idle)') counts.idle++;
  else counts[classify(id)]++;
});
const share = counts.onramp / Math.max(1, counts.onramp + counts.rest);
const onRamp = main * share;
const perAudio = (cpu: number, audio: number) => cpu / Math.max(audio, 1e-9);
const ratio = perAudio(onRamp, audioIn) / perAudio(workers, decoded);

const result = {
  calls: CALLS,
  streams: sent.streams,
  secondsPerStream: SECONDS,
  maxDecoders: MAX_DECODERS,
  windowSeconds: Number(t1 - t0) / 1e9,
  loadAverage: { before: load0, after: load1, cores: os.cpus().length },
  packets: {
    sent: sent.packetsSent,
    received,
    jitterLost: lost,
    dropped,
    socketDrops: drops.drops,
    sockets: drops.sockets,
    senderMaxLateMs: sent.maxLateMs,
  },
  byesAnswered: bye.byes,
  cpuSeconds: {
    mainThread: main,
    workerThreads: workers,
    busiestWorkerThreads: decoderThreads.map((t) => Number(t.toFixed(2))),
    otherWorkerThreads: Number((workers - decoderCpu).toFixed(2)),
    sender: sent.cpuSeconds,
  },
  profileSamples: counts,
  audioSeconds: { received: audioIn, decodedInWindow: decoded },
  onRampShareOfMainThread: share,
  onRampCpuPerAudioSecond: perAudio(onRamp, audioIn),
  recognizerCpuPerAudioSecond: perAudio(workers, decoded),
  mainThreadCpuPerAudioSecond: perAudio(main, audioIn),
  onRampOverRecognizer: ratio,
  mainThreadOverRecognizer: perAudio(main, audioIn) / perAudio(workers, decoded),
  // Against the busiest worker threads alone (the decoders): the conservative ratio.
  onRampOverDecoderThreads: perAudio(onRamp, audioIn) / perAudio(decoderCpu, decoded),
};
console.log(JSON.stringify(result, null, 2));
fs.rmSync(dataDir, { recursive: true, force: true });
