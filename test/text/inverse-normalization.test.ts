import { describe, expect, it } from 'vitest';
import { formatInteger, inverseNormalize, ordinalSuffix } from '../../src/text/inverse-normalization.js';

/** The text with every rewrite applied (no sentence case: that is readable-text's). */
function itn(text: string): string {
  const tokens = text.split(' ');
  const out: string[] = [];
  let i = 0;
  for (const r of inverseNormalize(tokens)) {
    out.push(...tokens.slice(i, r.from), r.text);
    i = r.to;
  }
  out.push(...tokens.slice(i));
  return out.join(' ');
}

describe('telephone numbers and digit runs', () => {
  it.each([
    ['call five five five one two one two', 'call 555-1212'],
    ['four one five five five five one two one two', '415-555-1212'],
    ['one four one five five five five one two one two', '1-415-555-1212'],
    ['four one five double five five oh one two three', '415-555-0123'],
    ['triple seven two one two three four', '77721234'],
    ['it is oh two oh seven nine four six oh nine five eight', 'it is 02079460958'],
    ['one eight hundred five five five one two one two', '1-800-555-1212'],
    ['zip nine oh two one oh', 'zip 90210'],
    ['dial nine one one', 'dial 911'],
  ])('%s', (spoken, written) => {
    expect(itn(spoken)).toBe(written);
  });

  it('reads "triple" and "double" as repeats', () => {
    expect(itn('triple seven double two one two three')).toBe('77722123');
    expect(itn('triple seven double two one two')).toBe('777-2212');
  });

  it('writes a Luhn-valid card number in groups of four, and other long runs as digits', () => {
    const card = 'four one one one one one one one one one one one one one one one';
    expect(itn(`card ${card} thanks`)).toBe('card 4111 1111 1111 1111 thanks');
    expect(itn('three seven eight two eight two two four six three one zero zero zero five')).toBe('3782 8224 6310 005');
    // Same length, fails Luhn: not written as a card.
    expect(itn('four one one one one one one one one one one one one one one two')).toBe('4111111111111112');
  });

  it('leaves short runs and a lone "oh" or "double" as words', () => {
    expect(itn('four five')).toBe('four five');
    expect(itn('double five')).toBe('double five');
    expect(itn('oh one more thing')).toBe('oh one more thing');
    expect(itn('oh no')).toBe('oh no');
    expect(itn('a double room')).toBe('a double room');
  });
});

describe('money', () => {
  it.each([
    ['twenty five dollars and fifty cents', '$25.50'],
    ['twenty five dollars fifty cents', '$25.50'],
    ['twenty five dollars', '$25'],
    ['five dollars', '$5'],
    ['one dollar and five cents', '$1.05'],
    ['a hundred dollars', '$100'],
    ['two hundred and fifty thousand dollars', '$250,000'],
    ['forty euros', '€40'],
    ['ten quid', '£10'],
    ['five pounds fifty pence', '£5.50'],
    ['fifty cents', '50¢'],
    ['twenty bucks', '$20'],
    ['three point five dollars', '$3.5'],
  ])('%s', (spoken, written) => {
    expect(itn(spoken)).toBe(written);
  });

  it('keeps a bare "pounds" (it may be a weight) and "a dollar"', () => {
    expect(itn('it weighs ten pounds')).toBe('it weighs 10 pounds');
    expect(itn('five pounds')).toBe('five pounds');
    expect(itn('a dollar')).toBe('a dollar');
  });
});

describe('dates', () => {
  it.each([
    ['march third twenty twenty four', 'March 3, 2024'],
    ['on june twenty first', 'on June 21'],
    ['december thirty first nineteen ninety nine', 'December 31, 1999'],
    ['january first two thousand and five', 'January 1, 2005'],
    ['the third of march', 'the 3rd of March'],
    ['the twenty second of march twenty twenty four', 'the 22nd of March 2024'],
    ['on may fifth', 'on May 5'],
    ['may fifth twenty twenty', 'May 5, 2020'],
  ])('%s', (spoken, written) => {
    expect(itn(spoken)).toBe(written);
  });

  it('leaves "may" and "march" as verbs where no date is meant', () => {
    expect(itn('you may first call them')).toBe('you may first call them');
    expect(itn('we march second')).toBe('we march second');
  });

  it('leaves a month whose number words are not a date as it was', () => {
    expect(itn('march third twenty')).toBe('march third twenty');
    expect(itn('in march')).toBe('in march');
  });

  it('reads years only after a word that introduces one', () => {
    expect(itn('in nineteen ninety nine')).toBe('in 1999');
    expect(itn('since two thousand and five')).toBe('since 2005');
    expect(itn('the class of twenty twenty')).toBe('the class of 2020');
    expect(itn('twenty twenty four')).toBe('twenty twenty four');
    // Outside 1600-2099: a time, not a year.
    expect(itn('by eleven fifty')).toBe('by eleven fifty');
  });
});

describe('ordinals', () => {
  it.each([
    ['the twenty first century', 'the 21st century'],
    ['the tenth time', 'the 10th time'],
    ['the eleventh hour', 'the 11th hour'],
    ['the twelfth and thirteenth', 'the 12th and 13th'],
    ['the thirty third floor', 'the 33rd floor'],
    ['one hundred and first', '101st'],
    ['the twentieth', 'the 20th'],
  ])('%s', (spoken, written) => {
    expect(itn(spoken)).toBe(written);
  });

  it('keeps first to ninth as words, and "second" compounds outside dates', () => {
    expect(itn('first of all')).toBe('first of all');
    expect(itn('wait a second')).toBe('wait a second');
    expect(itn('the third one')).toBe('the third one');
    expect(itn('a twenty second delay')).toBe('a twenty second delay');
    expect(itn('her twenty second birthday')).toBe('her twenty second birthday');
  });

  it('writes suffixes', () => {
    expect([1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111, 112].map((n) => `${n}${ordinalSuffix(n)}`)).toEqual([
      '1st',
      '2nd',
      '3rd',
      '4th',
      '11th',
      '12th',
      '13th',
      '21st',
      '22nd',
      '23rd',
      '101st',
      '111th',
      '112th',
    ]);
  });
});

describe('cardinals, decimals, percent', () => {
  it.each([
    ['twenty five people', '25 people'],
    ['ten', '10'],
    ['two hundred and fifty three cars', '253 cars'],
    ['three thousand', '3000'],
    ['ten thousand users', '10,000 users'],
    ['one million', '1,000,000'],
    ['three point one four', '3.14'],
    ['zero point five', '0.5'],
    ['five percent', '5%'],
    ['two point five percent', '2.5%'],
    ['one hundred percent', '100%'],
  ])('%s', (spoken, written) => {
    expect(itn(spoken)).toBe(written);
  });

  it('formats integers with separators from 10,000', () => {
    expect(formatInteger(9999)).toBe('9999');
    expect(formatInteger(10000)).toBe('10,000');
    expect(formatInteger(1234567)).toBe('1,234,567');
  });
});

describe('what must not change', () => {
  it.each([
    'one of them',
    'i want to go',
    'i want two',
    'two or three',
    'a hundred people',
    'a thousand times',
    'a hundred percent',
    'five twenty',
    'ten four',
    'at some point',
    'nine',
    'hundred',
    'the second one',
    'oh well',
    'no one knows',
    'for one thing',
    'at once',
    'constructor tostring __proto__',
  ])('%s', (text) => {
    expect(itn(text)).toBe(text);
  });

  it('joins numbers with "and" only after a scale word', () => {
    expect(itn('between five and ten')).toBe('between five and 10');
    expect(itn('two and three')).toBe('two and three');
    expect(itn('one hundred and five')).toBe('105');
  });

  it('never half converts a cluster', () => {
    // "nineteen ninety nine" without a year word: neither "19 99" nor "nineteen 99".
    expect(itn('nineteen ninety nine')).toBe('nineteen ninety nine');
    expect(itn('nineteen ninety nine dollars')).toBe('nineteen ninety nine dollars');
  });

  it('matches case-insensitively and keeps untouched tokens as they were', () => {
    expect(itn('Twenty Five Dollars from Bob')).toBe('$25 from Bob');
  });

  it('handles empty input', () => {
    expect(inverseNormalize([])).toEqual([]);
  });
});
