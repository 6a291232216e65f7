import { describe, expect, it } from 'vitest';
import { LevelMeter, primaryWords } from '../../src/core/background-speech.js';

function tone(samples: number, amplitude: number): Int16Array {
  return Int16Array.from({ length: samples }, (_, i) => Math.round(amplitude * Math.sin((2 * Math.PI * 440 * i) / 16000)));
}

describe('background speech suppression', () => {
  it('measures 10 ms frame levels in dBFS across pushes of any size', () => {
    const m = new LevelMeter(16000);
    const t = tone(1600, 16384); // -6 dBFS peak: about -9 dBFS RMS
    m.push(t.subarray(0, 77));
    m.push(t.subarray(77));
    expect(m.levels).toHaveLength(10);
    for (const l of m.levels) expect(l).toBeCloseTo(-9.03, 0);
  });

  it('drops words more than 15 dB under the primary level, keeps the rest', () => {
    const m = new LevelMeter(16000);
    m.push(tone(3200, 16000)); // loud word, samples 0-3200
    m.push(tone(3200, 16000 / 17.8)); // 25 dB down, samples 3200-6400
    m.push(tone(3200, 16000 / 3.2)); // 10 dB down, samples 6400-9600
    const words = [
      { word: 'main', startSample: 0, endSample: 3200 },
      { word: 'far', startSample: 3200, endSample: 6400 },
      { word: 'near', startSample: 6400, endSample: 9600 },
    ];
    const r = primaryWords(words, m, -100);
    expect(r.keep.map((w) => w.word)).toEqual(['main', 'near']);
    expect(r.dropped).toBe(1);
    // a primary level from earlier segments applies to a segment of quiet speech alone
    const quiet = new LevelMeter(16000);
    quiet.push(tone(3200, 16000 / 17.8));
    expect(primaryWords([{ word: 'far', startSample: 0, endSample: 3200 }], quiet, r.primaryDb).keep).toEqual([]);
    expect(primaryWords([{ word: 'far', startSample: 0, endSample: 3200 }], quiet, -100).keep).toHaveLength(1);
  });
});
