import { describe, expect, it } from 'vitest';
import { detectEntities, notDetectedCategories } from '../../src/text/entities.js';
import { luhnValid, parseCardinal, parseYear, readDigits } from '../../src/text/numbers.js';

const ALL = ['phone_number', 'email', 'credit_card', 'money', 'date', 'spelled_digits'];

function only(text: string, categories = ALL) {
  return detectEntities(text, categories).map((e) => ({ category: e.category, value: e.value, text: e.text }));
}

describe('number readers', () => {
  it('reads cardinals, not digit-by-digit runs', () => {
    const t = (s: string) => parseCardinal(s.split(' '), 0);
    expect(t('two hundred and fifty three dollars')).toEqual({ value: 253, length: 5 });
    expect(t('a thousand')).toEqual({ value: 1000, length: 2 });
    expect(t('twenty five')).toEqual({ value: 25, length: 2 });
    expect(t('five five')).toEqual({ value: 5, length: 1 });
    expect(t('1,250.75')).toEqual({ value: 1250.75, length: 1 });
    expect(t('hello')).toBeNull();
  });

  it('reads years in their spoken forms', () => {
    const y = (s: string) => parseYear(s.split(' '), 0)?.value;
    expect(y('twenty twenty four')).toBe(2024);
    expect(y('nineteen ninety nine')).toBe(1999);
    expect(y('two thousand and five')).toBe(2005);
    expect(y('twenty oh five')).toBe(2005);
    expect(y('2031')).toBe(2031);
    expect(y('twelve')).toBeUndefined();
  });

  it('reads digits as call centres say them', () => {
    const d = (s: string) => readDigits(s.split(' '), 0)?.digits;
    expect(d('four one five double five five oh one two three')).toBe('4155550123');
    expect(d('triple seven 42')).toBe('77742');
    expect(d('oh')).toBeUndefined();
  });

  it('implements the Luhn check', () => {
    expect(luhnValid('4111111111111111')).toBe(true);
    expect(luhnValid('4111111111111112')).toBe(false);
    expect(luhnValid('79927398713')).toBe(true);
  });
});

describe('detectEntities', () => {
  it('finds a spoken phone number with offsets into the text', () => {
    const text = 'call me at four one five double five five one two one two please';
    const [e] = detectEntities(text, ['phone_number']);
    expect(e).toMatchObject({ category: 'phone_number', value: '4155551212' });
    expect(text.slice(e!.start, e!.end)).toBe('four one five double five five one two one two');
    expect(e!.text).toBe(text.slice(e!.start, e!.end));
  });

  it('finds written phone numbers', () => {
    expect(only('ring 415-555-1212, or +44 20 7946 0958.', ['phone_number'])).toEqual([
      { category: 'phone_number', value: '4155551212', text: '415-555-1212' },
      { category: 'phone_number', value: '+442079460958', text: '+44 20 7946 0958' },
    ]);
  });

  it('calls a Luhn-valid run a card number and an invalid one not', () => {
    const valid = 'four one one one one one one one one one one one one one one one';
    expect(only(`my card is ${valid}`, ['credit_card'])).toEqual([{ category: 'credit_card', value: '4111111111111111', text: valid }]);
    expect(only('card 4111 1111 1111 1112', ['credit_card'])).toEqual([]);
    expect(only('card 4111 1111 1111 1111', ['credit_card'])).toEqual([
      { category: 'credit_card', value: '4111111111111111', text: '4111 1111 1111 1111' },
    ]);
  });

  it('finds written and spoken emails', () => {
    expect(only('write to Jane.Doe@Example.com, thanks', ['email'])).toEqual([
      { category: 'email', value: 'jane.doe@example.com', text: 'Jane.Doe@Example.com' },
    ]);
    expect(only('my email is john dot smith at example dot co dot uk ok', ['email'])).toEqual([
      { category: 'email', value: 'john.smith@example.co.uk', text: 'john dot smith at example dot co dot uk' },
    ]);
    expect(only('we met at home dot', ['email'])).toEqual([]);
  });

  it('finds money amounts', () => {
    expect(only('it costs twenty five dollars and fifty cents or $19.99 or 40 euros or seventy five cents', ['money'])).toEqual([
      { category: 'money', value: 'USD 25.50', text: 'twenty five dollars and fifty cents' },
      { category: 'money', value: 'USD 19.99', text: '$19.99' },
      { category: 'money', value: 'EUR 40.00', text: '40 euros' },
      { category: 'money', value: 'USD 0.75', text: 'seventy five cents' },
    ]);
    expect(only('a thousand pounds', ['money'])).toEqual([{ category: 'money', value: 'GBP 1000.00', text: 'a thousand pounds' }]);
  });

  it('finds dates in spoken and written forms', () => {
    expect(only('due march fifth twenty twenty four, then on the twenty first of june and 2024-02-29 and 12/31/2023', ['date'])).toEqual([
      { category: 'date', value: '2024-03-05', text: 'march fifth twenty twenty four' },
      { category: 'date', value: '--06-21', text: 'the twenty first of june' },
      { category: 'date', value: '2024-02-29', text: '2024-02-29' },
      { category: 'date', value: '2023-12-31', text: '12/31/2023' },
    ]);
    expect(only('you may go second', ['date'])).toEqual([]);
    expect(only('february thirtieth', ['date'])).toEqual([]);
  });

  it('reports spelled digit sequences when nothing more specific is requested', () => {
    expect(only('my account is oh four double two nine and the year 2024', ['spelled_digits'])).toEqual([
      { category: 'spelled_digits', value: '04229', text: 'oh four double two nine' },
    ]);
    // With phone_number requested too, a ten-digit run is a phone number.
    expect(only('four one five five five five one two one two', ['phone_number', 'spelled_digits'])[0]!.category).toBe('phone_number');
    expect(only('four one five five five five one two one two', ['spelled_digits'])[0]!.category).toBe('spelled_digits');
  });

  it('detects only the requested categories', () => {
    const text = 'pay $5 on march fifth to a at b dot com';
    expect(only(text, ['date']).map((e) => e.category)).toEqual(['date']);
    expect(only(text, []).length).toBe(0);
    expect(only(text, ALL).map((e) => e.category)).toEqual(['money', 'date', 'email']);
  });

  it('names the categories it cannot detect', () => {
    expect(notDetectedCategories(['person', 'email', 'location'])).toEqual(['person', 'location']);
  });
});

describe('words that are Object.prototype names', () => {
  // Recognizers emit ordinary words; "constructor", "toString" and the like once matched the
  // lookup tables through the prototype chain (a money value "function Object() ... 5.00",
  // or a TypeError that lost the final).
  const NAMES = ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf', 'isPrototypeOf', '__defineGetter__'];

  it('are never numbers, months, currencies or digit words', () => {
    for (const name of NAMES) {
      const w = name.toLowerCase();
      for (const text of [
        `five ${w}`,
        `${w} dollars`,
        `${w} five`,
        `the fifth of ${w}`,
        `${w} the fifth`,
        `twenty ${w}`,
        `nineteen ${w} four`,
        `four one five ${w} five five five one two one two`,
        `john ${w} smith at example dot com`,
        `twenty ${w} dollars and ${w} cents`,
      ]) {
        expect(() => detectEntities(text, ALL), text).not.toThrow();
        for (const e of detectEntities(text, ALL)) {
          expect(e.value, `${text} -> ${e.category}`).toMatch(
            /^(USD|EUR|GBP) \d+\.\d\d$|^[\d+]+$|^(\d{4}|-)-\d\d-\d\d$|^[a-z0-9._-]+@[a-z0-9.-]+$/,
          );
          expect(e.text.toLowerCase().includes(w), `${text} -> ${JSON.stringify(e)}`).toBe(false);
        }
      }
      const tokens = [w, 'five'];
      expect(parseCardinal(tokens, 0), w).toBeNull();
      expect(parseYear(['twenty', w], 0), w).toBeNull();
      expect(parseYear([w, 'five'], 0), w).toBeNull();
      expect(readDigits([w, 'five'], 0), w).toBeNull();
      expect(readDigits(['double', w], 0), w).toBeNull();
    }
  });

  it('leave the real entities around them intact', () => {
    expect(only('constructor five dollars', ['money'])).toEqual([{ category: 'money', value: 'USD 5.00', text: 'five dollars' }]);
    expect(only('valueof four one five five five five one two one two', ['phone_number'])).toEqual([
      { category: 'phone_number', value: '4155551212', text: 'four one five five five five one two one two' },
    ]);
  });
});
