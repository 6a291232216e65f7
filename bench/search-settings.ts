// Search settings (issue 13): word error rate and decoder CPU of pocketsphinx search-flag
// variants on one split, each clip decoded by every variant in turn, so a variant's CPU is
// measured under the same machine load as the others' and the ratio to the first variant holds
// on a noisy machine.
//
// Each variant is a decoder of the service's own backend (src/engine/backends/pocketsphinx.ts:
// the shipped FAST_ARGS, the profile's front end, the shared models) with extra flags on top.
// A clip is one stream: resetStream() (the profile's -cmninit), the clip fed as the recognition
// worker feeds a live session (the addon's resampler for mu-law, 200 ms batches, a partial after
// each), one utterance ended at the clip's end, as a manual commit does. WER: src/core/wer.ts,
// pooled over the split. CPU: this process's user+system time around each decode.
//
// Run: npx tsx bench/search-settings.ts
//   BENCH_SPLIT=tune|prompts|testdata|dev   (default tune: the half settings are chosen on;
//                  prompts is the untouched half: confirm there once, never choose there.
//                  scripts/build-eval-set.sh builds them; this bench runs it)
//   BENCH_ENC=mulaw8k|pcm16k   (default mulaw8k: telephony profile; pcm16k: wideband)
//   BENCH_VARIANTS='{"shipped":{},"wider":{"-pbeam":"1e-48"}}'   (name -> extra flags; the first
//                  is the ratio's baseline)
//   BENCH_PARTS=2  decode the split in this many child processes at once (one per core), each
//                  every PARTS-th clip; figures are pooled.
import { execFileSync, spawn } from 'node:child_process';
import path from 'node:path';
import { wordErrorRate } from '../src/core/wer.js';
import { createPocketsphinx } from '../src/engine/backends/pocketsphinx.js';
import { StreamResampler } from '../src/engine/resampler.js';
import { devSetDir, loadClips, mulawSamples, pcmSamples } from '../test/helpers/audio.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const SPLIT = process.env.BENCH_SPLIT ?? 'tune';
const WIDE = process.env.BENCH_ENC === 'pcm16k';
const PARTS = Math.max(1, Number(process.env.BENCH_PARTS ?? 2));
const VARIANTS: Record<string, Record<string, string>> = JSON.parse(
  process.env.BENCH_VARIANTS ?? '{"shipped":{},"pbeam 1e-48, lpbeam 1e-40 (5prealpha defaults)":{"-pbeam":"1e-48","-lpbeam":"1e-40"}}',
);
const BATCH = (WIDE ? 16000 : 8000) / 5;

interface Row {
  name: string;
  cpuS: number;
  errors: number;
  refWords: number;
}
interface PartResult {
  audioS: number;
  rows: Row[];
}

/** One part: every `parts`-th clip from `part`, each decoded by every variant in turn. */
function decodePart(part: number, parts: number): PartResult {
  const dir = SPLIT === 'dev' ? devSetDir() : path.join(ROOT, 'bench', 'eval-set', SPLIT);
  const clips = loadClips(dir).filter((_, i) => i % parts === part);
  const config = {
    engine: 'pocketsphinx' as const,
    profile: WIDE ? ('wideband' as const) : ('telephony' as const),
    assetsDir: path.join(ROOT, 'models', 'telephony'),
  };
  const decoders = Object.entries(VARIANTS).map(([name, extra]) => ({
    name,
    decoder: createPocketsphinx(config, extra),
    cpuS: 0,
    errors: 0,
    refWords: 0,
  }));
  for (const clip of clips) {
    const input = WIDE ? pcmSamples(clip) : mulawSamples(clip);
    for (const v of decoders) {
      const resampler = new StreamResampler(WIDE ? 16000 : 8000, 16000);
      const t0 = process.cpuUsage();
      v.decoder.resetStream();
      for (let i = 0; i < input.length; i += BATCH) v.decoder.process(resampler.push(input.subarray(i, i + BATCH)), true);
      const tail = resampler.flush();
      if (tail.length > 0) v.decoder.process(tail, false);
      const { text } = v.decoder.endUtterance();
      const t = process.cpuUsage(t0);
      v.cpuS += (t.user + t.system) / 1e6;
      resampler.destroy();
      const w = wordErrorRate(clip.reference, text);
      v.errors += w.substitutions + w.deletions + w.insertions;
      v.refWords += w.refWords;
    }
  }
  for (const v of decoders) v.decoder.destroy();
  return {
    audioS: clips.reduce((a, c) => a + c.durationSec, 0),
    rows: decoders.map(({ name, cpuS, errors, refWords }) => ({ name, cpuS, errors, refWords })),
  };
}

function runPart(part: number): Promise<PartResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', import.meta.filename], {
      env: { ...process.env, BENCH_PART: String(part) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1)!) as PartResult) : reject(new Error(`part ${part} exited ${code}`)),
    );
  });
}

if (process.env.BENCH_PART !== undefined) {
  console.log(JSON.stringify(decodePart(Number(process.env.BENCH_PART), PARTS)));
} else {
  if (SPLIT !== 'dev') execFileSync(path.join(ROOT, 'scripts', 'build-eval-set.sh'), { stdio: 'inherit' });
  const parts = await Promise.all(Array.from({ length: PARTS }, (_, i) => runPart(i)));
  const audioS = parts.reduce((a, p) => a + p.audioS, 0);
  const pooled = Object.keys(VARIANTS).map((name) => {
    const rows = parts.map((p) => p.rows.find((r) => r.name === name)!);
    return {
      name,
      cpuS: rows.reduce((a, r) => a + r.cpuS, 0),
      errors: rows.reduce((a, r) => a + r.errors, 0),
      refWords: rows.reduce((a, r) => a + r.refWords, 0),
    };
  });
  const base = pooled[0]!;
  console.log(
    `search settings: split ${SPLIT}, ${WIDE ? '16 kHz PCM (wideband)' : '8 kHz mu-law (telephony)'}, ${audioS.toFixed(1)} s of audio, ${PARTS} part(s) at once`,
  );
  console.log('| variant | WER | errors / words | CPU / audio s | CPU vs first |');
  console.log('|---|---|---|---|---|');
  for (const r of pooled) {
    console.log(
      `| ${r.name} | ${((100 * r.errors) / r.refWords).toFixed(1)}% | ${r.errors} / ${r.refWords} | ${(r.cpuS / audioS).toFixed(3)} | ${(r.cpuS / base.cpuS).toFixed(3)}x |`,
    );
  }
}
