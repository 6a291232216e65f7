#!/usr/bin/env node
// Minimal client of the stream protocol (docs/protocol.md): create a session, stream a raw
// audio file in 20 ms frames, commit, close, print the transcript. The session asks for a
// final per utterance (segmentCommitMode "vad"); the API's own default is "manual".
// Usage: node samples/stream-sample.mjs --key KEY --file samples/librivox-0880.ulaw --encoding mulaw_8000 [--url http://127.0.0.1:8080]
import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';

const { values: a } = parseArgs({
  options: { url: { type: 'string', default: 'http://127.0.0.1:8080' }, key: { type: 'string' }, file: { type: 'string' }, encoding: { type: 'string', default: 'mulaw_8000' } },
});
if (!a.key || !a.file) throw new Error('--key and --file are required');
const rate = Number(a.encoding.split('_').pop());
const bytesPerSample = a.encoding.startsWith('mulaw') ? 1 : 2;
let audio = fs.readFileSync(a.file);
if (audio.toString('ascii', 0, 4) === 'RIFF') audio = audio.subarray(44); // canonical WAV header

const api = `${a.url}/sound_clone/api/v1`;
const created = await fetch(`${api}/stt/realtime/sessions`, {
  method: 'POST',
  headers: { accessKey: a.key, 'Idempotency-Key': `sample-${randomUUID()}`, 'Content-Type': 'application/json' },
  body: JSON.stringify({ title: a.file, options: { inputEncoding: a.encoding, segmentCommitMode: 'vad' } }),
}).then((r) => r.json());
if (created.code !== 1) throw new Error(created.message);
const session = created.data;
console.log('session', session.sessionId);

const ws = new WebSocket(a.url.replace(/^http/, 'ws') + session.streamUrl, { headers: { accessKey: a.key } });
const frame = (epoch, offset, payload) => {
  const h = Buffer.alloc(16);
  h[0] = 1; // audio
  h[1] = 1; // version
  h.writeUInt32LE(epoch, 4);
  h.writeBigUInt64LE(BigInt(offset), 8);
  return Buffer.concat([h, payload]);
};
ws.on('message', (data) => {
  const ev = JSON.parse(data.toString());
  if (ev.type === 'ready') {
    const step = (rate / 50) * bytesPerSample;
    for (let i = 0, off = 0; i < audio.length; i += step, off += step / bytesPerSample) ws.send(frame(ev.epoch, off, audio.subarray(i, i + step)));
    ws.send(JSON.stringify({ type: 'commit' }));
    ws.send(JSON.stringify({ type: 'close' }));
  } else if (ev.type === 'partial') console.log('partial:', ev.text);
  else if (ev.type === 'final') console.log(`final [${ev.start.ms}-${ev.end.ms} ms]:`, ev.text);
  else if (ev.type !== 'ack') console.log(ev.type, JSON.stringify(ev));
});
ws.on('close', async () => {
  const srt = await fetch(`${api}/stt/transcriptions/${session.transcriptionId}/transcript?format=srt`, { headers: { accessKey: a.key } });
  console.log(`\n${await srt.text()}`);
});
