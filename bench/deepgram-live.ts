// The Deepgram live socket's cost against the native stream socket, in one run on one service:
// the same mu-law clips over GET /v1/listen (raw audio, Deepgram messages) and over the native
// socket (16-byte framed audio, native events), with the same session options (vad commit
// mode, plain text, fillers removed: what the Deepgram query maps to by default), through the
// same plain `ws` client so the clients cost alike. Rounds alternate native and Deepgram so
// load drifts hit both; each round streams the clips back to back as fast as the server takes
// them, then closes and waits for the end (`closed` / Metadata). CPU is this process's
// (process.cpuUsage: the server's main thread and its recognizer workers, plus the client),
// per audio second; printed both and the ratio deepgram/native.
//
// Then latency: each clip paced at real time (20 ms messages) over the Deepgram socket with
// interim_results; from the first frame holding speech (the first final word's start, known
// afterwards) to the first interim Results after it. p50/p95 over every clip and round.
//
// Run: npx vite-node bench/deepgram-live.ts   (BENCH_ROUNDS, default 3)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import WebSocket from 'ws';
import { loadClips } from '../test/helpers/audio.js';
import { encodeAudioFrame } from '../src/core/frame.js';
import { createService } from '../src/service.js';
import { provisionAccount } from '../src/accounts/provision.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SESSIONS = '/sound_clone/api/v1/stt/realtime/sessions';
const clips = loadClips();
const audio = Buffer.concat(clips.map((c) => c.mulaw8k));
const FRAME = 160; // 20 ms of 8 kHz mu-law

// A service in this process on SQLite (test/helpers/service.ts needs vitest's worker).
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-bench-dglive-'));
const service = await createService({ maxDecoders: 2, host: '127.0.0.1', port: 0, dataDir, logger: pino({ level: 'silent' }) });
const port = new URL(await service.listen()).port;
const svc = { baseUrl: `http://127.0.0.1:${port}`, wsBase: `ws://127.0.0.1:${port}`, stop: () => service.stop() };
const { accessKey } = await provisionAccount(service.store, 'bench', 100_000_000n);
// vite-node ends the run when its loop has no ref'd timer between sockets: hold it open.
const hold = setInterval(() => undefined, 1000);

function opened(ws: WebSocket): Promise<void> {
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
}

async function nativeStream(): Promise<void> {
  const res = await fetch(`${svc.baseUrl}${SESSIONS}`, {
    method: 'POST',
    headers: { accessKey, 'content-type': 'application/json', 'Idempotency-Key': `bench-${Math.random()}` },
    body: JSON.stringify({
      title: 'bench native',
      options: { inputEncoding: 'mulaw_8000', segmentCommitMode: 'vad', readableText: false, removeDisfluencies: true },
    }),
  });
  const { data } = (await res.json()) as { data: { streamUrl: string; epoch: number } };
  const ws = new WebSocket(`${svc.wsBase}${data.streamUrl}`, { headers: { accessKey } });
  const done = new Promise<void>((resolve) =>
    ws.on('message', (m) => (JSON.parse(m.toString()).type === 'closed' ? resolve() : undefined)),
  );
  await opened(ws);
  for (let at = 0; at < audio.length; at += FRAME)
    ws.send(encodeAudioFrame({ epoch: data.epoch, sampleOffset: at, payload: audio.subarray(at, at + FRAME) }));
  ws.send(JSON.stringify({ type: 'close' }));
  await done;
  ws.close();
}

async function deepgramStream(): Promise<void> {
  const ws = new WebSocket(`${svc.wsBase}/v1/listen?encoding=mulaw&sample_rate=8000`, { headers: { Authorization: `Token ${accessKey}` } });
  const done = new Promise<void>((resolve) =>
    ws.on('message', (m) => (JSON.parse(m.toString()).type === 'Metadata' ? resolve() : undefined)),
  );
  await opened(ws);
  for (let at = 0; at < audio.length; at += FRAME) ws.send(audio.subarray(at, at + FRAME));
  ws.send(JSON.stringify({ type: 'CloseStream' }));
  await done;
  ws.close();
}

async function cpuOf(run: () => Promise<void>): Promise<number> {
  const c0 = process.cpuUsage();
  await run();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1e6;
}

await deepgramStream(); // warm-up: engine, JIT, store
const cpu = { native: 0, deepgram: 0 };
for (let r = 0; r < ROUNDS; r++) {
  cpu.native += await cpuOf(nativeStream);
  cpu.deepgram += await cpuOf(deepgramStream);
}
const audioSec = (ROUNDS * audio.length) / 8000;

// Latency: first speech frame -> first interim Results, paced.
const latencies: number[] = [];
for (let r = 0; r < Math.max(1, Math.ceil(ROUNDS / 2)); r++) {
  for (const clip of clips) {
    const ws = new WebSocket(`${svc.wsBase}/v1/listen?encoding=mulaw&sample_rate=8000&interim_results=true`, {
      headers: { Authorization: `Token ${accessKey}` },
    });
    const interims: number[] = [];
    let firstWord: number | null = null;
    const done = new Promise<void>((resolve) =>
      ws.on('message', (m) => {
        const msg = JSON.parse(m.toString());
        if (msg.type === 'Results' && !msg.is_final) interims.push(performance.now());
        if (msg.type === 'Results' && msg.is_final && firstWord === null && msg.channel.alternatives[0].words.length > 0)
          firstWord = msg.channel.alternatives[0].words[0].start;
        if (msg.type === 'Metadata') resolve();
      }),
    );
    await opened(ws);
    const sentAt: number[] = [];
    const t0 = performance.now();
    for (let i = 0, at = 0; at < clip.mulaw8k.length; i++, at += FRAME) {
      const wait = t0 + i * 20 - performance.now();
      if (wait > 0) await new Promise((res) => setTimeout(res, wait));
      sentAt.push(performance.now());
      ws.send(clip.mulaw8k.subarray(at, at + FRAME));
    }
    ws.send(JSON.stringify({ type: 'CloseStream' }));
    await done;
    ws.close();
    if (firstWord === null) continue;
    const speechFrameAt = sentAt[Math.min(sentAt.length - 1, Math.floor(((firstWord as number) * 8000) / FRAME))]!;
    const first = interims.find((t) => t >= speechFrameAt);
    if (first !== undefined) latencies.push(first - speechFrameAt);
  }
}
await svc.stop();
clearInterval(hold);
fs.rmSync(dataDir, { recursive: true, force: true });

latencies.sort((a, b) => a - b);
const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.ceil((p / 100) * latencies.length) - 1)]!;
console.log(
  `deepgram-live: node ${process.version}, ${os.cpus()[0]?.model}, load ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}; ${ROUNDS} rounds x ${(audio.length / 8000).toFixed(1)} s of mu-law per socket, unpaced`,
);
console.log(
  `native socket:   CPU ${cpu.native.toFixed(2)} s for ${audioSec.toFixed(1)} s of audio: ${(cpu.native / audioSec).toFixed(4)} CPU s per audio s`,
);
console.log(
  `deepgram socket: CPU ${cpu.deepgram.toFixed(2)} s for ${audioSec.toFixed(1)} s of audio: ${(cpu.deepgram / audioSec).toFixed(4)} CPU s per audio s`,
);
console.log(`ratio deepgram/native: ${(cpu.deepgram / cpu.native).toFixed(3)}x (goal <= 1.03x)`);
console.log(
  `first speech frame -> first interim Results, paced, ${latencies.length} streams: p50 ${pct(50).toFixed(0)} ms, p95 ${pct(95).toFixed(0)} ms`,
);
