#!/usr/bin/env node
// The baseline of the CPU benches (bench/client-cpu.ts, bench/rtp-cpu.ts): the least a
// process must do to stream audio to scribed at real time. Plain `ws` + fetch; no ring buffer,
// no spool, no metrics, no logging, no resume. Per stream: create a session, open the socket
// with the accessKey header, send the audio in 20 ms frames paced at real time, wait for the
// ack of the last frame, send `close`, wait for `closed`. Plain JavaScript run by node itself,
// so its start-up is node's and the `ws` import's, nothing more.
//
// Usage: SCRIBED_ACCESS_KEY=... node bench/bare-sender.mjs --url http://127.0.0.1:PORT
//          --file AUDIO.ulaw [--streams N] [--encoding mulaw_8000]
// Prints one JSON line: per-stream captured samples, and this process's CPU seconds from
// before the first request to the last `closed` (start-up and imports excluded).
import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';

const { values: a } = parseArgs({
  options: {
    url: { type: 'string' },
    file: { type: 'string' },
    streams: { type: 'string', default: '1' },
    encoding: { type: 'string', default: 'mulaw_8000' },
  },
});
const key = process.env.SCRIBED_ACCESS_KEY;
if (!a.url || !a.file || !key) throw new Error('--url, --file and env SCRIBED_ACCESS_KEY are required');
const rate = Number(a.encoding.split('_').pop());
const bytesPerSample = a.encoding.startsWith('mulaw') ? 1 : 2;
const frameBytes = (rate / 50) * bytesPerSample; // 20 ms
const audio = fs.readFileSync(a.file);
const api = `${a.url}/sound_clone/api/v1`;

function audioFrame(epoch, sampleOffset, payload) {
  const h = Buffer.alloc(16);
  h[0] = 1; // audio
  h[1] = 1; // version
  h.writeUInt32LE(epoch, 4);
  h.writeBigUInt64LE(BigInt(sampleOffset), 8);
  return Buffer.concat([h, payload]);
}

async function stream() {
  const res = await fetch(`${api}/stt/realtime/sessions`, {
    method: 'POST',
    headers: { accessKey: key, 'Idempotency-Key': `bare-${randomUUID()}`, 'content-type': 'application/json' },
    body: JSON.stringify({ options: { inputEncoding: a.encoding } }),
  });
  const created = await res.json();
  if (res.status !== 200) throw new Error(`create: HTTP ${res.status} ${created.message}`);
  const ws = new WebSocket(a.url.replace(/^http/, 'ws') + created.data.streamUrl, { headers: { accessKey: key } });
  return new Promise((resolve, reject) => {
    const total = audio.length / bytesPerSample;
    let epoch = 0;
    let closeSent = false;
    const sendClose = () => {
      closeSent = true;
      ws.send(JSON.stringify({ type: 'close' }));
    };
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      const ev = JSON.parse(data.toString());
      if (ev.type === 'ready') {
        epoch = ev.epoch;
        if (total === 0) return sendClose();
        const t0 = performance.now();
        let k = 0;
        const tick = () => {
          // Every frame that is due by now (timers can fire late), then sleep to the next one.
          while (k * frameBytes < audio.length && t0 + k * 20 <= performance.now()) {
            const from = k * frameBytes;
            ws.send(audioFrame(epoch, from / bytesPerSample, audio.subarray(from, from + frameBytes)));
            k += 1;
          }
          if (k * frameBytes < audio.length) setTimeout(tick, Math.max(0, t0 + k * 20 - performance.now()));
        };
        tick();
      } else if (ev.type === 'ack') {
        if (!closeSent && ev.epoch === epoch && ev.sampleOffset >= total) sendClose();
      } else if (ev.type === 'closed') {
        ws.close(1000);
        resolve(Number(ev.capturedSamples));
      } else if (ev.type === 'error') reject(new Error(`${ev.code}: ${ev.message}`));
    });
    ws.on('error', reject);
    ws.on('close', (code) => reject(new Error(`socket closed ${code} before closed`)));
  });
}

const cpu0 = process.cpuUsage();
const captured = await Promise.all(Array.from({ length: Number(a.streams) }, () => stream()));
const cpu = process.cpuUsage(cpu0);
console.log(JSON.stringify({ captured, cpuSeconds: (cpu.user + cpu.system) / 1e6 }));
