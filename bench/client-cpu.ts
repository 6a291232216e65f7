// CPU of the `scribed stream` client per real-time stream, against a bare sender.
//
// K `scribed stream --input - --encoding mulaw_8000 --realtime` child processes (key in env
// SCRIBED_ACCESS_KEY) each get the same ~20 s of mu-law (the samples/ clips joined) on stdin
// and stream it to a real service in this process. Baseline, measured in the same run: K
// bench/bare-sender.mjs processes (plain `ws` + fetch: create, socket, the same audio in the
// same 20 ms frames at real time, last ack, close) on the same audio. Each child's CPU is
// user + system time from /usr/bin/time over its whole life. Start-up cost: the same commands
// on empty input / 0 s of audio (start, create, close, exit). Printed: CPU per audio second
// for both, their start-up, and the ratios client/baseline, total and marginal (start-up
// taken off).
//
// Run: npx vite-node bench/client-cpu.ts   (after npm run build: it spawns dist/cli.js)
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startLocalService, tempDir } from '../test/helpers/local-service.js';
import { loadClips } from '../test/helpers/audio.js';

const STREAMS = Number(process.env.BENCH_STREAMS ?? 2);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const CLI = path.resolve(import.meta.dirname, '../dist/cli.js');
const BARE = path.resolve(import.meta.dirname, 'bare-sender.mjs');
const RATE = 8000;

interface Run {
  cpu: number; // user + system CPU seconds of the child
  wall: number;
  captured: number; // samples the server said it holds
}

/** Run `argv` under /usr/bin/time with `input` on stdin; its CPU, wall time and, from
 * `captured(stdout, stderr)`, the samples the server confirmed. */
async function timed(argv: string[], input: Buffer, env: NodeJS.ProcessEnv, captured: (out: string, err: string) => number): Promise<Run> {
  const timeFile = path.join(tempDir('scribed-client-cpu-'), 'time');
  const t0 = performance.now();
  const child = spawn('/usr/bin/time', ['-f', '%U %S', '-o', timeFile, ...argv], { stdio: ['pipe', 'pipe', 'pipe'], env });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  child.stdin.end(input);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  const wall = (performance.now() - t0) / 1000;
  if (code !== 0) throw new Error(`${argv.slice(0, 3).join(' ')} exited ${code}: ${err.slice(-2000)}`);
  const [user, sys] = fs.readFileSync(timeFile, 'utf8').trim().split('\n').pop()!.split(' ').map(Number);
  return { cpu: user! + sys!, wall, captured: captured(out, err) };
}

const svc = await startLocalService({ maxDecoders: STREAMS });
const { accessKey } = await svc.account(100_000_000n);
const env = { ...process.env, SCRIBED_ACCESS_KEY: accessKey, SCRIBED_LOG_LEVEL: 'info' };

// The clips back to back, repeated to SECONDS.
const one = Buffer.concat(loadClips().map((c) => c.mulaw8k));
const audio = Buffer.concat(Array.from({ length: Math.ceil((SECONDS * RATE) / one.length) }, () => one)).subarray(0, SECONDS * RATE);
const audioFile = path.join(tempDir('scribed-client-cpu-'), 'audio.ulaw');
const emptyFile = path.join(tempDir('scribed-client-cpu-'), 'empty.ulaw');
fs.writeFileSync(audioFile, audio);
fs.writeFileSync(emptyFile, Buffer.alloc(0));

function clientFinished(_out: string, err: string): number {
  for (const line of err.split('\n')) {
    if (!line.startsWith('{')) continue;
    const rec = JSON.parse(line) as { msg?: string; serverCapturedSamples?: number };
    if (rec.msg === 'stream finished') return Number(rec.serverCapturedSamples);
  }
  throw new Error('no "stream finished" line');
}
const bareFinished = (out: string): number => (JSON.parse(out.trim().split('\n').pop()!) as { captured: number[] }).captured[0]!;

const client = (input: Buffer) =>
  timed(
    [process.execPath, CLI, 'stream', '--url', svc.baseUrl, '--input', '-', '--encoding', 'mulaw_8000', '--realtime'],
    input,
    env,
    clientFinished,
  );
const bare = (file: string) => timed([process.execPath, BARE, '--url', svc.baseUrl, '--file', file], Buffer.alloc(0), env, bareFinished);

/** K of the same command at once. */
const parallel = (run: () => Promise<Run>) => Promise.all(Array.from({ length: STREAMS }, run));

const clientStart = await parallel(() => client(Buffer.alloc(0)));
const bareStart = await parallel(() => bare(emptyFile));
const clientRuns = await parallel(() => client(audio));
const bareRuns = await parallel(() => bare(audioFile));
await svc.stop();

for (const r of [...clientRuns, ...bareRuns]) {
  if (r.captured !== SECONDS * RATE)
    throw new Error(`a stream ended with ${r.captured} samples held by the server, expected ${SECONDS * RATE}`);
}
const mean = (runs: Run[], f: (r: Run) => number) => runs.reduce((s, r) => s + f(r), 0) / runs.length;
const cStart = mean(clientStart, (r) => r.cpu);
const bStart = mean(bareStart, (r) => r.cpu);
const cCpu = mean(clientRuns, (r) => r.cpu);
const bCpu = mean(bareRuns, (r) => r.cpu);
const pct = (cpu: number) => `${((100 * cpu) / SECONDS).toFixed(2)}%`;

console.log(
  `client-cpu: node ${process.version}, ${os.cpus()[0]?.model}, load ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(
      ' ',
    )}; ${STREAMS} processes at once x ${SECONDS} s of mu-law 8 kHz at real time (wall ${mean(clientRuns, (r) => r.wall).toFixed(1)} s client, ${mean(bareRuns, (r) => r.wall).toFixed(1)} s baseline)`,
);
console.log(`  every stream: ${SECONDS * RATE} samples held by the server`);
console.log(
  `  scribed stream   : ${cCpu.toFixed(2)} CPU s per ${SECONDS} s stream = ${(cCpu / SECONDS).toFixed(4)} CPU s per audio s (${pct(cCpu)} of a core); start-up on empty input ${cStart.toFixed(2)} s; marginal ${((cCpu - cStart) / SECONDS).toFixed(4)} CPU s per audio s (${pct(cCpu - cStart)})`,
);
console.log(
  `  bare sender (ws) : ${bCpu.toFixed(2)} CPU s per ${SECONDS} s stream = ${(bCpu / SECONDS).toFixed(4)} CPU s per audio s (${pct(bCpu)} of a core); start-up on 0 s of audio ${bStart.toFixed(2)} s; marginal ${((bCpu - bStart) / SECONDS).toFixed(4)} CPU s per audio s (${pct(bCpu - bStart)})`,
);
console.log(
  `  ratio client/baseline: total ${(cCpu / bCpu).toFixed(2)}x, start-up ${(cStart / bStart).toFixed(2)}x, marginal ${((cCpu - cStart) / (bCpu - bStart)).toFixed(2)}x`,
);
