// pocketsphinx word confidences on the dev set: every final word carries a posterior
// in [0, 1], the words are the fast search's (computing posteriors changes none), and low
// confidence marks the wrong words: their mean is lower than the right words', and words under
// LOW_CONFIDENCE are wrong far more often than the rest. Prints the figures docs/engines.md
// quotes ("Word confidence").
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normaliseWords } from '../../src/core/wer.js';
import { createPocketsphinx } from '../../src/engine/backends/pocketsphinx.js';
import { createEngine } from '../../src/engine/pool.js';
import { StreamResampler } from '../../src/engine/resampler.js';
import type { AudioProfile, Engine, FinalResult } from '../../src/engine/types.js';
import { devSetDir, loadClips, mulawSamples, pcmSamples } from '../helpers/audio.js';

const clips = loadClips(devSetDir());
const ASSETS = path.resolve('models/telephony');
/** The threshold docs/engines.md documents: a word under it is "low confidence". */
const LOW_CONFIDENCE = 0.5;

/** For each hypothesis word, whether a minimum edit alignment to the reference pairs it with
 * the same reference word (false: substituted or inserted). */
function hypothesisWordsRight(reference: readonly string[], hypothesis: readonly string[]): boolean[] {
  const n = reference.length;
  const m = hypothesis.length;
  const cost = Array.from({ length: n + 1 }, (_, i) => Array.from({ length: m + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  const sub = (i: number, j: number) => (reference[i - 1] === hypothesis[j - 1] ? 0 : 1);
  for (let i = 1; i <= n; i++) {
    for (let j = 1; j <= m; j++) {
      cost[i]![j] = Math.min(cost[i - 1]![j - 1]! + sub(i, j), cost[i - 1]![j]! + 1, cost[i]![j - 1]! + 1);
    }
  }
  const right = new Array<boolean>(m).fill(false);
  let i = n;
  let j = m;
  while (i > 0 && j > 0) {
    if (cost[i]![j] === cost[i - 1]![j - 1]! + sub(i, j)) {
      right[j - 1] = sub(i, j) === 0;
      i--;
      j--;
    } else if (cost[i]![j] === cost[i - 1]![j]! + 1) {
      i--;
    } else {
      j--;
    }
  }
  return right;
}

describe('alignment helper', () => {
  it('marks substituted and inserted hypothesis words, not deleted reference ones', () => {
    expect(hypothesisWordsRight(['a', 'b', 'c', 'd'], ['a', 'x', 'c', 'y', 'd'])).toEqual([true, false, true, false, true]);
    expect(hypothesisWordsRight(['a', 'b', 'c'], ['a', 'c'])).toEqual([true, true]);
    expect(hypothesisWordsRight([], ['a'])).toEqual([false]);
  });
});

async function engineRate(samples: Int16Array, rate: number): Promise<Int16Array> {
  if (rate === 16_000) return samples;
  const r = new StreamResampler(rate, 16_000);
  const head = r.push(samples);
  const tail = r.flush();
  r.destroy();
  const out = new Int16Array(head.length + tail.length);
  out.set(head);
  out.set(tail, head.length);
  return out;
}

describe('pocketsphinx word confidences on the dev set', () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = createEngine({ engine: 'pocketsphinx', maxDecoders: 1, threads: 1, assetsDir: ASSETS });
    await engine.start();
  }, 120_000);
  afterAll(async () => {
    await engine?.close();
  });

  const runs: Array<{ profile: AudioProfile; rate: number; samples: (c: (typeof clips)[number]) => Int16Array }> = [
    { profile: 'wideband', rate: 16_000, samples: pcmSamples },
    { profile: 'telephony', rate: 8000, samples: mulawSamples },
  ];

  it("every final word has a posterior in [0, 1], the words are the fast search's, and low confidence marks the wrong words", async () => {
    const scored: Array<{ confidence: number; right: boolean }> = [];
    // What the posteriors add to ending an utterance (the step between commit and final), on
    // the same decoder settings in this thread: milliseconds with and without them.
    const endMs: { plain: number[]; withConfidence: number[] } = { plain: [], withConfidence: [] };
    for (const run of runs) {
      // The same audio on a decoder that skips the posteriors: the words must not change.
      const plain = createPocketsphinx(
        { engine: 'pocketsphinx', profile: run.profile, assetsDir: ASSETS },
        { '-scribed_confidence': 'no' },
      );
      const withConfidence = createPocketsphinx({ engine: 'pocketsphinx', profile: run.profile, assetsDir: ASSETS });
      try {
        for (const clip of clips) {
          // A stream per clip: both decoders start each clip from the same channel state.
          const s = await engine.open({ inputRate: run.rate, profile: run.profile });
          const samples = run.samples(clip);
          const step = run.rate / 10; // 100 ms (chunking does not change the words)
          for (let i = 0; i < samples.length; i += step) await s.accept(samples.subarray(i, i + step));
          const final: FinalResult = await s.finish();
          await s.release();
          expect(final.words.length).toBeGreaterThan(0);

          const audio = await engineRate(samples, run.rate);
          plain.resetStream();
          plain.process(audio, false);
          let t0 = performance.now();
          const fast = plain.endUtterance();
          endMs.plain.push(performance.now() - t0);
          withConfidence.resetStream();
          withConfidence.process(audio, false);
          t0 = performance.now();
          withConfidence.endUtterance();
          endMs.withConfidence.push(performance.now() - t0);
          expect(fast.words.every((w) => w.confidence === null)).toBe(true);
          expect(final.words.map((w) => w.word)).toEqual(fast.words.map((w) => w.word));

          const right = hypothesisWordsRight(
            normaliseWords(clip.reference),
            final.words.map((w) => w.word),
          );
          final.words.forEach((w, k) => {
            expect(typeof w.confidence).toBe('number');
            expect(w.confidence).toBeGreaterThanOrEqual(0);
            expect(w.confidence).toBeLessThanOrEqual(1);
            scored.push({ confidence: w.confidence!, right: right[k]! });
          });
          console.log(
            `${run.profile} ${clip.id}: ${final.words.map((w, k) => `${w.word}:${w.confidence!.toFixed(2)}${right[k] ? '' : '*'}`).join(' ')}`,
          );
        }
      } finally {
        plain.destroy();
        withConfidence.destroy();
      }
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const rightWords = scored.filter((w) => w.right);
    const wrongWords = scored.filter((w) => !w.right);
    const low = scored.filter((w) => w.confidence < LOW_CONFIDENCE);
    const rest = scored.filter((w) => w.confidence >= LOW_CONFIDENCE);
    const wrongShare = (ws: typeof scored) => ws.filter((w) => !w.right).length / ws.length;
    const figures = {
      words: scored.length,
      right: rightWords.length,
      wrong: wrongWords.length,
      meanRight: mean(rightWords.map((w) => w.confidence)),
      meanWrong: mean(wrongWords.map((w) => w.confidence)),
      low: low.length,
      wrongShareLow: wrongShare(low),
      rest: rest.length,
      wrongShareRest: wrongShare(rest),
    };
    console.log(`word confidence on ${devSetDir()}: ${JSON.stringify(figures)}`);
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    console.log(
      `ending an utterance, ms (median / max of ${endMs.plain.length}): without posteriors ${median(endMs.plain).toFixed(1)} / ${Math.max(...endMs.plain).toFixed(1)}, ` +
        `with ${median(endMs.withConfidence).toFixed(1)} / ${Math.max(...endMs.withConfidence).toFixed(1)}`,
    );
    // Enough of each kind that the comparisons mean something (measured: 137 words, 42 wrong,
    // 50 under 0.5).
    expect(rightWords.length).toBeGreaterThanOrEqual(30);
    expect(wrongWords.length).toBeGreaterThanOrEqual(15);
    expect(low.length).toBeGreaterThanOrEqual(15);
    expect(rest.length).toBeGreaterThanOrEqual(15);
    // Measured 0.75 and 0.31.
    expect(figures.meanWrong).toBeLessThan(figures.meanRight - 0.2);
    // Measured 62% of the words under 0.5 wrong, 13% of the rest.
    expect(figures.wrongShareLow).toBeGreaterThan(figures.wrongShareRest + 0.25);
  }, 240_000);
});

describe('pocketsphinx word confidences without the lattice best path', () => {
  it('with -bestpath no the addon runs the lattice passes itself: every word still has a posterior in [0, 1]', async () => {
    // With -bestpath yes the addon reuses the passes the search ran for its best path; this is
    // the other branch (the search ran none).
    const d = createPocketsphinx({ engine: 'pocketsphinx', profile: 'wideband', assetsDir: ASSETS }, { '-bestpath': 'no' });
    try {
      d.process(pcmSamples(clips[0]!), false);
      const r = d.endUtterance();
      expect(r.words.length).toBeGreaterThan(3);
      for (const w of r.words) {
        expect(typeof w.confidence).toBe('number');
        expect(w.confidence).toBeGreaterThanOrEqual(0);
        expect(w.confidence).toBeLessThanOrEqual(1);
      }
      // Not all zero or all one: the passes ran.
      expect(new Set(r.words.map((w) => w.confidence!.toFixed(3))).size).toBeGreaterThan(1);
    } finally {
      d.destroy();
    }
  });
});
