// Batch transcription speed and accuracy against a baseline measured in the same run.
//
// Batch: the sample clips, an mp3 and a flac of one of them, all five joined into one 16 kHz
// WAV with 1 s pauses, and the five mu-law clips joined the same way into one 8 kHz mu-law WAV,
// uploaded to a real server one at a time; for each, wall-clock from the upload to COMPLETED
// and the process CPU time (main thread plus decoder worker threads; the short ffmpeg decode
// runs in a child process and is not counted). The server cuts each file at pauses and carries
// the recognizer's channel state from segment to segment (src/batch/runner.ts).
//
// Baseline: the same decoded samples (each clip, each joined file) fed straight into ONE
// recognizer stream of the same engine in the same process (engine.open(), accept() in 20 ms
// chunks, one finish()), CPU measured the same way. Each baseline runs right after its batch
// upload, so both see the same machine load. The mp3/flac rows have no baseline and are left
// out of the ratios. Read the ratios batch/baseline: audio seconds per CPU second (above 1 =
// batch cheaper) and WER (below 1 = batch more accurate).
//
// Last run (2026-11-23, 2 shared cores, load average 6.3-7.4): speed batch 2.68, baseline 2.62
// audio s per CPU s (ratio 1.025); WER on the joined file at 16 kHz batch 25.4%, baseline 29.6%
// (0.857), at 8 kHz mu-law batch 32.4%, baseline 29.6% (1.095). docs/benchmarks.md has more.
//
// Run: npx vite-node bench/batch.ts   (after npm run build, for the native addon)
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startLocalService, tempDir } from '../test/helpers/local-service.js';
import { loadClips } from '../test/helpers/audio.js';
import { convert, joined, rawPcm } from '../test/helpers/speech-fixtures.js';
import { wordErrorRate } from '../src/core/wer.js';

const T = '/sound_clone/api/v1/stt/transcriptions';
const svc = await startLocalService({ maxDecoders: 2 });
const acct = await svc.account(1_000_000n);
const clips = loadClips();
const allRefs = clips.map((c) => c.reference).join(' ');

/** The five mu-law clips joined with 1 s pauses into one 8 kHz mu-law WAV (a telephone recording). */
function joinedMulaw(gapSeconds: number): string {
  const out = path.join(tempDir('scribed-bench-'), 'all-joined-ulaw.wav');
  const filters = clips.map((_, i) => `[${i}:a]apad=pad_dur=${gapSeconds}[a${i}]`).join(';');
  const labels = clips.map((_, i) => `[a${i}]`).join('');
  execFileSync('ffmpeg', [
    '-v',
    'error',
    '-y',
    ...clips.flatMap((c) => ['-f', 'mulaw', '-ar', '8000', '-ac', '1', '-i', c.ulawFile]),
    '-filter_complex',
    `${filters};${labels}concat=n=${clips.length}:v=0:a=1`,
    '-ar',
    '8000',
    '-ac',
    '1',
    '-acodec',
    'pcm_mulaw',
    out,
  ]);
  return out;
}

interface Input {
  name: string;
  file: string;
  ref: string;
  /** Rate the server decodes this file to (8000 for telephone-band sources); null: no baseline. */
  baselineRate: number | null;
}
const inputs: Input[] = [
  ...clips.map((c) => ({ name: `${c.id}.wav`, file: c.wavFile, ref: c.reference, baselineRate: 16_000 })),
  { name: `${clips[2]!.id}.mp3`, file: convert(clips[2]!.wavFile, 'mp3'), ref: clips[2]!.reference, baselineRate: null },
  { name: `${clips[2]!.id}.flac`, file: convert(clips[2]!.wavFile, 'flac'), ref: clips[2]!.reference, baselineRate: null },
  {
    name: 'all-joined.wav (16k)',
    file: joined(
      clips.map((c) => c.wavFile),
      1,
    ),
    ref: allRefs,
    baselineRate: 16_000,
  },
  { name: 'all-joined-ulaw.wav (8k)', file: joinedMulaw(1), ref: allRefs, baselineRate: 8000 },
];

const cpuSince = (c0: NodeJS.CpuUsage) => {
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1e6;
};

async function viaBatch(input: Input): Promise<{ audio: number; wall: number; cpu: number; text: string }> {
  const form = new FormData();
  form.append('file', new Blob([fs.readFileSync(input.file)]), 'upload');
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const res = await fetch(`${svc.baseUrl}${T}`, { method: 'POST', headers: { accessKey: acct.accessKey }, body: form });
  const row = ((await res.json()) as any).data;
  await svc.service.batch.idle();
  const wall = (performance.now() - t0) / 1000;
  const cpu = cpuSince(cpu0);
  const doc = (await (
    await fetch(`${svc.baseUrl}${T}/${row.transcriptionId}/transcript`, { headers: { accessKey: acct.accessKey } })
  ).json()) as any;
  // The recognizer's words (rawText where readableText changed a segment): WER judges recognition.
  const text = doc.segments.map((s: any) => s.rawText ?? s.text).join(' ');
  return { audio: Number(row.audioSamples) / row.sampleRateHz, wall, cpu, text };
}

/** The same samples the server decodes (ffmpeg to s16le at `rate`), through one engine stream. */
async function viaEngine(file: string, rate: number): Promise<{ cpu: number; text: string }> {
  const buf = rawPcm(file, rate);
  const samples = new Int16Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
  const step = rate / 50;
  const cpu0 = process.cpuUsage();
  const stream = await svc.service.engine.open({ inputRate: rate, profile: rate <= 8000 ? 'telephony' : 'wideband' });
  for (let i = 0; i < samples.length; i += step) await stream.accept(samples.subarray(i, i + step));
  const final = await stream.finish();
  await stream.release();
  return { cpu: cpuSince(cpu0), text: final.text };
}

await viaEngine(clips[0]!.wavFile, 16_000); // warm the decoders and the JIT

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
interface Sum {
  audio: number;
  cpu: number;
  errors: number;
  refWords: number;
}
const add = (s: Sum, audio: number, cpu: number, w: { wer: number; refWords: number }) => {
  s.audio += audio;
  s.cpu += cpu;
  s.errors += w.wer * w.refWords;
  s.refWords += w.refWords;
};
const newSum = (): Sum => ({ audio: 0, cpu: 0, errors: 0, refWords: 0 });
const batchAll = newSum();
const batchMatched = newSum();
const baseMatched = newSum();
const joinedWer = new Map<number, { batch: number; base: number }>();
let wallTotal = 0;

console.log(
  `batch: ${clips.length} clips, node ${process.version}, ${os.cpus().length} x ${os.cpus()[0]?.model}, load average ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
console.log(
  'file | audio s | batch wall s | batch CPU s | baseline CPU s | batch audio s/CPU s | baseline audio s/CPU s | ratio | batch WER | baseline WER',
);
for (const input of inputs) {
  const b = await viaBatch(input);
  const bw = wordErrorRate(input.ref, b.text);
  add(batchAll, b.audio, b.cpu, bw);
  wallTotal += b.wall;
  let baseCols: string;
  if (input.baselineRate !== null) {
    const e = await viaEngine(input.file, input.baselineRate);
    const ew = wordErrorRate(input.ref, e.text);
    add(batchMatched, b.audio, b.cpu, bw);
    add(baseMatched, b.audio, e.cpu, ew);
    if (input.ref === allRefs) joinedWer.set(input.baselineRate, { batch: bw.wer, base: ew.wer });
    baseCols = `${e.cpu.toFixed(2)} | ${(b.audio / b.cpu).toFixed(2)} | ${(b.audio / e.cpu).toFixed(2)} | ${(e.cpu / b.cpu).toFixed(2)} | ${pct(bw.wer)} | ${pct(ew.wer)}`;
  } else {
    baseCols = `- | ${(b.audio / b.cpu).toFixed(2)} | - | - | ${pct(bw.wer)} | -`;
  }
  console.log(`${input.name} | ${b.audio.toFixed(2)} | ${b.wall.toFixed(2)} | ${b.cpu.toFixed(2)} | ${baseCols}`);
}
console.log(
  `total (all batch rows) | ${batchAll.audio.toFixed(2)} | ${wallTotal.toFixed(2)} | ${batchAll.cpu.toFixed(2)} | - | ${(batchAll.audio / batchAll.cpu).toFixed(2)} | - | - | - | -`,
);

const bs = batchMatched.audio / batchMatched.cpu;
const es = baseMatched.audio / baseMatched.cpu;
console.log(`\nsummary (rows with a baseline: ${batchMatched.audio.toFixed(1)} s of audio each way)`);
console.log(`  speed: batch ${bs.toFixed(2)} audio s per CPU s, baseline ${es.toFixed(2)}, ratio batch/baseline ${(bs / es).toFixed(3)}`);
const bWer = batchMatched.errors / batchMatched.refWords;
const eWer = baseMatched.errors / baseMatched.refWords;
console.log(`  WER pooled over those rows: batch ${pct(bWer)}, baseline ${pct(eWer)}, ratio batch/baseline ${(bWer / eWer).toFixed(3)}`);
for (const [rate, w] of [...joinedWer].sort((a, b) => b[0] - a[0])) {
  console.log(
    `  WER joined file, ${rate === 8000 ? '8 kHz mu-law (telephony)' : '16 kHz (wideband)'}: batch ${pct(w.batch)}, baseline ${pct(w.base)}, ratio batch/baseline ${(w.batch / w.base).toFixed(3)}`,
  );
}
await svc.stop();
