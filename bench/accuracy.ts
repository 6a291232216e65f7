// Accuracy benchmark (issue 16): word error rate of scribed's streaming path against Debian's
// bare pocketsphinx_continuous on the same clips in the same run, on the development set (the
// split settings were tuned on) and on the evaluation set nobody tunes on
// (scripts/build-eval-set.sh), each at 16 kHz PCM and as 8 kHz mu-law.
//
// Ours: a real `scribed serve` (this checkout's dist/cli.js, or BENCH_CLI) on a fresh data dir;
// per clip one live session (inputEncoding pcm_s16le_16000 or mulaw_8000), the clip sent in
// 20 ms frames as fast as the socket takes them, a manual `commit` at the clip's end, the
// recognizer's words of the final(s) (`rawText`, else `text`) scored against the reference.
// BENCH_BEFORE_CLI=<other checkout>/dist/cli.js runs another build on the same clips as well
// (before/after in one run); BENCH_BEFORE_ENV="K=V,K=V" sets environment for that build only,
// e.g. BENCH_BEFORE_CLI=dist/cli.js BENCH_BEFORE_ENV=SCRIBED_POCKETSPHINX_ADAPTED=0 measures
// this build without the adapted telephony model.
// Baseline: `pocketsphinx_continuous -infile` on the same clips (mu-law upsampled to 16 kHz WAV
// by sox), the same model, with the settings docs/engines.md and the team's engine notes
// describe: default two-pass search; for mu-law `-remove_noise no` and the telephony
// feat.params (models/telephony, set-up builds it). A second CLI column runs the CLI with the
// service's search flags too (FAST_ARGS), which separates what the search costs from what the
// streaming path costs.
// WER: src/core/wer.ts, pooled over a split (errors / reference words).
//
// Run: npx vite-node bench/accuracy.ts   (after npm run build or npx tsc -p tsconfig.json)
//   BENCH_PROMPTS_EVERY=N  every Nth Asterisk prompt of a half (default 2: about 120 clips, 4
//                          minutes of audio; 1 = all 239, about 8 minutes of audio)
//   BENCH_SPLITS=dev,testdata,prompts   which splits; `tune` is the other half of the prompts,
//                          the split settings are chosen on (never reported as accuracy)
import { execFile, execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { promisify } from 'node:util';
import { wordErrorRate } from '../src/core/wer.js';
import { DEFAULT_MODEL_DIR, FAST_ARGS } from '../src/engine/backends/pocketsphinx.js';
import { chunks, devSetDir, loadClips, type Clip } from '../test/helpers/audio.js';
import { freePort } from '../test/helpers/serve-process.js';
import { StreamClient, type StreamEvent } from '../test/helpers/stream-client.js';
import { soxUpsample } from './sox-upsample.js';

const execFileAsync = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..');
const SESSIONS = '/sound_clone/api/v1/stt/realtime/sessions';
const TELEPHONY_FEAT = path.join(ROOT, 'models', 'telephony', 'feat.params');
const EVAL_DIR = path.join(ROOT, 'bench', 'eval-set');
const PROMPTS_EVERY = Math.max(1, Number(process.env.BENCH_PROMPTS_EVERY ?? 2));
const SPLITS = (process.env.BENCH_SPLITS ?? 'dev,testdata,prompts').split(',');
const CLI_NOW = process.env.BENCH_CLI ?? path.join(ROOT, 'dist', 'cli.js');
const CLI_BEFORE = process.env.BENCH_BEFORE_CLI;
const ENV_BEFORE: Record<string, string> = Object.fromEntries(
  (process.env.BENCH_BEFORE_ENV ?? '')
    .split(',')
    .filter(Boolean)
    .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
);
const PARALLEL = 2;

if (!fs.existsSync(CLI_NOW)) throw new Error(`${CLI_NOW} missing: npx tsc -p tsconfig.json first`);
if (!fs.existsSync(TELEPHONY_FEAT)) throw new Error(`${TELEPHONY_FEAT} missing: scripts/build-telephony-model.sh`);
execFileSync(path.join(ROOT, 'scripts', 'build-eval-set.sh'), { stdio: 'inherit' });

interface Split {
  name: string;
  tuned: string;
  clips: Clip[];
}
const allSplits: Split[] = [
  { name: 'dev', tuned: 'tuning split', clips: loadClips(devSetDir()) },
  { name: 'testdata', tuned: 'untouched', clips: loadClips(path.join(EVAL_DIR, 'testdata')) },
  {
    name: 'prompts',
    tuned: 'untouched (mu-law: -cmninit is their mean)',
    clips: loadClips(path.join(EVAL_DIR, 'prompts')).filter((_, i) => i % PROMPTS_EVERY === 0),
  },
  {
    name: 'tune',
    tuned: 'tuning split (adaptation data)',
    clips: loadClips(path.join(EVAL_DIR, 'tune')).filter((_, i) => i % PROMPTS_EVERY === 0),
  },
];
const splits = allSplits.filter((s) => SPLITS.includes(s.name));
type Encoding = 'pcm16k' | 'mulaw8k';
const encodings: Encoding[] = ['pcm16k', 'mulaw8k'];

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-accuracy-'));

/** Run `fn` over `items`, `n` at a time, results in order. */
async function pool<T, R>(items: T[], n: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

// ---- ours: a real server process ----
interface Server {
  base: string;
  accessKey: string;
  stop(): Promise<void>;
}

async function startServer(cli: string, env: Record<string, string>): Promise<Server> {
  const dataDir = fs.mkdtempSync(path.join(tmp, 'serve-'));
  const { stdout } = await execFileAsync(
    process.execPath,
    [cli, 'accounts', 'create', '--name', 'bench', '--characters', '100000000', '--json', '--data-dir', dataDir],
    { encoding: 'utf8' },
  );
  const accessKey = (JSON.parse(stdout) as { accessKey: string }).accessKey;
  const port = await freePort();
  const proc = spawn(
    process.execPath,
    [cli, 'serve', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir, '--max-decoders', String(PARALLEL)],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, SCRIBED_LOG_LEVEL: 'info', SCRIBED_MAX_STREAMS_PER_ACCOUNT: '0', ...env },
    },
  );
  const errs: string[] = [];
  readline.createInterface({ input: proc.stderr! }).on('line', (l) => errs.push(l));
  await new Promise<void>((resolve, reject) => {
    readline.createInterface({ input: proc.stdout! }).on('line', (line) => {
      if (line.includes('"scribed listening"')) resolve();
    });
    proc.once('exit', (code, signal) => reject(new Error(`serve exited (${code ?? signal}): ${errs.slice(-20).join('\n')}`)));
  });
  return {
    base: `http://127.0.0.1:${port}`,
    accessKey,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        const exited = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGTERM');
        await exited;
      }
    },
  };
}

/** One clip through a live session: 20 ms frames, commit at the end, the recognizer's words. */
async function viaService(server: Server, clip: Clip, enc: Encoding): Promise<string> {
  const inputEncoding = enc === 'pcm16k' ? 'pcm_s16le_16000' : 'mulaw_8000';
  const res = await fetch(`${server.base}${SESSIONS}`, {
    method: 'POST',
    headers: { accessKey: server.accessKey, 'content-type': 'application/json', 'Idempotency-Key': `acc-${randomUUID()}` },
    body: JSON.stringify({ title: `accuracy ${clip.id}`, options: { inputEncoding } }),
  });
  const created = (await res.json()) as { data: { streamUrl: string } };
  if (res.status !== 200) throw new Error(`create session: ${res.status} ${JSON.stringify(created)}`);
  const client = await StreamClient.connect(`${server.base.replace(/^http/, 'ws')}${created.data.streamUrl}`, {
    accessKey: server.accessKey,
  });
  await client.next('ready');
  const [payload, bytesPerSample, rate] = enc === 'pcm16k' ? [clip.pcm16k, 2, 16_000] : [clip.mulaw8k, 1, 8000];
  let offset = 0;
  for (const c of chunks(payload, bytesPerSample, rate / 50)) {
    client.audio(1, offset, c);
    offset += c.length / bytesPerSample;
  }
  await client.next('ack', (e) => e.sampleOffset === offset, 120_000);
  client.control({ type: 'commit' });
  await client.next('committed', () => true, 120_000);
  const text = client
    .ofType('final')
    .map((f: StreamEvent) => (f.rawText ?? f.text) as string)
    .join(' ');
  client.control({ type: 'close' });
  await client.next('closed', () => true, 60_000);
  return text;
}

// ---- baseline: the bare CLI ----
const M = DEFAULT_MODEL_DIR;
const cliModel = [
  '-hmm',
  path.join(M, 'en-us'),
  '-lm',
  path.join(M, 'en-us.lm.bin'),
  '-dict',
  path.join(M, 'cmudict-en-us.dict'),
  '-logfn',
  '/dev/null',
];
const frontEnd = (enc: Encoding) => (enc === 'pcm16k' ? [] : ['-remove_noise', 'no', '-featparams', TELEPHONY_FEAT]);
const fastSearch = Object.entries(FAST_ARGS).flat();

function cliInput(clip: Clip, enc: Encoding): string {
  if (enc === 'pcm16k') return clip.wavFile;
  const out = path.join(tmp, `${clip.id}.ulaw16k.wav`);
  if (!fs.existsSync(out)) {
    soxUpsample(clip.ulawFile, out);
  }
  return out;
}

async function viaCli(clip: Clip, enc: Encoding, extra: string[]): Promise<string> {
  const { stdout } = await execFileAsync(
    'pocketsphinx_continuous',
    ['-infile', cliInput(clip, enc), ...cliModel, ...frontEnd(enc), ...extra],
    { encoding: 'utf8', maxBuffer: 1 << 24 },
  );
  return stdout.trim().split('\n').join(' ');
}

// ---- scoring ----
interface Score {
  errors: number;
  words: number;
}
function score(clips: Clip[], texts: string[]): Score {
  let errors = 0;
  let words = 0;
  clips.forEach((c, i) => {
    const w = wordErrorRate(c.reference, texts[i]!);
    errors += Math.round(w.wer * w.refWords);
    words += w.refWords;
  });
  return { errors, words };
}
const wer = (s: Score) => s.errors / s.words;
const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

interface Row {
  split: Split;
  enc: Encoding;
  systems: Map<string, { score: Score; texts: string[] }>;
}

console.log(
  `accuracy: node ${process.version}, ${os.cpus().length} x ${os.cpus()[0]?.model}, load ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
for (const s of splits) {
  const secs = s.clips.reduce((a, c) => a + c.durationSec, 0);
  const words = s.clips.reduce((a, c) => a + wordErrorRate(c.reference, '').refWords, 0);
  console.log(`  ${s.name} (${s.tuned}): ${s.clips.length} clips, ${words} words, ${secs.toFixed(1)} s`);
}
if (splits.some((s) => s.name === 'prompts')) console.log(`  prompts: every ${PROMPTS_EVERY}. of the 239 of a half (BENCH_PROMPTS_EVERY)`);

const builds: Array<[string, string, Record<string, string>]> = [['ours', CLI_NOW, {}]];
if (CLI_BEFORE) builds.unshift(['before', CLI_BEFORE, ENV_BEFORE]);

const rows: Row[] = [];
for (const split of splits) for (const enc of encodings) rows.push({ split, enc, systems: new Map() });

for (const [label, cli, env] of builds) {
  const server = await startServer(cli, env);
  try {
    await viaService(server, allSplits[0]!.clips[0]!, 'pcm16k'); // loads the decoders
    for (const row of rows) {
      const t0 = performance.now();
      const texts = await pool(row.split.clips, PARALLEL, (c) => viaService(server, c, row.enc));
      row.systems.set(label, { score: score(row.split.clips, texts), texts });
      console.log(
        `  ${label.padEnd(8)} ${row.split.name.padEnd(9)} ${row.enc}: WER ${pct(wer(row.systems.get(label)!.score))} (${((performance.now() - t0) / 1000).toFixed(0)} s)`,
      );
    }
  } finally {
    await server.stop();
  }
}
for (const row of rows) {
  for (const [label, extra] of [
    ['CLI', []],
    ['CLI fast', fastSearch],
  ] as Array<[string, string[]]>) {
    const texts = await pool(row.split.clips, PARALLEL, (c) => viaCli(c, row.enc, extra));
    row.systems.set(label, { score: score(row.split.clips, texts), texts });
    console.log(`  ${label.padEnd(8)} ${row.split.name.padEnd(9)} ${row.enc}: WER ${pct(wer(row.systems.get(label)!.score))}`);
  }
}

// Per-clip texts where ours and the CLI differ most, for reading the errors.
if (process.env.BENCH_VERBOSE) {
  for (const row of rows) {
    row.split.clips.forEach((c, i) => {
      console.log(`${row.split.name} ${row.enc} ${c.id}\n  ref:  ${c.reference}`);
      for (const [label, sys] of row.systems) console.log(`  ${label.padEnd(8)} ${sys.texts[i]}`);
    });
  }
}

console.log(
  '\nsplit | tuned on | encoding | words | ' +
    [...rows[0]!.systems.keys()].map((k) => `${k} WER`).join(' | ') +
    ' | ours/CLI | ours/CLI fast',
);
for (const row of rows) {
  const get = (k: string) => row.systems.get(k)!.score;
  const cols = [...row.systems.keys()].map((k) => pct(wer(get(k))));
  console.log(
    `${row.split.name} | ${row.split.tuned} | ${row.enc} | ${get('ours').words} | ${cols.join(' | ')} | ${(wer(get('ours')) / wer(get('CLI'))).toFixed(2)} | ${(wer(get('ours')) / wer(get('CLI fast'))).toFixed(2)}`,
  );
}
fs.rmSync(tmp, { recursive: true, force: true });
