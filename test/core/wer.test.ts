import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { normaliseWords, wordErrorRate } from '../../src/core/wer.js';

describe('wordErrorRate', () => {
  it('is zero for identical text regardless of case and punctuation', () => {
    const r = wordErrorRate("Hello, World! It's me.", "hello world it's me");
    expect(r).toEqual({ wer: 0, substitutions: 0, deletions: 0, insertions: 0, refWords: 4 });
  });

  it('counts substitutions, deletions and insertions', () => {
    expect(wordErrorRate('a b c d', 'a x c d')).toMatchObject({ substitutions: 1, deletions: 0, insertions: 0, wer: 0.25 });
    expect(wordErrorRate('a b c d', 'a c d')).toMatchObject({ substitutions: 0, deletions: 1, insertions: 0, wer: 0.25 });
    expect(wordErrorRate('a b c d', 'a b y c d')).toMatchObject({ substitutions: 0, deletions: 0, insertions: 1, wer: 0.25 });
    expect(wordErrorRate('he was not an ill disposed young man', 'he was not until exposed young man')).toMatchObject({
      refWords: 8,
      wer: 3 / 8,
    });
  });

  it('handles empty sides', () => {
    expect(wordErrorRate('', '').wer).toBe(0);
    expect(wordErrorRate('a b', '')).toMatchObject({ deletions: 2, wer: 1 });
    expect(wordErrorRate('', 'a b')).toMatchObject({ insertions: 2, refWords: 0 });
  });

  it('normalises words', () => {
    expect(normaliseWords("  Mr. Dashwood's  'quoted'  co-op ")).toEqual(['mr', "dashwood's", 'quoted', 'co', 'op']);
  });

  it('edit counts are consistent with lengths and bounded', () => {
    const word = fc.constantFrom('a', 'b', 'c', 'd');
    fc.assert(
      fc.property(fc.array(word, { maxLength: 12 }), fc.array(word, { maxLength: 12 }), (r, h) => {
        const res = wordErrorRate(r.join(' '), h.join(' '));
        // hypothesis length = ref - deletions + insertions
        expect(r.length - res.deletions + res.insertions).toBe(h.length);
        expect(res.substitutions + res.deletions + res.insertions).toBeLessThanOrEqual(Math.max(r.length, h.length));
        if (r.join() === h.join()) expect(res.wer).toBe(0);
        const sym = wordErrorRate(h.join(' '), r.join(' '));
        expect(sym.substitutions + sym.deletions + sym.insertions).toBe(res.substitutions + res.deletions + res.insertions);
      }),
    );
  });
});
