import { describe, expect, it } from 'vitest';
import { frameEnergies, frameSamples, planFromEnergies, planSegments } from '../../src/batch/segmenter.js';

const RATE = 16_000;

/** Tone bursts ("speech") and silences, with a little noise everywhere. */
function build(parts: Array<['tone' | 'quiet', number]>): Int16Array {
  const total = parts.reduce((n, [, s]) => n + Math.round(s * RATE), 0);
  const out = new Int16Array(total);
  let seed = 1;
  let i = 0;
  for (const [kind, seconds] of parts) {
    const n = Math.round(seconds * RATE);
    for (let k = 0; k < n; k++, i++) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      const noise = (seed % 41) - 20;
      out[i] = kind === 'tone' ? Math.round(8000 * Math.sin((2 * Math.PI * 220 * k) / RATE)) + noise : noise;
    }
  }
  return out;
}

describe('planSegments', () => {
  it('cuts in the middle of pauses, covering the file without gaps', () => {
    const audio = build([
      ['tone', 6],
      ['quiet', 1],
      ['tone', 6],
      ['quiet', 1],
      ['tone', 2],
    ]);
    const plan = planSegments(audio, { rate: RATE, maxSegmentSeconds: 30 });
    expect(plan.map((s) => [s.startSample, s.endSample])).toEqual([
      [0, 6.5 * RATE],
      [6.5 * RATE, 13.5 * RATE],
      [13.5 * RATE, 16 * RATE],
    ]);
  });

  it('passes over pauses that would make a segment shorter than the minimum', () => {
    const audio = build([
      ['tone', 1],
      ['quiet', 0.6],
      ['tone', 1],
      ['quiet', 0.6],
      ['tone', 1],
    ]);
    expect(planSegments(audio, { rate: RATE, maxSegmentSeconds: 30 })).toHaveLength(1);
  });

  it('bounds a monologue without pauses by maxSegmentSeconds', () => {
    const audio = build([['tone', 25]]);
    const plan = planSegments(audio, { rate: RATE, maxSegmentSeconds: 10 });
    expect(plan.length).toBeGreaterThanOrEqual(3);
    for (const s of plan) expect(s.endSample - s.startSample).toBeLessThanOrEqual(10 * RATE);
    expect(plan[plan.length - 1]!.endSample).toBe(audio.length);
  });

  it('flags all-silent segments so they need not be recognized', () => {
    const audio = build([
      ['tone', 6],
      ['quiet', 12],
      ['tone', 6],
    ]);
    const plan = planSegments(audio, { rate: RATE, maxSegmentSeconds: 8 });
    expect(plan.some((s) => s.silent)).toBe(true);
    expect(plan[0]!.silent).toBe(false);
  });

  it('plans the same from energies measured piece by piece (how long files are read)', () => {
    const audio = build([
      ['tone', 7],
      ['quiet', 1],
      ['tone', 9],
      ['quiet', 0.7],
      ['tone', 3.33],
    ]);
    const frame = frameSamples(RATE);
    const piece = frame * 37;
    const energies = new Float64Array(Math.ceil(audio.length / frame));
    for (let s = 0; s < audio.length; s += piece) energies.set(frameEnergies(audio.subarray(s, s + piece), frame), s / frame);
    const opts = { rate: RATE, maxSegmentSeconds: 8 };
    expect(planFromEnergies(energies, audio.length, opts)).toEqual(planSegments(audio, opts));
    expect(planSegments(audio, opts).length).toBeGreaterThan(2);
  });
});

describe('leading silence', () => {
  it('is a silent segment of its own, whatever its length, so the first speech starts about a quarter second after its cut', () => {
    for (const lead of [1, 3, 7.5]) {
      const audio = build([
        ['quiet', lead],
        ['tone', 6],
        ['quiet', 1],
        ['tone', 2],
      ]);
      const plan = planSegments(audio, { rate: RATE, maxSegmentSeconds: 30 });
      expect(plan[0]).toEqual({ index: 0, startSample: 0, endSample: (lead - 0.24) * RATE, silent: true });
      expect(plan[1]!.startSample).toBe((lead - 0.24) * RATE);
      expect(plan[1]!.silent).toBe(false);
      expect(plan[plan.length - 1]!.endSample).toBe(audio.length);
    }
  });

  it('shorter than a pause stays with the first segment', () => {
    const plan = planSegments(
      build([
        ['quiet', 0.3],
        ['tone', 6],
      ]),
      { rate: RATE, maxSegmentSeconds: 30 },
    );
    expect(plan).toHaveLength(1);
    expect(plan[0]!.startSample).toBe(0);
  });
});
