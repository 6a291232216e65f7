import { describe, expect, it } from 'vitest';
import { isFiller, removeDisfluencies } from '../../src/text/disfluency.js';

describe('removeDisfluencies', () => {
  it('drops hesitation sounds and engine filler tokens, keeps the rest in order', () => {
    const r = removeDisfluencies('so um I was uh going to er call hmm Ah <sil> [noise] them', []);
    expect(r.text).toBe('so I was going to call them');
    expect(r.removed).toBe(7);
  });

  it('removes a filler with its punctuation and is case-insensitive', () => {
    expect(removeDisfluencies('Um, the account, uh... is closed', []).text).toBe('the account, is closed');
  });

  it('keeps "you know", "I mean", "like" and words that merely contain a filler', () => {
    const text = 'do you know what I mean I like the umbrella and the hummer erupted';
    expect(removeDisfluencies(text, []).text).toBe(text);
  });

  it('filters the word list the same way and keeps word times', () => {
    const words = [
      { word: 'uh', startSample: 0, endSample: 10 },
      { word: 'hello', startSample: 10, endSample: 20 },
      { word: '<sil>', startSample: 20, endSample: 30 },
      { word: 'there', startSample: 30, endSample: 40 },
    ];
    const r = removeDisfluencies('uh hello there', words);
    expect(r.words).toEqual([words[1], words[3]]);
  });

  it('classifies single tokens', () => {
    for (const f of ['uh', 'UM', 'erm', 'hmm', '++garbage++', '</s>']) expect(isFiller(f), f).toBe(true);
    for (const w of ['a', 'her', 'ahead', 'mhm', 'oh', '']) expect(isFiller(w), w).toBe(false);
  });
});
