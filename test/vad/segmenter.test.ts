import { describe, expect, it } from 'vitest';
import { VadSegmenter, type SegmenterConfig, type SegmenterEvent } from '../../src/vad/segmenter.js';

// 10 ms windows keep the arithmetic readable: N ms = N/10 windows.
const base: SegmenterConfig = {
  windowMs: 10,
  minimumSpeechMs: 50,
  minimumSilenceMs: 30,
  commitSilenceMs: 100,
  preRollMs: 20,
  softMaxSegmentMs: 10_000,
  maxSegmentMs: 20_000,
};

/** Run a flag pattern ('#' speech, '.' silence) and collect events with their window. */
function run(pattern: string, config: Partial<SegmenterConfig> = {}): Array<SegmenterEvent & { at: number }> {
  const seg = new VadSegmenter({ ...base, ...config });
  const out: Array<SegmenterEvent & { at: number }> = [];
  [...pattern].forEach((c, at) => {
    for (const e of seg.push(c === '#')) out.push({ ...e, at });
  });
  return out;
}

const rep = (c: string, n: number) => c.repeat(n);

describe('VadSegmenter', () => {
  it('opens after minimumSpeechMs of speech, with pre-roll, and commits after commitSilenceMs', () => {
    const ev = run(rep('.', 10) + rep('#', 30) + rep('.', 20));
    expect(ev).toEqual([
      { type: 'open', startWindow: 8, speechStartWindow: 10, at: 14 },
      { type: 'commit', endWindow: 50, speechEndWindow: 40, reason: 'silence', at: 49 },
    ]);
  });

  it('ignores bursts shorter than minimumSpeechMs', () => {
    expect(run(rep('.', 5) + rep('#', 4) + rep('.', 30))).toEqual([]);
    // the same burst opens a segment when the minimum is lowered
    expect(run(rep('.', 5) + rep('#', 4) + rep('.', 30), { minimumSpeechMs: 40 })[0]).toMatchObject({ type: 'open', speechStartWindow: 5 });
  });

  it('bridges dips shorter than minimumSilenceMs, and a pause shorter than commitSilenceMs', () => {
    // a 9-window pause (90 ms) < commitSilence 100 ms: one segment
    const ev = run(rep('#', 20) + rep('.', 9) + rep('#', 20) + rep('.', 15));
    expect(ev.map((e) => e.type)).toEqual(['open', 'commit']);
    expect(ev[1]).toMatchObject({ speechEndWindow: 49, endWindow: 59 });
    // a 10-window pause commits between the two runs
    const two = run(rep('#', 20) + rep('.', 10) + rep('#', 20) + rep('.', 15));
    expect(two.map((e) => e.type)).toEqual(['open', 'commit', 'open', 'commit']);
    expect(two[1]).toMatchObject({ endWindow: 30, speechEndWindow: 20 });
    // the next segment's pre-roll never reaches back into the committed one
    expect(two[2]).toMatchObject({ startWindow: 30, speechStartWindow: 30 });
  });

  it('commitSilenceMs below minimumSilenceMs waits for the minimum silence', () => {
    const ev = run(rep('#', 10) + rep('.', 20), { commitSilenceMs: 0, minimumSilenceMs: 80 });
    expect(ev[1]).toMatchObject({ type: 'commit', endWindow: 18, speechEndWindow: 10 });
  });

  it('commitSilenceMs changes where the commit lands', () => {
    const long = run(rep('#', 10) + rep('.', 400), { commitSilenceMs: 3000 });
    expect(long[1]).toMatchObject({ type: 'commit', endWindow: 310 });
    const short = run(rep('#', 10) + rep('.', 400), { commitSilenceMs: 500 });
    expect(short[1]).toMatchObject({ type: 'commit', endWindow: 60 });
  });

  it('cuts a long monologue: at the first short pause after the soft maximum, else at the maximum', () => {
    const cfg = { softMaxSegmentMs: 500, maxSegmentMs: 1000 };
    // speech with 4-window (40 ms) pauses every 30 windows: none reaches commitSilence
    const talk = (rep('#', 30) + rep('.', 4)).repeat(10);
    const ev = run(talk, cfg);
    const first = ev.find((e) => e.type === 'commit')!;
    expect(first).toMatchObject({ reason: 'pause_after_soft_max' });
    expect((first as { endWindow: number }).endWindow).toBeGreaterThanOrEqual(50);
    // no pauses at all: cut at exactly the maximum, and the next segment continues right there
    const solid = run(rep('#', 250), cfg);
    expect(solid.filter((e) => e.type === 'commit')).toEqual([
      { type: 'commit', endWindow: 100, speechEndWindow: 100, reason: 'max_length', at: 99 },
      { type: 'commit', endWindow: 200, speechEndWindow: 200, reason: 'max_length', at: 199 },
    ]);
    expect(solid.filter((e) => e.type === 'open')[1]).toMatchObject({ startWindow: 100 });
  });

  it('retainFrom tells the caller how much audio to keep before a segment opens', () => {
    const seg = new VadSegmenter(base);
    for (let i = 0; i < 10; i++) seg.push(false);
    expect(seg.retainFrom).toBe(8);
    seg.push(true);
    seg.push(true);
    expect(seg.retainFrom).toBe(8);
    seg.push(true);
    seg.push(true);
    const [open] = seg.push(true);
    expect(open).toMatchObject({ type: 'open', startWindow: 8 });
    expect(seg.retainFrom).toBe(8);
    expect(seg.forceCommit()).toMatchObject({ type: 'commit', endWindow: 15, reason: 'forced' });
    expect(seg.inSegment).toBe(false);
  });
});
