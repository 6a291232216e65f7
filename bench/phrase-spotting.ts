// Phrase spotting in the audio (pocketsphinx keyphrase search, `-kws`) against matching the
// phrase in the transcript (the large-vocabulary decoder scribed runs), in the same run, on
// the same recordings: recall on the recordings that say the phrase, false alarms per hour on
// those that do not, and the CPU each pass costs per audio second.
//
// Data set: Asterisk's core English prompts (Debian's asterisk-core-sounds-en-wav: Allison
// Smith's studio recordings, 8 kHz, about 21 minutes in the main folder) with their reference
// text (core-sounds-en.txt.gz of asterisk-core-sounds-en). Prompts whose text is a bracketed
// description (tones, beeps) are skipped. The phrases are the word pairs and triples said in
// 3 to 40 prompts, picked by count (stop-word-only ones left out), so both recall and false
// alarms have enough cases; the same list for every pass.
//
// Run: npx tsx bench/phrase-spotting.ts [--thresholds 1e-5,1e-10,...] [--limit N] [--phrases N]
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadAddon, pocketsphinxArgs } from '../src/engine/backends/pocketsphinx.js';

const SOUNDS = '/usr/share/asterisk/sounds/en';
const TEXTS = '/usr/share/doc/asterisk-core-sounds-en/core-sounds-en.txt.gz';
const RATE = 16_000;
const STOP = new Set([
  'the',
  'a',
  'to',
  'of',
  'and',
  'is',
  'you',
  'your',
  'for',
  'or',
  'in',
  'at',
  'be',
  'this',
  'are',
  'it',
  'if',
  'on',
  'not',
  'will',
]);

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : fallback;
}

const DIGITS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];
/** Lower-case words; a prompt's digits ("press 1") as the words the speaker said. */
const words = (text: string) =>
  text
    .toLowerCase()
    .replace(/[0-9]/g, (d) => ` ${DIGITS[Number(d)]} `)
    .replace(/[^a-z' ]+/g, ' ')
    .split(/\s+/)
    .filter(Boolean);
const contains = (ws: string[], phrase: string[]) => ws.some((_, i) => phrase.every((p, k) => ws[i + k] === p));

interface Prompt {
  id: string;
  file: string;
  words: string[];
  seconds: number;
}

function prompts(limit: number): Prompt[] {
  if (!existsSync(TEXTS) || !existsSync(SOUNDS)) throw new Error('needs asterisk-core-sounds-en and asterisk-core-sounds-en-wav (apt)');
  const out: Prompt[] = [];
  for (const line of execFileSync('zcat', [TEXTS], { encoding: 'utf8' }).split('\n')) {
    const m = /^([a-z0-9-]+): (.+)$/.exec(line.trim());
    if (!m || m[2]!.startsWith('[')) continue;
    const file = path.join(SOUNDS, `${m[1]}.wav`);
    if (!existsSync(file)) continue;
    const ws = words(m[2]!);
    if (ws.length === 0) continue;
    const seconds = Number(execFileSync('soxi', ['-D', file], { encoding: 'utf8' }));
    out.push({ id: m[1]!, file, words: ws, seconds });
    if (out.length >= limit) break;
  }
  return out;
}

/** Word pairs and triples said in 3 to 40 prompts, most frequent first, not only stop words;
 * a phrase inside a longer chosen one is kept (they are spotted independently). */
function choosePhrases(ps: Prompt[], n: number): string[][] {
  const count = new Map<string, number>();
  for (const p of ps) {
    const seen = new Set<string>();
    for (const len of [2, 3]) for (let i = 0; i + len <= p.words.length; i++) seen.add(p.words.slice(i, i + len).join(' '));
    for (const g of seen) count.set(g, (count.get(g) ?? 0) + 1);
  }
  return [...count]
    .filter(([g, c]) => c >= 3 && c <= 40 && g.split(' ').some((w) => !STOP.has(w)))
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .slice(0, n)
    .map(([g]) => g.split(' '));
}

function pcm16k(file: string): Int16Array {
  const raw = execFileSync('sox', [file, '-t', 'raw', '-r', String(RATE), '-e', 'signed', '-b', '16', '-c', '1', '-'], {
    maxBuffer: 1 << 28,
  });
  return new Int16Array(raw.buffer, raw.byteOffset, raw.length / 2);
}

interface NativeDecoder {
  process(samples: Int16Array, withHypothesis?: boolean): string | undefined;
  endUtterance(): { text: string; words: Array<{ word: string }> };
  destroy(): void;
}
const addon = loadAddon() as unknown as { Decoder: new (o: Record<string, string>) => NativeDecoder };

function decode(d: NativeDecoder, samples: Int16Array): string[] {
  for (let i = 0; i < samples.length; i += 1600) d.process(samples.subarray(i, i + 1600), false);
  return d.endUtterance().words.map((w) => w.word.trim());
}

function cpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

interface Score {
  pass: string;
  hits: number;
  truths: number;
  falseAlarms: number;
  cpuPerAudioSecond: number;
}

function score(pass: string, ps: Prompt[], phrases: string[][], detected: Array<Set<string>>, cpu: number, audioSeconds: number): Score {
  let hits = 0;
  let truths = 0;
  let falseAlarms = 0;
  ps.forEach((p, i) => {
    for (const ph of phrases) {
      const truth = contains(p.words, ph);
      const found = detected[i]!.has(ph.join(' '));
      if (truth) truths++;
      if (truth && found) hits++;
      if (!truth && found) falseAlarms++;
    }
  });
  return { pass, hits, truths, falseAlarms, cpuPerAudioSecond: cpu / audioSeconds };
}

const ps = prompts(Number(arg('limit', '100000')));
const phrases = choosePhrases(ps, Number(arg('phrases', '16')));
const thresholds = arg('thresholds', '1e-5,1e-10,1e-15,1e-20,1e-25,1e-30').split(',');
const audioSeconds = ps.reduce((a, p) => a + p.seconds, 0);
const audio = ps.map((p) => pcm16k(p.file));
console.log(`data: ${ps.length} prompts, ${(audioSeconds / 60).toFixed(1)} min of audio; phrases (${phrases.length}):`);
console.log(`  ${phrases.map((p) => `"${p.join(' ')}"`).join(', ')}`);

// The decoder settings scribed uses for 8 kHz telephony audio (the telephony profile with the
// feat.params setup builds into models/telephony); the keyphrase search gets the same acoustic
// model and front end.
const { args } = pocketsphinxArgs({
  engine: 'pocketsphinx',
  profile: 'telephony',
  assetsDir: path.resolve(import.meta.dirname, '../models/telephony'),
} as Parameters<typeof pocketsphinxArgs>[0]);
const scores: Score[] = [];

// The transcript, as scribed's decoder hears each prompt, then the phrases matched in it.
const transcriptDecoder = new addon.Decoder(args);
const transcriptStart = cpuSeconds();
const heard = audio
  .map((s) =>
    decode(transcriptDecoder, s)
      .filter((w) => !w.startsWith('<') && !w.startsWith('['))
      .map((w) => w.replace(/\(\d+\)$/, '').toLowerCase()),
  )
  .map((ws) => new Set(phrases.filter((ph) => contains(ws, ph)).map((ph) => ph.join(' '))));
scores.push(score('transcript match', ps, phrases, heard, cpuSeconds() - transcriptStart, audioSeconds));
transcriptDecoder.destroy();

// Keyphrase search: one decoder spotting every phrase, each at the same threshold.
const dir = mkdtempSync(path.join(os.tmpdir(), 'scribed-kws-'));
const kwsBase: Record<string, string> = Object.fromEntries(
  Object.entries(args).filter(([k]) => ['-hmm', '-dict', '-logfn', '-samprate', '-featparams', '-remove_noise'].includes(k)),
);
const byThreshold = new Map<string, Array<Set<string>>>();
for (const th of thresholds) {
  const list = path.join(dir, `kws-${th}.txt`);
  writeFileSync(list, phrases.map((p) => `${p.join(' ')} /${th}/`).join('\n') + '\n');
  const d = new addon.Decoder({ ...kwsBase, '-kws': list });
  const t0 = cpuSeconds();
  const detected = audio.map((s) => new Set(decode(d, s)));
  const cpu = cpuSeconds() - t0;
  d.destroy();
  byThreshold.set(th, detected);
  scores.push(score(`keyphrase search ${th}`, ps, phrases, detected, cpu, audioSeconds));
}
// Either: a phrase counts when the transcript or the keyphrase search finds it.
for (const th of thresholds) {
  const kws = byThreshold.get(th)!;
  const union = heard.map((h, i) => new Set([...h, ...kws[i]!]));
  scores.push(score(`either (transcript or ${th})`, ps, phrases, union, NaN, audioSeconds));
}

const hours = audioSeconds / 3600;
console.log('\npass                               recall        false alarms/hour   CPU s per audio s');
for (const s of scores) {
  console.log(
    `${s.pass.padEnd(34)} ${((100 * s.hits) / s.truths).toFixed(1).padStart(5)}% (${s.hits}/${s.truths})`.padEnd(50) +
      `${(s.falseAlarms / hours).toFixed(0).padStart(6)} (${s.falseAlarms})`.padEnd(20) +
      `${Number.isNaN(s.cpuPerAudioSecond) ? '' : s.cpuPerAudioSecond.toFixed(3)}`,
  );
}
const base = scores[0]!;
for (const s of scores.slice(1, 1 + thresholds.length))
  console.log(`${s.pass}: CPU ratio to the transcript pass ${(s.cpuPerAudioSecond / base.cpuPerAudioSecond).toFixed(2)}`);
