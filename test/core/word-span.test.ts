import { describe, expect, it } from 'vitest';
import { clampWordSpan, wordsOnTimeline } from '../../src/core/word-span.js';

describe('clampWordSpan', () => {
  it('keeps a word inside its segment unchanged', () => {
    expect(clampWordSpan({ startSample: 100, endSample: 900 }, 1000)).toEqual({ startSample: 100, endSample: 900 });
    expect(clampWordSpan({ startSample: 0, endSample: 1000 }, 1000)).toEqual({ startSample: 0, endSample: 1000 });
  });

  it('pulls a start before the segment to 0 and one at or past its end to the last sample', () => {
    expect(clampWordSpan({ startSample: -40, endSample: 300 }, 1000)).toEqual({ startSample: 0, endSample: 300 });
    expect(clampWordSpan({ startSample: 1000, endSample: 1200 }, 1000)).toEqual({ startSample: 999, endSample: 1000 });
    expect(clampWordSpan({ startSample: 5000, endSample: 5600 }, 1000)).toEqual({ startSample: 999, endSample: 1000 });
  });

  it('ends a word after its start and no later than the segment', () => {
    expect(clampWordSpan({ startSample: 800, endSample: 1330 }, 1000)).toEqual({ startSample: 800, endSample: 1000 });
    expect(clampWordSpan({ startSample: 500, endSample: 500 }, 1000)).toEqual({ startSample: 500, endSample: 501 });
    expect(clampWordSpan({ startSample: 500, endSample: 420 }, 1000)).toEqual({ startSample: 500, endSample: 501 });
    expect(clampWordSpan({ startSample: 0, endSample: -3 }, 1)).toEqual({ startSample: 0, endSample: 1 });
  });

  it('refuses an empty segment', () => {
    expect(() => clampWordSpan({ startSample: 0, endSample: 1 }, 0)).toThrow(RangeError);
  });
});

describe('wordsOnTimeline', () => {
  it('clamps each word into its segment, then places it on the file timeline', () => {
    const words = [
      { word: 'first', startSample: -12, endSample: 4000, confidence: 0.9 },
      { word: 'last', startSample: 15_990, endSample: 16_240, confidence: null },
      { word: 'past', startSample: 16_000, endSample: 16_000, confidence: 0.5 },
    ];
    expect(wordsOnTimeline(words, 32_000n, 16_000)).toEqual([
      { word: 'first', startSample: '32000', endSample: '36000', confidence: 0.9 },
      { word: 'last', startSample: '47990', endSample: '48000', confidence: null },
      { word: 'past', startSample: '47999', endSample: '48000', confidence: 0.5 },
    ]);
  });
});
