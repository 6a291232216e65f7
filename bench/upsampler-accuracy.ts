// Which 8 -> 16 kHz upsampler the telephony recognizer should hear (docs/engines.md,
// "Upsampling telephone audio"): WER of the service's telephony decoder on the mu-law clips of
// an evaluation-set split, each clip upsampled by the service's converter (StreamResampler, in
// 20 ms pushes as a stream feeds it) or by sox (the CLI baseline's upsampling in
// bench/density.ts), then decoded in 200 ms calls with a
// partial after each, one utterance per clip from a fresh channel state. Also the decoder's CPU
// per audio second on each input (timed in this process: read it as a ratio within one run).
//
// Run: npx tsx bench/upsampler-accuracy.ts    (BENCH_SPLIT=tune (default) | prompts | testdata;
//      BENCH_UPSAMPLERS=service,sox (default); about 4 minutes per upsampler on tune)
// The libsamplerate converters the service used before (medium, best, fastest) were measured
// with this bench's earlier version; their figures are in docs/engines.md.
// The splits are built by scripts/build-eval-set.sh (set-up does it).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { wordErrorRate } from '../src/core/wer.js';
import { createPocketsphinx } from '../src/engine/backends/pocketsphinx.js';
import { StreamResampler } from '../src/engine/resampler.js';
import { loadClips, mulawSamples, wavData, type Clip } from '../test/helpers/audio.js';
import { concat } from '../test/helpers/live.js';
import { soxUpsample } from './sox-upsample.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const split = process.env.BENCH_SPLIT ?? 'tune';
const clips = loadClips(path.join(ROOT, 'bench', 'eval-set', split));
const upsamplers = (process.env.BENCH_UPSAMPLERS ?? 'service,sox').split(',');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-upsampler-'));

function upsample(clip: Clip, how: string): Int16Array {
  if (how === 'sox') {
    const out = path.join(tmp, 'clip.wav');
    soxUpsample(clip.ulawFile, out);
    const data = wavData(fs.readFileSync(out));
    return new Int16Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.length));
  }
  if (how !== 'service') throw new Error(`unknown upsampler ${how} (service, sox)`);
  const resampler = new StreamResampler(8000, 16_000);
  const x = mulawSamples(clip);
  const parts: Int16Array[] = [];
  for (let i = 0; i < x.length; i += 160) parts.push(resampler.push(x.subarray(i, i + 160)));
  parts.push(resampler.flush());
  resampler.destroy();
  return concat(parts);
}

console.log(
  `upsampler-accuracy: ${split} split, ${clips.length} clips, ${clips.reduce((a, c) => a + c.durationSec, 0).toFixed(0)} s of mu-law; load ${os.loadavg()[0]!.toFixed(2)}`,
);
const decoder = createPocketsphinx({ engine: 'pocketsphinx', profile: 'telephony', assetsDir: path.join(ROOT, 'models', 'telephony') });
console.log('| upsampler | WER | errors / words | decoder CPU per audio s |');
console.log('|---|---|---|---|');
for (const how of upsamplers) {
  let errors = 0;
  let words = 0;
  let cpu = 0;
  let audio = 0;
  for (const clip of clips) {
    const samples = upsample(clip, how);
    decoder.resetStream();
    const t0 = process.cpuUsage();
    for (let i = 0; i < samples.length; i += 3200) decoder.process(samples.subarray(i, i + 3200), true);
    const text = decoder.endUtterance().text;
    const used = process.cpuUsage(t0);
    cpu += (used.user + used.system) / 1e6;
    audio += clip.durationSec;
    const w = wordErrorRate(clip.reference, text);
    errors += w.substitutions + w.deletions + w.insertions;
    words += w.refWords;
  }
  console.log(`| ${how} | ${((100 * errors) / words).toFixed(1)}% | ${errors} / ${words} | ${(cpu / audio).toFixed(3)} |`);
}
decoder.destroy();
fs.rmSync(tmp, { recursive: true, force: true });
