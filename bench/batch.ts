// Batch transcription speed: the sample clips (and all of them joined into one file with 1 s
// pauses) uploaded to a real server one at a time; for each, wall-clock from the upload to
// COMPLETED and the process CPU time (main thread plus decoder worker threads; the short
// ffmpeg decode runs in a child process and is not counted). Run: npx vite-node bench/batch.ts
import fs from 'node:fs';
import { startService } from '../test/helpers/service.js';
import { loadClips } from '../test/helpers/audio.js';
import { convert, joined } from '../test/helpers/speech-fixtures.js';
import { wordErrorRate } from '../src/core/wer.js';

const T = '/sound_clone/api/v1/stt/transcriptions';
const svc = await startService({ maxDecoders: 2 });
const acct = await svc.account(1_000_000n);
const clips = loadClips();
const inputs = [
  ...clips.map((c) => ({ name: `${c.id}.wav`, file: c.wavFile, ref: c.reference })),
  { name: `${clips[2]!.id}.mp3`, file: convert(clips[2]!.wavFile, 'mp3'), ref: clips[2]!.reference },
  { name: `${clips[2]!.id}.flac`, file: convert(clips[2]!.wavFile, 'flac'), ref: clips[2]!.reference },
  { name: 'all-joined.wav', file: joined(clips.map((c) => c.wavFile), 1), ref: clips.map((c) => c.reference).join(' ') },
];

let audioTotal = 0;
let cpuTotal = 0;
let wallTotal = 0;
console.log('file | audio s | wall s | CPU s | audio s per CPU s | audio s per wall s | WER');
for (const input of inputs) {
  const form = new FormData();
  form.append('file', new Blob([fs.readFileSync(input.file)]), 'upload');
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const res = await fetch(`${svc.baseUrl}${T}`, { method: 'POST', headers: { accessKey: acct.accessKey }, body: form });
  const row = ((await res.json()) as any).data;
  await svc.service.batch.idle();
  const wall = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(cpu0);
  const cpu = (c.user + c.system) / 1e6;
  const audio = Number(row.audioSamples) / row.sampleRateHz;
  const text = ((await (await fetch(`${svc.baseUrl}${T}/${row.transcriptionId}/transcript`, { headers: { accessKey: acct.accessKey } })).json()) as any).text;
  audioTotal += audio;
  cpuTotal += cpu;
  wallTotal += wall;
  console.log(`${input.name} | ${audio.toFixed(2)} | ${wall.toFixed(2)} | ${cpu.toFixed(2)} | ${(audio / cpu).toFixed(2)} | ${(audio / wall).toFixed(2)} | ${(wordErrorRate(input.ref, text).wer * 100).toFixed(1)}%`);
}
console.log(`total | ${audioTotal.toFixed(2)} | ${wallTotal.toFixed(2)} | ${cpuTotal.toFixed(2)} | ${(audioTotal / cpuTotal).toFixed(2)} | ${(audioTotal / wallTotal).toFixed(2)} |`);
await svc.stop();
