// Which 8 -> 16 kHz upsampler the telephony recognizer should hear (docs/engines.md,
// "Upsampling telephone audio"): WER of the service's telephony decoder on the mu-law clips of
// an evaluation-set split, each clip upsampled whole by libsamplerate's sinc converters or by
// sox (the CLI baseline's upsampling in bench/density.ts), then decoded in 200 ms calls with a
// partial after each, one utterance per clip from a fresh channel state. Also the decoder's CPU
// per audio second on each input (timed in this process: read it as a ratio within one run).
//
// Run: npx tsx bench/upsampler-accuracy.ts    (BENCH_SPLIT=tune (default) | prompts | testdata;
//      BENCH_UPSAMPLERS=medium,best,fastest,sox (default); about 4 minutes per upsampler on tune)
// The splits are built by scripts/build-eval-set.sh (set-up does it).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import libsamplerate from '@alexanderolsen/libsamplerate-js';
import { wordErrorRate } from '../src/core/wer.js';
import { createPocketsphinx } from '../src/engine/backends/pocketsphinx.js';
import { loadClips, mulawSamples, wavData, type Clip } from '../test/helpers/audio.js';

const { create, ConverterType } = libsamplerate;
const ROOT = path.resolve(import.meta.dirname, '..');
const split = process.env.BENCH_SPLIT ?? 'tune';
const clips = loadClips(path.join(ROOT, 'bench', 'eval-set', split));
const upsamplers = (process.env.BENCH_UPSAMPLERS ?? 'medium,best,fastest,sox').split(',');
const CONVERTERS: Record<string, number> = {
  medium: ConverterType.SRC_SINC_MEDIUM_QUALITY,
  best: ConverterType.SRC_SINC_BEST_QUALITY,
  fastest: ConverterType.SRC_SINC_FASTEST,
};
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-upsampler-'));

async function upsample(clip: Clip, how: string): Promise<Int16Array> {
  if (how === 'sox') {
    const out = path.join(tmp, 'clip.wav');
    execFileSync('sox', ['-D', '-t', 'ul', '-r', '8000', '-c', '1', clip.ulawFile, '-r', '16000', '-b', '16', '-e', 'signed-integer', out], { stdio: 'ignore' });
    const data = wavData(fs.readFileSync(out));
    return new Int16Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.length));
  }
  const type = CONVERTERS[how];
  if (type === undefined) throw new Error(`unknown upsampler ${how} (medium, best, fastest, sox)`);
  const src = await create(1, 8000, 16_000, { converterType: type as 0 });
  try {
    const y = src.full(Float32Array.from(mulawSamples(clip), (x) => x / 32768));
    return Int16Array.from(y, (v) => Math.max(-32768, Math.min(32767, Math.round(v * 32768))));
  } finally {
    src.destroy();
  }
}

console.log(`upsampler-accuracy: ${split} split, ${clips.length} clips, ${clips.reduce((a, c) => a + c.durationSec, 0).toFixed(0)} s of mu-law; load ${os.loadavg()[0]!.toFixed(2)}`);
const decoder = createPocketsphinx({ engine: 'pocketsphinx', profile: 'telephony', assetsDir: path.join(ROOT, 'models', 'telephony') });
console.log('| upsampler | WER | errors / words | decoder CPU per audio s |');
console.log('|---|---|---|---|');
for (const how of upsamplers) {
  let errors = 0;
  let words = 0;
  let cpu = 0;
  let audio = 0;
  for (const clip of clips) {
    const samples = await upsample(clip, how);
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
