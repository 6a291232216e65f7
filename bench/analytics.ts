// Conversation analytics' cost against recognition's, same run (docs/analytics.md, "Cost").
// Run: npx vite-node bench/analytics.ts [seconds per leg, default 120]
//
// A two-leg call is built from the dev clips (each leg its clips with pauses, the customer's
// shifted so they overlap the agent's now and then), 16 kHz. Each leg is recognized by the real
// pocketsphinx engine in 20 ms frames, an utterance per clip (as a session's segments); its CPU
// is the process's CPU time over the recognition (the engine's worker thread included; its
// start-up and model loading too, so the ratio errs against the analytics).
// The analytics then do what the service does for that call: the intake's level track over
// every sample in the same 20 ms frames; the words stored as JSON and read back (the store keeps
// them so); the figures and ten categories (phrases, RE2 patterns, silence, interruptions, talk
// share, windows, negation). CPU by process.cpuUsage() on this thread (the analytics run on the
// main thread; recognition on the engine's worker). Not counted: the SQL reads and writes of
// the transaction that finishes the call (a few rows; the segments it reads are the call's).
import { createEngine } from '../src/engine/pool.js';
import { LevelTrackBuilder } from '../src/core/analytics/levels.js';
import { validateCreateCategory } from '../src/core/analytics/categories.js';
import type { AnalyticsLeg, AnalyticsSegment } from '../src/core/analytics/characteristics.js';
import { analyseConversation } from '../src/core/analytics/summary.js';
import { checkRulePattern, findRulePattern } from '../src/text/rule-pattern.js';
import { detectEntities } from '../src/text/entities.js';
import type { EntityCategory } from '../src/core/session-options.js';
import { devSetDir, loadClips, pcmSamples } from '../test/helpers/audio.js';

const RATE = 16_000;
const FRAME = RATE / 50;
const legSeconds = Number(process.argv[2] ?? 120);
const clips = loadClips(devSetDir()).map(pcmSamples);

/** A leg of `legSeconds`: clips in turn from `first`, each followed by `pauseMs`, starting at `offsetMs`. */
function buildLeg(first: number, offsetMs: number, pauseMs: number): { samples: Int16Array; utterances: Array<[number, number]> } {
  const samples = new Int16Array(legSeconds * RATE);
  const utterances: Array<[number, number]> = [];
  let at = (offsetMs * RATE) / 1000;
  for (let k = first; at < samples.length; k++) {
    const c = clips[k % clips.length]!;
    const end = Math.min(samples.length, at + c.length + (pauseMs * RATE) / 1000);
    samples.set(c.subarray(0, Math.max(0, Math.min(c.length, samples.length - at))), at);
    utterances.push([at, end]);
    at = end;
  }
  return { samples, utterances };
}

async function recognize(leg: {
  samples: Int16Array;
  utterances: Array<[number, number]>;
}): Promise<{ cpuMs: number; segments: AnalyticsSegment[] }> {
  const engine = createEngine({ engine: 'pocketsphinx', maxDecoders: 1 });
  await engine.start();
  try {
    const s = await engine.open({ inputRate: RATE, profile: 'wideband' });
    let cpuMs = 0;
    const segments: AnalyticsSegment[] = [];
    for (const [from, to] of leg.utterances) {
      for (let i = from; i < to; i += FRAME) cpuMs += (await s.accept(leg.samples.subarray(i, Math.min(to, i + FRAME)))).cpuMs;
      const t0 = performance.now();
      const final = await s.finish();
      cpuMs += performance.now() - t0;
      const ms = (n: number) => Math.floor(((from + n) * 1000) / RATE);
      segments.push({
        startMs: ms(0),
        endMs: ms(to - from),
        text: final.text,
        words: final.words.map((w) => ({ word: w.word, startMs: ms(w.startSample), endMs: ms(w.endSample) })),
      });
    }
    await s.release();
    return { cpuMs, segments };
  } finally {
    await engine.close();
  }
}

const cpuMs = (f: () => void): number => {
  const t = process.cpuUsage();
  f();
  const d = process.cpuUsage(t);
  return (d.user + d.system) / 1000;
};

const agent = buildLeg(0, 0, 1500);
const customer = buildLeg(2, 4000, 2500);
console.log(`call: 2 legs x ${legSeconds} s of dev clips (${devSetDir()})`);
// The process's CPU over recognition (its worker thread included): on a shared machine the
// engine's own per-accept figure counts time its thread waited for a core.
const before = process.cpuUsage();
const [ra, rc] = [await recognize(agent), await recognize(customer)];
const spent = process.cpuUsage(before);
const recognitionMs = (spent.user + spent.system) / 1000;
console.log(
  `recognition CPU: ${(recognitionMs / 1000).toFixed(2)} s process CPU (RTF ${(recognitionMs / 1000 / (2 * legSeconds)).toFixed(3)}); ` +
    `the engine's per-accept figure ${((ra.cpuMs + rc.cpuMs) / 1000).toFixed(2)} s; ${ra.segments.length + rc.segments.length} utterances`,
);

const categories = [
  { name: 'disclosure', conditions: [{ phrases: ['this call may be recorded'], speaker: 'agent', window: { first: 30 }, negate: true }] },
  { name: 'cancel', conditions: [{ phrases: ['cancel my subscription', 'close my account', 'he was not'], speaker: 'customer' }] },
  { name: 'all of', conditions: [{ phrases: ['might', 'amiable', 'dashwood'], match: 'all' }] },
  { name: 'pattern', conditions: [{ pattern: '\\b(refund|money|might)\\b', window: { lastShare: 0.5 } }] },
  { name: 'entity', conditions: [{ entity: 'money' }] },
  { name: 'silence', conditions: [{ silenceSeconds: 5 }] },
  { name: 'interrupts', conditions: [{ interruptions: 2, speaker: 'customer' }] },
  { name: 'talk share', conditions: [{ talkShare: { min: 0.6 }, speaker: 'agent', window: { firstShare: 0.5 } }] },
  {
    name: 'polite',
    conditions: [
      { interruptions: 1, speaker: 'agent', negate: true },
      { phrases: ['thank you'], window: { last: 20 } },
    ],
  },
  { name: 'late pattern', conditions: [{ pattern: 'himself', speaker: 'agent', window: { last: 60 } }] },
].map((c, i) => ({ id: `cat_${i}`, ...validateCreateCategory(c, checkRulePattern) }));
const matchers = {
  pattern: findRulePattern,
  entities: (text: string, category: string) => detectEntities(text, [category as EntityCategory]),
};

// The intake's part: every sample into the level track, in the frames a client sends.
const levels = [agent, customer].map(() => new LevelTrackBuilder(RATE));
const levelMs = cpuMs(() => {
  [agent, customer].forEach((leg, k) => {
    for (let i = 0; i < leg.samples.length; i += FRAME) levels[k]!.add(BigInt(i), leg.samples.subarray(i, i + FRAME));
  });
});

// The finish's part, run ROUNDS times for a readable figure: words read back from their JSON,
// then the figures and the categories.
const stored = [ra.segments, rc.segments].map((segs) => segs.map((s) => ({ ...s, wordsJson: JSON.stringify(s.words) })));
const ROUNDS = 20;
let matched = 0;
const analysisMs =
  cpuMs(() => {
    for (let r = 0; r < ROUNDS; r++) {
      const legs: AnalyticsLeg[] = stored.map((segs, k) => ({
        speaker: k === 0 ? 'agent' : 'customer',
        transcriptionId: `stt_${k}`,
        durationMs: legSeconds * 1000,
        segments: segs.map((s) => ({
          startMs: s.startMs,
          endMs: s.endMs,
          text: s.text,
          words: JSON.parse(s.wordsJson) as AnalyticsSegment['words'],
        })),
        levels: levels[k]!.track(),
      }));
      matched = analyseConversation(legs, categories, matchers).categories.length;
    }
  }) / ROUNDS;

const total = levelMs + analysisMs;
console.log(`level track (intake, both legs): ${levelMs.toFixed(1)} ms CPU`);
console.log(
  `figures + ${categories.length} categories (${matched} matched), words from JSON: ${analysisMs.toFixed(2)} ms CPU (mean of ${ROUNDS})`,
);
console.log(`analytics / recognition CPU: ${((100 * total) / recognitionMs).toFixed(3)}% (goal: under 1%)`);
