// CPU of the `scribed rtp` process per real-time stream: K crafted RTP calls (PCMU, 20 ms
// packets, paced at real time) into a `scribed rtp` child process that streams them to a
// real service in this process. The child's CPU time (utime + stime from /proc) over the
// run, divided by the audio seconds it received, is its cost per real-time stream.
//
// Baseline, measured in the same run: one bench/bare-sender.mjs process (plain `ws` + fetch:
// create, socket, the same audio in the same 20 ms frames at real time, last ack, close)
// streaming the same audio for the same number of streams to the same service; its own CPU
// (process.cpuUsage) from the first request to the last `closed`, start-up excluded as the
// rtp child's is. Printed: both per audio second and the ratio rtp/baseline.
//
// Run: npx vite-node bench/rtp-cpu.ts   (after npm run build: it spawns dist/cli.js)
import { execFile, spawn } from 'node:child_process';
import dgram from 'node:dgram';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { startLocalService, tempDir } from '../test/helpers/local-service.js';
import { loadClips } from '../test/helpers/audio.js';
import { packetize, RtpTestSender } from '../test/helpers/rtp.js';

const STREAMS = Number(process.env.BENCH_STREAMS ?? 2);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const CLI = path.resolve(import.meta.dirname, '../dist/cli.js');
const TICKS = 100; // USER_HZ on Linux

function cpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS; // utime, stime
}

async function freePort(): Promise<number> {
  const s = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => s.bind(0, '127.0.0.1', resolve));
  const port = s.address().port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

const svc = await startLocalService({ maxDecoders: STREAMS });
const { accessKey } = await svc.account(100_000_000n);
const port = await freePort();
const rtcpPort = await freePort();
const child = spawn(
  process.execPath,
  [
    CLI,
    'rtp',
    '--listen',
    `127.0.0.1:${port}`,
    '--rtcp-port',
    String(rtcpPort),
    '--url',
    svc.baseUrl,
    '--out',
    tempDir('scribed-rtp-cpu-'),
  ],
  {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, SCRIBED_ACCESS_KEY: accessKey, SCRIBED_LOG_LEVEL: 'info' },
  },
);
const closed: Array<Record<string, unknown>> = [];
await new Promise<void>((resolve) => {
  readline.createInterface({ input: child.stderr! }).on('line', (line) => {
    const rec = JSON.parse(line) as Record<string, unknown>;
    if (rec.msg === 'scribed rtp listening') resolve();
    if (rec.msg === 'rtp session closed') closed.push(rec);
  });
});
const idleCpu = cpuSeconds(child.pid!);

// The clips back to back, repeated to SECONDS, one call per stream.
const clips = loadClips();
const one = Buffer.concat(clips.map((c) => c.mulaw8k));
const audio = Buffer.concat(Array.from({ length: Math.ceil((SECONDS * 8000) / one.length) }, () => one)).subarray(0, SECONDS * 8000);
const t0 = performance.now();
await Promise.all(
  Array.from({ length: STREAMS }, async (_, i) => {
    const sender = await RtpTestSender.open(0xbe0000 + i);
    const packets = packetize(audio, { payloadType: 0, seq0: 1000 * i, ts0: 7 * i });
    for (const [k, p] of packets.entries()) {
      const due = t0 + k * 20;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      await sender.send(p, port);
    }
    await sender.bye(rtcpPort);
    sender.close();
  }),
);
while (closed.length < STREAMS) await new Promise((r) => setTimeout(r, 100));
const wall = (performance.now() - t0) / 1000;
const cpu = cpuSeconds(child.pid!) - idleCpu;
child.kill('SIGTERM');
await new Promise((r) => child.once('exit', r));

// The baseline: the same audio, the same streams, from a bare sender.
const audioFile = path.join(tempDir('scribed-rtp-cpu-'), 'audio.ulaw');
fs.writeFileSync(audioFile, audio);
const bareT0 = performance.now();
const bareOut = await new Promise<string>((resolve, reject) =>
  execFile(
    process.execPath,
    [path.resolve(import.meta.dirname, 'bare-sender.mjs'), '--url', svc.baseUrl, '--file', audioFile, '--streams', String(STREAMS)],
    { env: { ...process.env, SCRIBED_ACCESS_KEY: accessKey } },
    (err, stdout) => (err ? reject(err) : resolve(stdout)),
  ),
);
const bareWall = (performance.now() - bareT0) / 1000;
const bare = JSON.parse(bareOut.trim().split('\n').pop()!) as { captured: number[]; cpuSeconds: number };
if (bare.captured.some((n) => n !== audio.length))
  throw new Error(`bare sender: server held ${bare.captured.join(', ')} samples, expected ${audio.length}`);
await svc.stop();

const audioSec = STREAMS * SECONDS;
console.log(
  `rtp-cpu: node ${process.version}, ${os.cpus()[0]?.model}, load ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}; ${STREAMS} real-time PCMU streams x ${SECONDS} s (wall ${wall.toFixed(1)} s)`,
);
console.log(
  `scribed rtp process CPU ${cpu.toFixed(2)} s for ${audioSec} s of audio: ${((100 * cpu) / audioSec).toFixed(2)}% of a core per real-time stream`,
);
for (const c of closed)
  console.log(
    `  session ${String(c.sessionId)}: captured ${String(c.capturedSamples)} acknowledged ${String(c.acknowledgedSamples)} lost ${String(c.lost)}`,
  );
console.log(
  `bare sender (ws) process CPU ${bare.cpuSeconds.toFixed(2)} s for ${audioSec} s of audio (wall ${bareWall.toFixed(1)} s): ${((100 * bare.cpuSeconds) / audioSec).toFixed(2)}% of a core per real-time stream; every session held ${audio.length} samples`,
);
console.log(`ratio rtp/baseline: ${(cpu / bare.cpuSeconds).toFixed(2)}x`);
