#!/usr/bin/env node
// A small PBX simulator for trying `scribed gateway` (docs/gateway.md): it plays two sample
// files as the two parties of one call (the caller speaks, then the callee answers; each leg
// carries silence while its party listens, as a PBX sends both directions all along) over one
// of the protocols the gateway takes:
//   twilio       Twilio Media Streams: one WebSocket to /twilio, mu-law 8 kHz, tracks inbound/outbound
//   fork         FreeSWITCH mod_audio_fork: one WebSocket to /fork, stereo 16-bit PCM (caller, callee)
//   audiosocket  Asterisk AudioSocket: one TCP connection per party, slin 8 or 16 kHz, paired UUIDs
// The call's transcript is printed by the gateway (stdout, and --out). Paced at real time
// unless --speed says otherwise. Needs only Node and `ws` (a dependency of scribed).
//
// Usage:
//   node samples/pbx-sim.mjs --protocol twilio --gateway ws://127.0.0.1:8090 [--token T]
//   node samples/pbx-sim.mjs --protocol fork --gateway ws://127.0.0.1:8090 [--rate 16000]
//   node samples/pbx-sim.mjs --protocol audiosocket --gateway 127.0.0.1:9092 [--rate 8000]
// Options: --caller FILE, --callee FILE|none (16-bit PCM WAV files; defaults: two clips in
// samples/), --call-id ID (default: random), --speed N (times real time, default 1),
// --token T (the gateway's --pbx-token-file secret; env SCRIBED_GATEWAY_TOKEN).
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';

const here = path.dirname(new URL(import.meta.url).pathname);
const { values: a } = parseArgs({
  options: {
    protocol: { type: 'string' },
    gateway: { type: 'string' },
    caller: { type: 'string', default: path.join(here, 'librivox-0880.wav') },
    callee: { type: 'string', default: path.join(here, 'librivox-0930.wav') },
    'call-id': { type: 'string' },
    rate: { type: 'string', default: '8000' },
    speed: { type: 'string', default: '1' },
    token: { type: 'string', default: process.env.SCRIBED_GATEWAY_TOKEN },
  },
});
const usage = 'usage: node samples/pbx-sim.mjs --protocol twilio|fork|audiosocket --gateway ws://HOST:PORT (audiosocket: HOST:PORT) [--caller FILE] [--callee FILE|none] [--rate 8000|16000] [--speed N] [--token T]';
if (!['twilio', 'fork', 'audiosocket'].includes(a.protocol ?? '') || !a.gateway) {
  console.error(usage);
  process.exit(2);
}
const speed = Number(a.speed);
const rate = a.protocol === 'twilio' ? 8000 : Number(a.rate);
if (!(speed > 0) || ![8000, 16000].includes(rate)) {
  console.error(`--speed must be positive and --rate 8000 or 16000\n${usage}`);
  process.exit(2);
}
const FRAME_MS = 20;
const frameSamples = (rate * FRAME_MS) / 1000;

// ------------------------------------------------------------------ audio

/** The first channel of a 16-bit PCM WAV file, and its rate. */
function readWav(file) {
  const b = fs.readFileSync(file);
  if (b.toString('ascii', 0, 4) !== 'RIFF' || b.toString('ascii', 8, 12) !== 'WAVE') throw new Error(`${file}: not a WAV file`);
  let fmt = null;
  for (let off = 12; off + 8 <= b.length; ) {
    const id = b.toString('ascii', off, off + 4);
    const size = b.readUInt32LE(off + 4);
    if (id === 'fmt ') fmt = { format: b.readUInt16LE(off + 8), channels: b.readUInt16LE(off + 10), rate: b.readUInt32LE(off + 12), bits: b.readUInt16LE(off + 22) };
    if (id === 'data') {
      if (!fmt || fmt.format !== 1 || fmt.bits !== 16) throw new Error(`${file}: 16-bit PCM WAV expected (convert: ffmpeg -i IN -ac 1 -c:a pcm_s16le OUT.wav)`);
      const data = b.subarray(off + 8, Math.min(b.length, off + 8 + size));
      const n = Math.floor(data.length / 2 / fmt.channels);
      const out = new Int16Array(n);
      for (let i = 0; i < n; i++) out[i] = data.readInt16LE(i * 2 * fmt.channels);
      return { pcm: out, rate: fmt.rate };
    }
    off += 8 + size + (size & 1);
  }
  throw new Error(`${file}: no data chunk`);
}

/** To `to` Hz: an integer step down averages each group of samples (a crude low-pass, enough
 * for speech), any other ratio interpolates linearly. */
function resample(pcm, from, to) {
  if (from === to) return pcm;
  const step = from / to;
  const n = Math.floor(pcm.length / step);
  const out = new Int16Array(n);
  if (Number.isInteger(step)) {
    for (let i = 0; i < n; i++) {
      let sum = 0;
      for (let k = 0; k < step; k++) sum += pcm[i * step + k];
      out[i] = Math.round(sum / step);
    }
  } else {
    for (let i = 0; i < n; i++) {
      const x = i * step;
      const j = Math.floor(x);
      const f = x - j;
      out[i] = Math.round(pcm[j] * (1 - f) + (pcm[Math.min(j + 1, pcm.length - 1)] ?? 0) * f);
    }
  }
  return out;
}

/** G.711 mu-law of one 16-bit sample. */
function mulaw(sample) {
  const BIAS = 0x84;
  const sign = sample < 0 ? 0x80 : 0;
  let m = Math.min(Math.abs(sample), 32635) + BIAS;
  let exponent = 7;
  for (let mask = 0x4000; (m & mask) === 0 && exponent > 0; mask >>= 1) exponent--;
  const mantissa = (m >> (exponent + 3)) & 0x0f;
  return ~(sign | (exponent << 4) | mantissa) & 0xff;
}

function party(file) {
  if (file === 'none') return null;
  const { pcm, rate: fileRate } = readWav(file);
  return resample(pcm, fileRate, rate);
}

/** Both legs, equal length: lead silence, the caller, a pause, the callee, trailing silence. */
function conversation() {
  const caller = party(a.caller);
  const callee = party(a.callee) ?? new Int16Array(0);
  const lead = Math.round(0.3 * rate);
  const gap = Math.round(0.6 * rate);
  const total = Math.ceil((lead + caller.length + gap + callee.length + lead) / frameSamples) * frameSamples;
  const legA = new Int16Array(total);
  const legB = new Int16Array(total);
  legA.set(caller, lead);
  legB.set(callee, lead + caller.length + gap);
  return { legA, legB, frames: total / frameSamples, twoParties: callee.length > 0 };
}

const le16 = (pcm) => Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Calls send(k) for every 20 ms frame k, at `speed` times real time. */
async function paced(frames, send) {
  const t0 = Date.now();
  for (let k = 0; k < frames; k++) {
    await send(k);
    const wait = t0 + ((k + 1) * FRAME_MS) / speed - Date.now();
    if (wait > 0) await sleep(wait);
  }
}

function openWs(url, opts) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, opts.protocols ?? [], { headers: opts.headers ?? {} });
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`${url}: HTTP ${res.statusCode} (a wrong or missing --token?)`)));
  });
}

function closed(ws) {
  return new Promise((resolve) => {
    ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() }));
    ws.close(1000);
  });
}

// ------------------------------------------------------------------ protocols

async function twilio(callId, c) {
  const ws = await openWs(`${a.gateway.replace(/\/$/, '')}/twilio`, {});
  const streamSid = `MZ${randomUUID().replace(/-/g, '')}`;
  const tracks = c.twoParties ? ['inbound', 'outbound'] : ['inbound'];
  ws.send(JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }));
  ws.send(
    JSON.stringify({
      event: 'start',
      sequenceNumber: '1',
      streamSid,
      start: { streamSid, accountSid: 'ACpbxsimulator', callSid: callId, tracks, customParameters: a.token ? { gatewayToken: a.token } : {}, mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 } },
    }),
  );
  let seq = 1;
  await paced(c.frames, (k) => {
    for (const [track, leg] of [['inbound', c.legA], ['outbound', c.legB]]) {
      if (!tracks.includes(track)) continue;
      const frame = leg.subarray(k * frameSamples, (k + 1) * frameSamples);
      const payload = Buffer.from(Array.from(frame, mulaw)).toString('base64');
      ws.send(JSON.stringify({ event: 'media', sequenceNumber: String(++seq), streamSid, media: { track, chunk: String(k + 1), timestamp: String(k * FRAME_MS), payload } }));
    }
  });
  ws.send(JSON.stringify({ event: 'stop', sequenceNumber: String(++seq), streamSid, stop: { accountSid: 'ACpbxsimulator', callSid: callId } }));
  return closed(ws);
}

async function fork(callId, c) {
  const mixType = c.twoParties ? 'stereo' : 'mono';
  const headers = a.token ? { Authorization: `Basic ${Buffer.from(`pbx:${a.token}`).toString('base64')}` } : {};
  const ws = await openWs(`${a.gateway.replace(/\/$/, '')}/fork`, { protocols: ['audio.drachtio.org'], headers });
  ws.send(JSON.stringify({ callSid: callId, sampleRate: rate, mixType }));
  await paced(c.frames, (k) => {
    const frame = Buffer.alloc(frameSamples * 2 * (c.twoParties ? 2 : 1));
    for (let i = 0; i < frameSamples; i++) {
      const s = k * frameSamples + i;
      if (c.twoParties) {
        frame.writeInt16LE(c.legA[s], i * 4);
        frame.writeInt16LE(c.legB[s], i * 4 + 2);
      } else frame.writeInt16LE(c.legA[s], i * 2);
    }
    ws.send(frame);
  });
  return closed(ws);
}

async function audiosocket(callId, c) {
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(a.gateway.replace(/^tcp:\/\//, ''));
  if (!m) throw new Error('--gateway for audiosocket is HOST:PORT');
  // The gateway pairs connections whose UUIDs differ only in the last byte (the leg number).
  const base = Buffer.from((callId.replace(/-/g, '') + '0'.repeat(32)).slice(0, 32), 'hex');
  if (base.length !== 16) throw new Error('--call-id for audiosocket is a UUID (hex)');
  const kind = rate === 8000 ? 0x10 : 0x12;
  const frameOf = (k, payload) => Buffer.concat([Buffer.from([k, payload.length >> 8, payload.length & 0xff]), payload]);
  const legs = c.twoParties ? [c.legA, c.legB] : [c.legA];
  const sockets = await Promise.all(
    legs.map(
      () =>
        new Promise((resolve, reject) => {
          const s = net.connect({ host: m[1], port: Number(m[2]) }, () => resolve(s));
          s.once('error', reject);
        }),
    ),
  );
  sockets.forEach((s, i) => {
    const uuid = Buffer.from(base);
    uuid[15] = i + 1;
    s.write(frameOf(0x01, uuid));
  });
  await paced(c.frames, (k) => {
    sockets.forEach((s, i) => s.write(frameOf(kind, le16(legs[i].subarray(k * frameSamples, (k + 1) * frameSamples)))));
  });
  await Promise.all(sockets.map((s) => new Promise((resolve) => s.end(frameOf(0x00, Buffer.alloc(0)), resolve))));
  return { code: 'hung up' };
}

const c = conversation();
const callId =
  a['call-id'] ??
  (a.protocol === 'twilio' ? `CA${randomUUID().replace(/-/g, '')}` : a.protocol === 'audiosocket' ? `${randomUUID().slice(0, 34)}00` : randomUUID());
console.log(`pbx-sim: ${a.protocol} call ${callId}, ${c.twoParties ? 'two parties' : 'one party'}, ${((c.frames * FRAME_MS) / 1000).toFixed(1)} s of audio at ${rate} Hz, ${speed}x real time`);
const run = { twilio, fork, audiosocket }[a.protocol];
const end = await run(callId, c);
console.log(`pbx-sim: call ended (${end.code}${end.reason ? ` ${end.reason}` : ''}); the transcript is on the gateway's stdout and in its --out directory`);
