// CPU of the redact option per audio second (issue 30 asks at most 2% of recognition).
//
// The words: the samples/ clips' reference transcripts at their real speaking rate (words per
// audio second from their durations), with a spoken card number, an expiry and a phone number
// mixed in every few segments, timed on an even grid. Each segment goes through redactFinal
// with ["pci", "numbers"] and with every policy; printed: CPU per audio second of each, and
// for scale the same segments through shapeFinal (readable text and entities), which batch
// jobs and finals already pay. Recognition itself costs 0.15-0.26 CPU s per audio s on this
// project's machines (the bare pocketsphinx CLI on the dev clips).
//
// The live path (src/session/finals.ts) pays redactFinal once per final and guardPartialText
// once per partial shown. A session sends a partial when the decoded text changed, at most once
// per new word; the bench guards every word prefix of every segment (the upper bound), and
// prints the two together as the live cost.
//
// Run: npx vite-node bench/redaction.ts
import { loadClips } from '../test/helpers/audio.js';
import type { TimelineWord } from '../src/core/final-event.js';
import type { RedactionPolicy } from '../src/core/session-options.js';
import { shapeFinal } from '../src/text/final-text.js';
import { guardPartialText, redactFinal } from '../src/text/redaction/apply.js';
import os from 'node:os';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 200);
const SENSITIVE = [
  'my card is four one one one one one one one one one one one one one one one',
  'it expires twelve twenty six and the code is one two three',
  'call me on four one five five five five one two one two',
];

const clips = loadClips();
const segments: TimelineWord[][] = [];
let audioSec = 0;
for (let r = 0; r < ROUNDS; r++) {
  clips.forEach((clip, i) => {
    const words = `${clip.reference.toLowerCase()}${(r + i) % 3 === 0 ? ` ${SENSITIVE[(r + i) % SENSITIVE.length]}` : ''}`
      .split(/\s+/)
      .filter(Boolean);
    const perWord = Math.round((clip.durationSec * 16_000) / words.length);
    segments.push(
      words.map((word, k) => ({ word, startSample: String(k * perWord), endSample: String(k * perWord + perWord - 1), confidence: 0.9 })),
    );
    audioSec += clip.durationSec;
  });
}

function cpuPerAudioSecond(fn: (words: TimelineWord[]) => unknown): number {
  for (const w of segments.slice(0, 50)) fn(w); // warm-up
  const t0 = process.cpuUsage();
  for (const w of segments) fn(w);
  const used = process.cpuUsage(t0);
  return (used.user + used.system) / 1e6 / audioSec;
}

const text = (w: TimelineWord[]) => w.map((x) => x.word).join(' ');
// Every word prefix of a segment, as the partials of a live session grow (texts made before
// the clock starts: the session has the decoder's partial text already).
const prefixes = new Map<TimelineWord[], string[]>(segments.map((w) => [w, w.map((_, k) => text(w.slice(0, k + 1)))]));
const guardAll = (w: TimelineWord[], policies: RedactionPolicy[]) => {
  for (const p of prefixes.get(w)!) guardPartialText(p, policies);
};
const rows: Array<[string, number]> = [
  ['redact pci+numbers', cpuPerAudioSecond((w) => redactFinal(text(w), w, ['pci', 'numbers']))],
  [
    'redact all five policies',
    cpuPerAudioSecond((w) => redactFinal(text(w), w, ['pci', 'numbers', 'ssn', 'phone', 'email'] as RedactionPolicy[])),
  ],
  ['live partials pci+numbers', cpuPerAudioSecond((w) => guardAll(w, ['pci', 'numbers']))],
  [
    'live final+partials pci+numbers',
    cpuPerAudioSecond((w) => {
      redactFinal(text(w), w, ['pci', 'numbers']);
      guardAll(w, ['pci', 'numbers']);
    }),
  ],
  [
    'shapeFinal readable+entities',
    cpuPerAudioSecond((w) =>
      shapeFinal(text(w), w, { readableText: true, entityCategories: ['credit_card', 'spelled_digits', 'phone_number'] }),
    ),
  ],
];
console.log(
  `${segments.length} segments, ${audioSec.toFixed(0)} audio s; load ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
for (const [name, cpu] of rows)
  console.log(
    `${name.padEnd(30)} ${(cpu * 1000).toFixed(4)} ms CPU per audio s (${((cpu / 0.15) * 100).toFixed(4)}% of 0.15 s recognition)`,
  );
