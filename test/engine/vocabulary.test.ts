import { describe, expect, it } from 'vitest';
import { derivePronunciation, hintArpa, hintWords, planVocabulary } from '../../src/engine/vocabulary.js';

const dict: Record<string, string> = {
  dash: 'D AE SH',
  board: 'B AO R D',
  boards: 'B AO R D Z',
  a: 'AH',
  cat: 'K AE T',
  ill: 'IH L',
  disposed: 'D IH S P OW Z D',
};
const lookup = (w: string) => dict[w] ?? null;

describe('vocabulary hints', () => {
  it('splits hints into lower-case words, once each', () => {
    expect(hintWords(['Ill-disposed', 'DashBoards', 'ill', "O'Neil's, co."])).toEqual(['ill', 'disposed', 'dashboards', "o'neil's", 'co']);
  });

  it('derives a missing word from the fewest dictionary words that spell it', () => {
    expect(derivePronunciation('dashboards', lookup)).toBe('D AE SH B AO R D Z');
    expect(derivePronunciation('acat', lookup)).toBe('AH K AE T');
    expect(derivePronunciation('cat', lookup)).toBe('K AE T');
    expect(derivePronunciation('zork', lookup)).toBeNull();
  });

  it('plans: known words boosted, derivable ones added, the rest reported', () => {
    expect(planVocabulary(['ill disposed', 'dashboard', 'zork'], lookup)).toEqual({
      entries: [
        { word: 'ill', phones: null, derived: false },
        { word: 'disposed', phones: null, derived: false },
        { word: 'dashboard', phones: 'D AE SH B AO R D', derived: true },
      ],
      unknown: ['zork'],
    });
  });

  it('writes a uniform unigram ARPA model', () => {
    const arpa = hintArpa(['dash', 'cat', 'ill']);
    expect(arpa).toContain('ngram 1=5');
    expect(arpa).toContain('-0.602060 dash');
    expect(arpa).toContain('-0.602060 </s>');
    expect(arpa).toContain('-99.000000 <s>');
    expect(arpa.trim().endsWith('\\end\\')).toBe(true);
  });
});
