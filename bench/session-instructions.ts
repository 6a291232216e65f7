// Session instructions (issue 27): one round of K live sessions against a build's
// `scribed serve` under callgrind, counted per thread, so two builds compare on a machine too
// loaded for CPU seconds to mean much. docs/benchmarks.md, "Session core (issue 27)".
//
// The server runs under `valgrind --tool=callgrind --separate-threads=yes
// --instr-atstart=no`: K one-second sessions load its decoders uninstrumented, then
// instrumentation goes on (callgrind_control), BENCH_IDLE seconds idle are dumped on their own
// (what the node spends per second of wall time with no session), then K sessions of
// BENCH_SECONDS of the dev clips each (8 kHz mu-law, 20 ms frames, a commit after each clip,
// close) are dumped: each thread's instructions in <out>/<label>.<pid>.<part>-<thread>, and
// the totals printed. The frames are paced at 1/BENCH_SLOW of real time (callgrind is about 50
// times slower; work driven by wall time, timers and polls, weighs that much more here).
//
// Run: BENCH_CLI=/path/to/checkout/dist/cli.js npx vite-node bench/session-instructions.ts
//      (BENCH_LABEL, BENCH_K=4, BENCH_SECONDS=3, BENCH_SLOW=60, BENCH_IDLE=0, BENCH_OUT=/tmp);
//      two builds at once on two shells, then compare with callgrind_annotate.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import readline from 'node:readline';
import { promisify } from 'node:util';
import WebSocket from 'ws';
import { encodeAudioFrame } from '../src/core/frame.js';
import { devSetDir, loadClips } from '../test/helpers/audio.js';
import { CLI as THIS_CLI } from '../test/helpers/cluster.js';
import { freeLoopbackPort } from '../test/helpers/postgres-cluster.js';

const execFileAsync = promisify(execFile);
const CLI = process.env.BENCH_CLI ?? THIS_CLI;
const LABEL = process.env.BENCH_LABEL ?? 'session';
const K = Number(process.env.BENCH_K ?? 4);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const SLOW = Number(process.env.BENCH_SLOW ?? 60);
const IDLE = Number(process.env.BENCH_IDLE ?? 0);
const OUT = process.env.BENCH_OUT ?? os.tmpdir();
const RATE = 8000;
const FRAME = 160;
const clips = loadClips(devSetDir());
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-instructions-'));
const { stdout } = await execFileAsync(process.execPath, [
  CLI,
  'accounts',
  'create',
  '--name',
  'bench',
  '--characters',
  '100000000',
  '--json',
  '--data-dir',
  dataDir,
]);
const accessKey = (JSON.parse(stdout) as { accessKey: string }).accessKey;
const port = await freeLoopbackPort();
const outPrefix = path.join(OUT, LABEL);
const proc = spawn(
  'valgrind',
  [
    '--tool=callgrind',
    '--separate-threads=yes',
    '--instr-atstart=no',
    `--callgrind-out-file=${outPrefix}.%p`,
    process.execPath,
    CLI,
    'serve',
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '--data-dir',
    dataDir,
    '--max-decoders',
    String(K),
  ],
  { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SCRIBED_LOG_LEVEL: 'info', SCRIBED_MAX_STREAMS_PER_ACCOUNT: '0' } },
);
const errs: string[] = [];
readline.createInterface({ input: proc.stderr! }).on('line', (l) => errs.push(l));
await new Promise<void>((resolve, reject) => {
  readline.createInterface({ input: proc.stdout! }).on('line', (line) => {
    if (line.includes('"scribed listening"')) resolve();
  });
  proc.once('exit', (code) => reject(new Error(`serve exited (${code}): ${errs.slice(-20).join('\n')}`)));
});
const base = `http://127.0.0.1:${port}`;
const callgrind = (...args: string[]) => execFileSync('callgrind_control', [...args, String(proc.pid)], { stdio: 'ignore' });
console.log(`${LABEL}: ${CLI} under callgrind (pid ${proc.pid}), K ${K}, ${SECONDS} s a session at 1/${SLOW} real time; load ${load()}`);

interface Run {
  frames: number;
  maxAckLagMs: number;
}

/** Session i: the clips back to back from clip i, cut at `seconds`, one commit per clip end. */
async function session(i: number, seconds: number, delayMs: number): Promise<Run> {
  await sleep(delayMs);
  const parts: Buffer[] = [];
  const commitsAt: number[] = [];
  let len = 0;
  for (let n = 0; len < seconds * RATE; n++) {
    const c = clips[(i + n) % clips.length]!.mulaw8k;
    parts.push(c);
    len += c.length;
    const at = Math.min(len, seconds * RATE);
    if (commitsAt.length === 0 || Math.ceil(at / FRAME) > Math.ceil(commitsAt.at(-1)! / FRAME)) commitsAt.push(at);
  }
  const audio = Buffer.concat(parts).subarray(0, seconds * RATE);
  const res = await fetch(`${base}/sound_clone/api/v1/stt/realtime/sessions`, {
    method: 'POST',
    headers: { accessKey, 'Idempotency-Key': `bench-${randomUUID()}`, 'content-type': 'application/json' },
    body: JSON.stringify({ options: { inputEncoding: 'mulaw_8000' } }),
  });
  const created = (await res.json()) as { data: { streamUrl: string } };
  if (res.status !== 200) throw new Error(`create: HTTP ${res.status} ${JSON.stringify(created)}`);
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}${created.data.streamUrl}`, { headers: { accessKey } });
  const frames = Math.ceil(audio.length / FRAME);
  const sentAt = new Float64Array(frames);
  let acked = 0;
  let committed = 0;
  let maxAckLagMs = 0;
  let closeSent = false;
  return new Promise((resolve, reject) => {
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      const ev = JSON.parse(data.toString()) as Record<string, any>;
      if (ev.type === 'ready') {
        let k = 0;
        let nextCommit = 0;
        const t0 = performance.now();
        const tick = () => {
          while (k < frames && t0 + k * 20 * SLOW <= performance.now()) {
            sentAt[k] = performance.now();
            ws.send(encodeAudioFrame({ epoch: ev.epoch, sampleOffset: k * FRAME, payload: audio.subarray(k * FRAME, (k + 1) * FRAME) }));
            if (nextCommit < commitsAt.length && (k + 1) * FRAME >= commitsAt[nextCommit]!) {
              ws.send(JSON.stringify({ type: 'commit' }));
              nextCommit++;
            }
            k++;
          }
          if (k < frames) setTimeout(tick, Math.max(0, t0 + k * 20 * SLOW - performance.now()));
        };
        tick();
      } else if (ev.type === 'ack') {
        const now = performance.now();
        while (acked < frames && Math.min((acked + 1) * FRAME, audio.length) <= Number(ev.capturedSamples))
          maxAckLagMs = Math.max(maxAckLagMs, now - sentAt[acked++]!);
      } else if (ev.type === 'committed') {
        committed++;
      } else if (ev.type === 'error') {
        reject(new Error(`session ${i}: ${ev.code} ${ev.message}`));
      } else if (ev.type === 'closed') {
        ws.close(1000);
        resolve({ frames, maxAckLagMs });
        return;
      }
      if (!closeSent && acked === frames && committed >= commitsAt.length) {
        closeSent = true;
        ws.send(JSON.stringify({ type: 'close' }));
      }
    });
    ws.on('error', reject);
  });
}

/** Each thread's instructions in the dump files of one part, thread number -> Ir. */
function totals(part: number): Map<string, number> {
  const out = new Map<string, number>();
  const prefix = `${path.basename(outPrefix)}.${proc.pid}.${part}-`;
  for (const f of fs.readdirSync(OUT).filter((n) => n.startsWith(prefix))) {
    const m = /^totals: (\d+)/m.exec(fs.readFileSync(path.join(OUT, f), 'utf8'));
    out.set(f.slice(prefix.length), m ? Number(m[1]) : 0);
  }
  return out;
}
const show = (t: Map<string, number>) =>
  [...t]
    .filter(([, ir]) => ir > 1e6)
    .map(([th, ir]) => `thread ${th} ${(ir / 1e6).toFixed(1)} M`)
    .join(', ');

let t = Date.now();
await Promise.all(Array.from({ length: K }, (_, i) => session(i, 1, 0)));
console.log(`${LABEL}: decoders loaded in ${((Date.now() - t) / 1000).toFixed(0)} s`);
await sleep(2000);
callgrind('-i', 'on');
callgrind('-z');
let part = 0;
if (IDLE > 0) {
  t = Date.now();
  await sleep(IDLE * 1000);
  callgrind('-d', 'idle');
  part++;
  await sleep(2000);
  console.log(`${LABEL}: idle ${((Date.now() - t) / 1000).toFixed(1)} s: ${show(totals(part))}`);
}
t = Date.now();
const runs = await Promise.all(Array.from({ length: K }, (_, i) => session(i, SECONDS, (i * 1000 * SLOW) / K)));
const wall = (Date.now() - t) / 1000;
await sleep(1000);
callgrind('-d', 'sessions');
part++;
await sleep(2000);
console.log(
  `${LABEL}: sessions ${wall.toFixed(1)} s (${runs.reduce((a, r) => a + r.frames, 0)} frames, max ack lag ${(Math.max(...runs.map((r) => r.maxAckLagMs)) / 1000).toFixed(1)} s): ${show(totals(part))}`,
);
const exited = new Promise((r) => proc.once('exit', r));
proc.kill('SIGTERM');
await exited;
fs.rmSync(dataDir, { recursive: true, force: true });
console.log(`${LABEL}: files ${outPrefix}.${proc.pid}.*; load ${load()}`);
