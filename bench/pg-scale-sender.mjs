#!/usr/bin/env node
// The callers of bench/pg-scale.ts: N paced 8 kHz mu-law streams from one light process (plain
// `ws` + fetch, as bench/bare-sender.mjs), each frame's send -> ack latency recorded. One
// timer walks every stream every 5 ms and sends the frames that are due, so N streams cost N
// sends, not N timers. Runs until told to stop (a line "stop" on stdin); never sends `close`
// (a deferred session's close would wait for its whole backlog to be recognized).
//
// Usage: SCRIBED_ACCESS_KEY=... node bench/pg-scale-sender.mjs --url http://127.0.0.1:PORT
//          --file AUDIO.ulaw --streams N [--stagger-ms 20] [--frame-ms 20]
// stdout: "ready" once every stream has had its `ready`; then, after "mark" on stdin, the
// latencies of the frames sent after the mark are collected; after "stop", one JSON line:
// { ackMs: [...], lateMs: [...], sent, acked, errors }.
import fs from 'node:fs';
import readline from 'node:readline';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';

const { values: a } = parseArgs({
  options: {
    url: { type: 'string' },
    file: { type: 'string' },
    streams: { type: 'string', default: '1' },
    'stagger-ms': { type: 'string', default: '20' },
    'frame-ms': { type: 'string', default: '20' },
  },
});
// One access key, or several separated by commas: stream i uses key i mod their count.
const keys = (process.env.SCRIBED_ACCESS_KEY ?? '').split(',').filter(Boolean);
if (!a.url || !a.file || keys.length === 0) throw new Error('--url, --file and env SCRIBED_ACCESS_KEY are required');
const FRAME_MS = Number(a['frame-ms']);
const FRAME = 8 * FRAME_MS; // 8 kHz, one byte a sample
const audio = fs.readFileSync(a.file);
const api = `${a.url}/sound_clone/api/v1`;
const N = Number(a.streams);

function audioFrame(epoch, sampleOffset, payload) {
  const h = Buffer.alloc(16);
  h[0] = 1;
  h[1] = 1;
  h.writeUInt32LE(epoch, 4);
  h.writeBigUInt64LE(BigInt(sampleOffset), 8);
  return Buffer.concat([h, payload]);
}

let marked = false;
const ackMs = [];
const lateMs = [];
let sent = 0;
let acked = 0;
const errors = [];
const streams = [];

async function open(i) {
  const key = keys[i % keys.length];
  const res = await fetch(`${api}/stt/realtime/sessions`, {
    method: 'POST',
    headers: { accessKey: key, 'Idempotency-Key': `pgscale-${randomUUID()}`, 'content-type': 'application/json' },
    body: JSON.stringify({ options: { inputEncoding: 'mulaw_8000' } }),
  });
  const created = await res.json();
  if (res.status !== 200) throw new Error(`create: HTTP ${res.status} ${created.message}`);
  const ws = new WebSocket(a.url.replace(/^http/, 'ws') + created.data.streamUrl, { headers: { accessKey: key } });
  const s = { i, ws, epoch: 0, t0: 0, k: 0, sentAt: [], countFrom: Infinity, ackedFrames: 0, ready: false };
  await new Promise((resolve, reject) => {
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      const ev = JSON.parse(data.toString());
      if (ev.type === 'ready') {
        s.epoch = ev.epoch;
        s.ready = true;
        resolve();
      } else if (ev.type === 'ack' && ev.epoch === s.epoch) {
        const now = performance.now();
        const upTo = Math.floor(Number(ev.sampleOffset) / FRAME);
        while (s.ackedFrames < upTo) {
          const k = s.ackedFrames++;
          acked += 1;
          if (k >= s.countFrom) ackMs.push(now - s.sentAt[k]);
          s.sentAt[k] = undefined;
        }
      } else if (ev.type === 'error') errors.push(`${ev.code}: ${ev.message}`);
    });
    ws.on('error', reject);
    ws.on('close', (code) => {
      if (!s.ready) reject(new Error(`socket closed ${code} before ready`));
      else if (!stopping) errors.push(`stream ${i} closed ${code}`);
    });
  });
  streams.push(s);
}

let stopping = false;
const stagger = Number(a['stagger-ms']);
const opened = [];
for (let i = 0; i < N; i++) {
  opened.push(open(i));
  await new Promise((r) => setTimeout(r, stagger));
}
await Promise.all(opened);
const start = performance.now();
for (const s of streams) s.t0 = start + ((s.i % 50) * FRAME_MS) / 50; // spread the sends over a frame
const tick = () => {
  const now = performance.now();
  for (const s of streams) {
    while (s.t0 + s.k * FRAME_MS <= now) {
      const due = s.t0 + s.k * FRAME_MS;
      const from = (s.k * FRAME) % (audio.length - FRAME);
      const t = performance.now();
      s.sentAt[s.k] = t;
      if (marked) lateMs.push(t - due);
      if (marked && s.countFrom === Infinity) s.countFrom = s.k;
      s.ws.send(audioFrame(s.epoch, s.k * FRAME, audio.subarray(from, from + FRAME)));
      s.k += 1;
      sent += 1;
    }
  }
  if (!stopping) setTimeout(tick, 5);
};
tick();
console.log('ready');

readline.createInterface({ input: process.stdin }).on('line', (line) => {
  if (line === 'mark') marked = true;
  else if (line === 'stop') {
    stopping = true;
    for (const s of streams) s.ws.terminate();
    process.stdout.write(`${JSON.stringify({ ackMs, lateMs, sent, acked, errors: errors.slice(0, 20) })}\n`, () => process.exit(0));
  }
});
