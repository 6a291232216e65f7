// Engine benchmark: word error rate and real-time factor (decoder CPU time / audio time) of our
// streaming pocketsphinx engine on the dev clips, against Debian's bare pocketsphinx_continuous
// measured in the same run. Run: npx vite-node bench/engine-rtf.ts
//
// Ours: every clip streamed in 20 ms chunks through createEngine().open() on a fresh decoder
// (so live CMN state from one clip does not help the next; the CLI also starts fresh per clip).
// CPU = sum of per-accept decoder time reported by the worker + the finish() round trip.
// Baseline: `pocketsphinx_continuous -infile` with default search settings, CPU time from
// /usr/bin/time minus the CLI's own start-up (model loading, measured on 0.2 s of silence).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { wordErrorRate } from '../src/core/wer.js';
import { createPocketsphinx, DEFAULT_MODEL_DIR, FAST_ARGS } from '../src/engine/backends/pocketsphinx.js';
import { createEngine } from '../src/engine/pool.js';
import type { AudioProfile } from '../src/engine/types.js';
import { devSetDir, loadClips, mulawSamples, pcmSamples, type Clip } from '../test/helpers/audio.js';
import { soxUpsample } from './sox-upsample.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TELEPHONY_ASSETS = path.join(ROOT, 'models', 'telephony');
const TELEPHONY_FEAT = path.join(TELEPHONY_ASSETS, 'feat.params');
const DEV_DIR = devSetDir();
const clips = loadClips(DEV_DIR);
console.log(`clips: ${DEV_DIR} (${clips.length})`);
const tmp = mkdtempSync(path.join(os.tmpdir(), 'scribed-bench-'));
const emptyAssets = path.join(tmp, 'no-assets');
mkdirSync(emptyAssets);

interface Row {
  wer: number;
  errors: number;
  refWords: number;
  cpuSec: number;
  audioSec: number;
}
const addRow = (a: Row, b: Row): Row => ({
  wer: (a.errors + b.errors) / (a.refWords + b.refWords),
  errors: a.errors + b.errors,
  refWords: a.refWords + b.refWords,
  cpuSec: a.cpuSec + b.cpuSec,
  audioSec: a.audioSec + b.audioSec,
});
const zero: Row = { wer: 0, errors: 0, refWords: 0, cpuSec: 0, audioSec: 0 };

interface Variant {
  name: string;
  encoding: 'wav' | 'ulaw';
  profile: AudioProfile;
  assetsDir: string;
  /** CLI flags reproducing the same front end for the baseline. */
  cliExtra: string[];
}

const variants: Variant[] = [
  { name: 'wav 16k / wideband', encoding: 'wav', profile: 'wideband', assetsDir: emptyAssets, cliExtra: [] },
  {
    name: 'ulaw 8k / telephony, stock feat.params',
    encoding: 'ulaw',
    profile: 'telephony',
    assetsDir: emptyAssets,
    cliExtra: ['-remove_noise', 'no'],
  },
];
if (existsSync(TELEPHONY_FEAT)) {
  variants.push({
    name: 'ulaw 8k / telephony, telephony feat.params',
    encoding: 'ulaw',
    profile: 'telephony',
    assetsDir: TELEPHONY_ASSETS,
    cliExtra: ['-remove_noise', 'no', '-featparams', TELEPHONY_FEAT],
  });
} else {
  console.log(`(no ${TELEPHONY_FEAT}: run scripts/build-telephony-model.sh to bench the CMN fix)`);
}

function load(clip: Clip, enc: 'wav' | 'ulaw'): { rate: number; samples: Int16Array } {
  return enc === 'wav' ? { rate: 16_000, samples: pcmSamples(clip) } : { rate: 8000, samples: mulawSamples(clip) };
}

/** 16 kHz wav for the CLI (mu-law is decoded and upsampled by sox, as a telephony gateway would). */
function cliInput(clip: Clip, enc: 'wav' | 'ulaw'): string {
  if (enc === 'wav') return clip.wavFile;
  const out = path.join(tmp, `${clip.id}.16k.wav`);
  if (!existsSync(out)) {
    soxUpsample(clip.ulawFile, out);
  }
  return out;
}

async function ours(v: Variant, clip: Clip): Promise<Row & { text: string }> {
  const engine = createEngine({ engine: 'pocketsphinx', maxDecoders: 1, assetsDir: v.assetsDir });
  await engine.start();
  try {
    const { rate, samples } = load(clip, v.encoding);
    const s = await engine.open({ inputRate: rate, profile: v.profile });
    const step = rate / 50;
    let cpuMs = 0;
    for (let i = 0; i < samples.length; i += step) cpuMs += (await s.accept(samples.subarray(i, i + step))).cpuMs;
    const t0 = performance.now();
    const final = await s.finish();
    cpuMs += performance.now() - t0;
    await s.release();
    const w = wordErrorRate(clip.reference, final.text);
    return {
      text: final.text,
      wer: w.wer,
      errors: w.wer * w.refWords,
      refWords: w.refWords,
      cpuSec: cpuMs / 1000,
      audioSec: samples.length / rate,
    };
  } finally {
    await engine.close();
  }
}

/** Production-like: one warm decoder serving the clips one stream after another. */
async function oursWarm(v: Variant): Promise<Row> {
  const engine = createEngine({ engine: 'pocketsphinx', maxDecoders: 1, assetsDir: v.assetsDir });
  await engine.start();
  let row = zero;
  try {
    for (const clip of clips) {
      const { rate, samples } = load(clip, v.encoding);
      const s = await engine.open({ inputRate: rate, profile: v.profile });
      let cpuMs = 0;
      for (let i = 0; i < samples.length; i += rate / 50) cpuMs += (await s.accept(samples.subarray(i, i + rate / 50))).cpuMs;
      const t0 = performance.now();
      const final = await s.finish();
      cpuMs += performance.now() - t0;
      await s.release();
      const w = wordErrorRate(clip.reference, final.text);
      row = addRow(row, {
        wer: w.wer,
        errors: w.wer * w.refWords,
        refWords: w.refWords,
        cpuSec: cpuMs / 1000,
        audioSec: samples.length / rate,
      });
    }
  } finally {
    await engine.close();
  }
  return row;
}

const M = DEFAULT_MODEL_DIR;
const cliBase = [
  '-hmm',
  path.join(M, 'en-us'),
  '-lm',
  path.join(M, 'en-us.lm.bin'),
  '-dict',
  path.join(M, 'cmudict-en-us.dict'),
  '-logfn',
  '/dev/null',
];

function runCli(file: string, extra: string[]): { text: string; cpuSec: number } {
  const r = spawnSync('/usr/bin/time', ['-f', '%U %S', 'pocketsphinx_continuous', '-infile', file, ...cliBase, ...extra], {
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`pocketsphinx_continuous failed: ${r.stderr}`);
  const times = r.stderr.trim().split('\n').at(-1)!.split(' ').map(Number);
  return { text: r.stdout.trim().split('\n').join(' '), cpuSec: times[0]! + times[1]! };
}

const silence = path.join(tmp, 'silence.wav');
execFileSync('sox', ['-n', '-r', '16000', '-b', '16', '-c', '1', silence, 'trim', '0', '0.2']);
function cliStartup(extra: string[]): number {
  const t = [0, 1, 2].map(() => runCli(silence, extra).cpuSec).sort((a, b) => a - b);
  return t[1]!;
}

function baseline(v: Variant, clip: Clip, startup: number): Row & { text: string } {
  const { text, cpuSec } = runCli(cliInput(clip, v.encoding), v.cliExtra);
  const w = wordErrorRate(clip.reference, text);
  return {
    text,
    wer: w.wer,
    errors: w.wer * w.refWords,
    refWords: w.refWords,
    cpuSec: Math.max(0, cpuSec - startup),
    audioSec: clip.durationSec,
  };
}

const pct = (x: number) => `${(100 * x).toFixed(1)}%`.padStart(6);
const f3 = (x: number) => x.toFixed(3);

console.log(`dev clips: ${clips.length} (${clips.reduce((a, c) => a + c.durationSec, 0).toFixed(1)} s), ${os.cpus().length} CPU(s)\n`);
const summary: string[] = [];
for (const v of variants) {
  console.log(`== ${v.name}`);
  const startup = cliStartup(v.cliExtra);
  let o = zero;
  let b = zero;
  for (const clip of clips) {
    const r = await ours(v, clip);
    const c = baseline(v, clip, startup);
    o = addRow(o, r);
    b = addRow(b, c);
    console.log(
      `  ${clip.id}  ours WER ${pct(r.wer)} RTF ${f3(r.cpuSec / r.audioSec)} | CLI WER ${pct(c.wer)} RTF ${f3(c.cpuSec / c.audioSec)} | RTF ratio ${f3(r.cpuSec / r.audioSec / (c.cpuSec / c.audioSec))}`,
    );
    console.log(`      ours: ${r.text}\n      cli:  ${c.text}`);
  }
  const warm = await oursWarm(v);
  console.log(
    `  ours on one warm decoder, one stream per clip in sequence (CMN reset per stream): WER ${pct(warm.wer)} RTF ${f3(warm.cpuSec / warm.audioSec)}`,
  );
  const line = `${v.name.padEnd(44)} ours WER ${pct(o.wer)} RTF ${f3(o.cpuSec / o.audioSec)} | CLI WER ${pct(b.wer)} RTF ${f3(b.cpuSec / b.audioSec)} | RTF ours/CLI ${f3(o.cpuSec / o.audioSec / (b.cpuSec / b.audioSec))}`;
  console.log(`  total: ${line}  (CLI start-up ${startup.toFixed(2)} s subtracted)\n`);
  summary.push(line);
}

// Search settings: the shipped fast settings against the same without the HMM cap, in-process.
console.log('== search settings (in-process decoder, 20 ms chunks, fresh decoder per clip, CMN reset as on open)');
const settingVariants: Array<[string, Record<string, string>]> = [
  ['shipped: -fwdflat no -bestpath yes -maxhmmpf 6000', {}],
  ['fast without the lattice pass (-bestpath no)', { '-bestpath': 'no' }],
  ['fast with -maxhmmpf 3000', { '-maxhmmpf': '3000' }],
  ['fast without -maxhmmpf cap (30000)', { '-maxhmmpf': '30000' }],
  ['pocketsphinx defaults (fwdflat, bestpath)', { '-fwdflat': 'yes', '-bestpath': 'yes', '-maxhmmpf': '30000' }],
];
const { StreamResampler } = await import('../src/engine/resampler.js');
for (const v of variants) {
  for (const [label, extra] of settingVariants) {
    let row = zero;
    for (const clip of clips) {
      const be = createPocketsphinx({ engine: 'pocketsphinx', profile: v.profile, assetsDir: v.assetsDir }, extra);
      be.resetStream(); // as the worker does on every open
      const { rate, samples } = load(clip, v.encoding);
      const rs = new StreamResampler(rate, 16_000);
      const step = rate / 50;
      const t0 = process.cpuUsage();
      for (let i = 0; i < samples.length; i += step) be.process(rs.push(samples.subarray(i, i + step)));
      be.process(rs.flush());
      const r = be.endUtterance();
      const u = process.cpuUsage(t0);
      be.destroy();
      rs.destroy();
      const w = wordErrorRate(clip.reference, r.text);
      row = addRow(row, {
        wer: w.wer,
        errors: w.wer * w.refWords,
        refWords: w.refWords,
        cpuSec: (u.user + u.system) / 1e6,
        audioSec: samples.length / rate,
      });
    }
    console.log(`  ${v.name.padEnd(44)} ${label.padEnd(58)} WER ${pct(row.wer)} RTF ${f3(row.cpuSec / row.audioSec)}`);
  }
}
console.log(`  shipped search flags: ${Object.entries(FAST_ARGS).flat().join(' ')}`);

console.log('\n== summary');
for (const l of summary) console.log(l);
rmSync(tmp, { recursive: true, force: true });
