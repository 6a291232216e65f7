import { describe, expect, it } from 'vitest';
import { mapSpan, mergeWords, readableFinal, readableGroups } from '../../src/text/readable-text.js';

const read = (text: string) => readableFinal(text, []).text;

function timed(text: string) {
  return text
    .split(' ')
    .map((word, i) => ({ word, startSample: String(i * 100), endSample: String(i * 100 + 80), confidence: 0.9 - i * 0.01 }));
}

describe('sentence case', () => {
  it('capitalises the segment start and the pronoun I with its contractions', () => {
    expect(read("i think i'm late and i'll call if i've time i'd say")).toBe("I think I'm late and I'll call if I've time I'd say");
    expect(read('hello there')).toBe('Hello there');
  });

  it('capitalises after sentence punctuation, and nothing else', () => {
    expect(read('yes. ok then? fine! sure')).toBe('Yes. Ok then? Fine! Sure');
    expect(read('ask bob in paris')).toBe('Ask bob in paris');
    // "i" inside a word, or a letter i that is not the pronoun, is left alone.
    expect(read('it is in italy')).toBe('It is in italy');
  });

  it('leaves a segment that starts with a numeral as it is', () => {
    expect(read('twenty five people came')).toBe('25 people came');
  });

  it('handles empty and whitespace text', () => {
    expect(readableFinal('', [])).toEqual({ text: '', words: [], groups: [] });
    expect(read('  ')).toBe('');
  });
});

describe('groups and words', () => {
  it('covers every input token exactly once, in order', () => {
    const tokens = 'my number is four one five five five five one two one two ok'.split(' ');
    const groups = readableGroups(tokens);
    expect(groups.map((g) => [g.from, g.to])).toEqual([
      [0, 1],
      [1, 2],
      [2, 3],
      [3, 13],
      [13, 14],
    ]);
    expect(groups.map((g) => g.text)).toEqual(['My', 'number', 'is', '415-555-1212', 'ok']);
  });

  it('merges the words of a numeral: first start, last end, lowest confidence', () => {
    const text = 'it costs twenty five dollars and fifty cents today';
    const r = readableFinal(text, timed(text));
    expect(r.text).toBe('It costs $25.50 today');
    expect(r.words.map((w) => w.word).join(' ')).toBe(r.text);
    expect(r.words[2]).toEqual({ word: '$25.50', startSample: '200', endSample: '780', confidence: 0.9 - 7 * 0.01 });
    expect(r.words[3]).toEqual({ word: 'today', startSample: '800', endSample: '880', confidence: 0.9 - 8 * 0.01 });
    expect(r.words[0]!.word).toBe('It');
  });

  it('gives a merged word no confidence when a part has none', () => {
    const w = mergeWords(
      [
        { word: 'a', confidence: 0.5 },
        { word: 'b', confidence: null },
      ],
      'ab',
    );
    expect(w).toEqual({ word: 'ab', confidence: null });
  });

  it('gives each group of a card number its own word and times', () => {
    const text = 'card four one one one one one one one one one one one one one one one';
    const r = readableFinal(text, timed(text));
    expect(r.text).toBe('Card 4111 1111 1111 1111');
    expect(r.words.map((w) => w.word)).toEqual(['Card', '4111', '1111', '1111', '1111']);
    expect(r.words.map((w) => [w.startSample, w.endSample])).toEqual([
      ['0', '80'],
      ['100', '480'],
      ['500', '880'],
      ['900', '1280'],
      ['1300', '1680'],
    ]);
  });

  it('lets a "double" that says digits of two card groups time both', () => {
    // 4111 1111 1111 1111 with "double one" saying the 4th and 5th digits.
    const text = `four one one double one ${Array(11).fill('one').join(' ')}`;
    const r = readableFinal(text, timed(text));
    expect(r.words.map((w) => w.word)).toEqual(['4111', '1111', '1111', '1111']);
    expect(r.words[0]).toMatchObject({ startSample: '0', endSample: '480' });
    expect(r.words[1]).toMatchObject({ startSample: '300', endSample: '780' });
  });

  it('splits a date into its words, each with its own times', () => {
    const text = 'on march third twenty twenty four';
    const r = readableFinal(text, timed(text));
    expect(r.words.map((w) => [w.word, w.startSample, w.endSample])).toEqual([
      ['On', '0', '80'],
      ['March', '100', '180'],
      ['3,', '200', '280'],
      ['2024', '300', '580'],
    ]);
  });

  it('makes a word list that differs from the text readable on its own', () => {
    const words = timed('<sil> twenty five dollars');
    const r = readableFinal('twenty five dollars', words);
    expect(r.text).toBe('$25');
    expect(r.words.map((w) => w.word)).toEqual(['<sil>', '$25']);
  });
});

describe('mapSpan', () => {
  const source = 'call four one five five five five one two one two now';
  const groups = readableGroups(source.split(' '));
  const readable = groups.map((g) => g.text).join(' ');

  it('maps a span over rewritten tokens to the whole numeral', () => {
    const start = source.indexOf('four');
    const end = source.indexOf(' now');
    const at = mapSpan(source, groups, start, end);
    expect(readable.slice(at.start, at.end)).toBe('415-555-1212');
  });

  it('keeps offsets inside a token that was kept', () => {
    const start = source.indexOf('now') + 1;
    const at = mapSpan(source, groups, start, start + 2);
    expect(readable.slice(at.start, at.end)).toBe('ow');
    // The capitalised first token keeps its length, so offsets inside it stay exact.
    expect(readable.slice(...Object.values(mapSpan(source, groups, 0, 4)))).toBe('Call');
  });
});
