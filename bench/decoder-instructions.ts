// Density (issue 13): what the service's decoder costs against the bare recognizer, counted in
// instructions (callgrind) instead of CPU time, so the ratio does not move with the machine's
// load. The same mu-law dev clips, the same search and telephony flags:
//   CLI       Debian's pocketsphinx_continuous -infile on each clip decoded and upsampled to
//             16 kHz by sox (bench/density.ts's baseline), counting only inside the decoder's
//             entry points (ps_start_utt, ps_process_raw, ps_get_hyp, ps_end_utt);
//   service   the service's decoder (src/engine/backends/pocketsphinx.ts) driven as the
//             recognition worker drives it: 200 ms batches with a partial hypothesis after each
//             (SCRIBED_DECODE_BATCH_MS), one utterance per clip ended by endUtterance() (final
//             words with confidences), counting only inside the addon's process() and
//             endUtterance() calls. Two inputs: "sox" (the CLI's very samples) and "resampled"
//             (the mu-law through the worker's own StreamResampler, as the service hears it).
// Printed: instructions per clip set and per audio second, the ratio to the CLI, and the main
// pocketsphinx entry points (inclusive) side by side. Also the StreamResampler's CPU per audio
// second (timed, not counted: it is WASM, outside the addon).
//
// Run: npx tsx bench/decoder-instructions.ts    (about 10 minutes: node under valgrind is slow)
//      BENCH_INPUT=sox for one input only.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createPocketsphinx, DEFAULT_MODEL_DIR, FAST_ARGS } from '../src/engine/backends/pocketsphinx.js';
import { StreamResampler } from '../src/engine/resampler.js';
import { devSetDir, loadClips, mulawSamples, wavData } from '../test/helpers/audio.js';
import { soxUpsample } from './sox-upsample.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const ASSETS = path.join(ROOT, 'models', 'telephony');
const TELEPHONY_FEAT = path.join(ASSETS, 'feat.params');
/** Input samples per batch: SCRIBED_DECODE_BATCH_MS (200) at 8 kHz. */
const BATCH = 1600;
const ENTRY_POINTS = [
  'ps_process_raw',
  'ps_get_hyp',
  'ps_end_utt',
  'ps_lattice_bestpath',
  'ngram_search_lattice',
  'acmod_score',
  'hmm_vit_eval',
];

type Input = 'sox' | 'resampled';

/** Child mode (run under valgrind): decode every clip as the worker does. */
async function child(input: Input, clipDir: string, upsampledDir: string): Promise<void> {
  const clips = loadClips(clipDir);
  const backend = createPocketsphinx({ engine: 'pocketsphinx', profile: 'telephony', assetsDir: ASSETS });
  const resampler = new StreamResampler(8000, 16_000);
  let words = 0;
  for (const clip of clips) {
    backend.resetStream();
    if (input === 'sox') {
      const buf = wavData(fs.readFileSync(path.join(upsampledDir, `${clip.id}.16k.wav`)));
      const samples = new Int16Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length - (buf.length % 2)));
      for (let i = 0; i < samples.length; i += 2 * BATCH) backend.process(samples.subarray(i, i + 2 * BATCH), true);
    } else {
      resampler.reset();
      const pcm = mulawSamples(clip);
      for (let i = 0; i < pcm.length; i += BATCH) backend.process(resampler.push(pcm.subarray(i, i + BATCH)), true);
      const tail = resampler.flush();
      if (tail.length > 0) backend.process(tail, false);
    }
    words += backend.endUtterance().words.length;
  }
  backend.destroy();
  console.log(`words ${words}`);
}

/** Inclusive instructions of each entry point, from a callgrind output file. */
function entryPoints(outFile: string): Map<string, number> {
  const text = execFileSync('callgrind_annotate', ['--inclusive=yes', '--threshold=100', outFile], {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  const found = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^\s*([\d,]+)\s+\([^)]*\)\s+\S*:(\w+)\s/.exec(line);
    if (m && ENTRY_POINTS.includes(m[2]!) && !found.has(m[2]!)) found.set(m[2]!, Number(m[1]!.replaceAll(',', '')));
  }
  return found;
}

function totalOf(outFile: string): number {
  const m = /^totals:\s+(\d+)/m.exec(fs.readFileSync(outFile, 'utf8'));
  if (!m) throw new Error(`no totals in ${outFile}`);
  return Number(m[1]);
}

function callgrind(outFile: string, toggles: string[], command: string, args: string[]): void {
  const r = spawnSync(
    'valgrind',
    [
      '--tool=callgrind',
      `--callgrind-out-file=${outFile}`,
      '--collect-atstart=no',
      ...toggles.map((t) => `--toggle-collect=${t}`),
      command,
      ...args,
    ],
    {
      encoding: 'utf8',
      maxBuffer: 64 << 20,
    },
  );
  if (r.status !== 0) throw new Error(`valgrind ${command} failed (${r.status}): ${r.stderr.slice(-2000)}`);
}

async function parent(): Promise<void> {
  const clipDir = devSetDir();
  const clips = loadClips(clipDir);
  const audioSeconds = clips.reduce((a, c) => a + c.durationSec, 0);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-instructions-'));
  const inputs = (process.env.BENCH_INPUT ?? 'sox,resampled').split(',') as Input[];
  console.log(
    `decoder-instructions: ${clips.length} clips, ${audioSeconds.toFixed(1)} s of mu-law from ${clipDir}; ${spawnSync('valgrind', ['--version'], { encoding: 'utf8' }).stdout.trim()}`,
  );
  for (const clip of clips) {
    soxUpsample(clip.ulawFile, path.join(tmp, `${clip.id}.16k.wav`));
  }

  const M = DEFAULT_MODEL_DIR;
  const cliFlags = [
    '-hmm',
    path.join(M, 'en-us'),
    '-lm',
    path.join(M, 'en-us.lm.bin'),
    '-dict',
    path.join(M, 'cmudict-en-us.dict'),
    '-logfn',
    '/dev/null',
    ...Object.entries(FAST_ARGS).flat(),
    '-remove_noise',
    'no',
    ...(fs.existsSync(TELEPHONY_FEAT) ? ['-featparams', TELEPHONY_FEAT] : []),
  ];
  const rows: Array<{ name: string; total: number; entries: Map<string, number> }> = [];
  let cliTotal = 0;
  const cliEntries = new Map<string, number>();
  for (const clip of clips) {
    const out = path.join(tmp, `cli-${clip.id}.out`);
    callgrind(out, ['ps_start_utt', 'ps_process_raw', 'ps_get_hyp', 'ps_end_utt'], 'pocketsphinx_continuous', [
      '-infile',
      path.join(tmp, `${clip.id}.16k.wav`),
      ...cliFlags,
    ]);
    cliTotal += totalOf(out);
    for (const [k, v] of entryPoints(out)) cliEntries.set(k, (cliEntries.get(k) ?? 0) + v);
  }
  rows.push({ name: 'CLI (sox input)', total: cliTotal, entries: cliEntries });

  for (const input of inputs) {
    const out = path.join(tmp, `service-${input}.out`);
    const started = Date.now();
    callgrind(out, ['*Decoder::Process*', '*Decoder::EndUtterance*'], process.execPath, [
      '--import',
      'tsx',
      import.meta.filename,
      '--child',
      input,
      clipDir,
      tmp,
    ]);
    console.log(`(service, ${input} input: ${((Date.now() - started) / 1000).toFixed(0)} s under valgrind)`);
    rows.push({ name: `service (${input} input)`, total: totalOf(out), entries: entryPoints(out) });
  }

  const g = (x: number) => (x / 1e9).toFixed(2);
  console.log('\n| decoder | instructions | per audio s | vs CLI |');
  console.log('|---|---|---|---|');
  for (const r of rows)
    console.log(`| ${r.name} | ${g(r.total)} G | ${(r.total / audioSeconds / 1e6).toFixed(0)} M | ${(r.total / cliTotal).toFixed(3)}x |`);
  console.log(`\n| entry point (inclusive, G) | ${rows.map((r) => r.name).join(' | ')} |`);
  console.log(`|---|${rows.map(() => '---').join('|')}|`);
  for (const e of ENTRY_POINTS) console.log(`| ${e} | ${rows.map((r) => (r.entries.has(e) ? g(r.entries.get(e)!) : '-')).join(' | ')} |`);

  // The resampler's own CPU (WASM, not in the counts above), timed over repeated passes.
  const resampler = new StreamResampler(8000, 16_000);
  const pcm = clips.map(mulawSamples);
  const reps = 10;
  const t0 = process.cpuUsage();
  for (let rep = 0; rep < reps; rep++) {
    for (const samples of pcm) {
      resampler.reset();
      for (let i = 0; i < samples.length; i += BATCH) resampler.push(samples.subarray(i, i + BATCH));
    }
  }
  const used = process.cpuUsage(t0);
  console.log(
    `\nStreamResampler 8 -> 16 kHz: ${((used.user + used.system) / 1e6 / (audioSeconds * reps)).toFixed(4)} CPU s per audio s (timed, load ${os.loadavg()[0]!.toFixed(2)})`,
  );
  fs.rmSync(tmp, { recursive: true, force: true });
}

const childAt = process.argv.indexOf('--child');
if (childAt >= 0) await child(process.argv[childAt + 1] as Input, process.argv[childAt + 2]!, process.argv[childAt + 3]!);
else await parent();
