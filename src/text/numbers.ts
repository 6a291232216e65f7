// Spoken-number reading for entity detection: digit words as people read out numbers
// ("four one five", "oh" for zero, "double five"), cardinals ("two hundred and fifty"),
// ordinals ("twenty first") and years ("twenty twenty four"). Pure; works on lower-case
// tokens without punctuation.
//
// Every table is a Map: tokens are arbitrary recognizer words, and a plain object would also
// answer for "constructor", "toString", "__proto__" and the other Object.prototype names.

export const DIGIT_WORDS: ReadonlyMap<string, string> = new Map([
  ['zero', '0'],
  ['oh', '0'],
  ['o', '0'],
  ['nought', '0'],
  ['one', '1'],
  ['two', '2'],
  ['three', '3'],
  ['four', '4'],
  ['five', '5'],
  ['six', '6'],
  ['seven', '7'],
  ['eight', '8'],
  ['nine', '9'],
]);

/** A word table as a Map (see the header: never a plain object). */
export function wordTable<V>(entries: Readonly<Record<string, V>>): ReadonlyMap<string, V> {
  return new Map(Object.entries(entries));
}

export const UNITS = wordTable({
  zero: 0,
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
});
export const TEENS = wordTable({
  ten: 10,
  eleven: 11,
  twelve: 12,
  thirteen: 13,
  fourteen: 14,
  fifteen: 15,
  sixteen: 16,
  seventeen: 17,
  eighteen: 18,
  nineteen: 19,
});
export const TENS = wordTable({
  twenty: 20,
  thirty: 30,
  forty: 40,
  fifty: 50,
  sixty: 60,
  seventy: 70,
  eighty: 80,
  ninety: 90,
});
export const ORDINAL_UNITS = wordTable({
  first: 1,
  second: 2,
  third: 3,
  fourth: 4,
  fifth: 5,
  sixth: 6,
  seventh: 7,
  eighth: 8,
  ninth: 9,
  tenth: 10,
  eleventh: 11,
  twelfth: 12,
  thirteenth: 13,
  fourteenth: 14,
  fifteenth: 15,
  sixteenth: 16,
  seventeenth: 17,
  eighteenth: 18,
  nineteenth: 19,
  twentieth: 20,
  thirtieth: 30,
});

export interface NumberMatch {
  value: number;
  /** Tokens consumed from the start position. */
  length: number;
}

/** A literal numeral token: "42", "1,250", "3.50". */
export function literalNumber(token: string): number | null {
  if (/^\d{1,3}(,\d{3})+(\.\d+)?$/.test(token) || /^\d+(\.\d+)?$/.test(token)) return Number(token.replace(/,/g, ''));
  return null;
}

/** A cardinal starting at tokens[i]: a literal numeral, or spoken words such as
 * "two hundred and fifty three", "a thousand", "twelve". Digit-by-digit readings
 * ("five five") are not cardinals: a unit after a unit ends the number. */
export function parseCardinal(tokens: readonly string[], i: number): NumberMatch | null {
  const first = tokens[i];
  if (first === undefined) return null;
  const lit = literalNumber(first);
  if (lit !== null) return { value: lit, length: 1 };

  let total = 0;
  let current = 0;
  let j = i;
  let last: 'none' | 'unit' | 'teen' | 'tens' | 'hundred' | 'scale' = 'none';
  let any = false;
  while (j < tokens.length) {
    const t = tokens[j]!;
    if (t === 'a' && !any && (tokens[j + 1] === 'hundred' || tokens[j + 1] === 'thousand' || tokens[j + 1] === 'million')) {
      current = 1;
      last = 'unit';
      j++;
      continue;
    }
    if (t === 'and' && any && (last === 'hundred' || last === 'scale') && isNumberWord(tokens[j + 1])) {
      j++;
      continue;
    }
    const unit = t === 'zero' ? undefined : UNITS.get(t);
    const teen = TEENS.get(t);
    const tens = TENS.get(t);
    if (unit !== undefined) {
      if (last === 'unit' || last === 'teen') break;
      current += unit;
      last = 'unit';
    } else if (teen !== undefined) {
      if (last === 'unit' || last === 'teen' || last === 'tens') break;
      current += teen;
      last = 'teen';
    } else if (tens !== undefined) {
      if (last === 'unit' || last === 'teen' || last === 'tens') break;
      current += tens;
      last = 'tens';
    } else if (t === 'hundred') {
      if (last === 'hundred' || last === 'none') break;
      current = (current || 1) * 100;
      last = 'hundred';
    } else if (t === 'thousand' || t === 'million') {
      if (last === 'none' || last === 'scale') break;
      total += (current || 1) * (t === 'thousand' ? 1000 : 1_000_000);
      current = 0;
      last = 'scale';
    } else {
      break;
    }
    any = true;
    j++;
  }
  if (!any) return null;
  return { value: total + current, length: j - i };
}

function isNumberWord(t: string | undefined): boolean {
  return t !== undefined && (UNITS.has(t) || TEENS.has(t) || TENS.has(t));
}

/** A day of the month: "5", "5th", "fifth", "twenty first", "thirty first". */
export function parseDay(tokens: readonly string[], i: number): NumberMatch | null {
  const t = tokens[i];
  if (t === undefined) return null;
  const lit = /^(\d{1,2})(st|nd|rd|th)?$/.exec(t);
  if (lit) {
    const v = Number(lit[1]);
    return v >= 1 && v <= 31 ? { value: v, length: 1 } : null;
  }
  const ordinal = ORDINAL_UNITS.get(t);
  if (ordinal !== undefined) return { value: ordinal, length: 1 };
  if (t === 'twenty' || t === 'thirty') {
    const next = tokens[i + 1] === undefined ? undefined : ORDINAL_UNITS.get(tokens[i + 1]!);
    if (next !== undefined && next < 10) {
      const v = TENS.get(t)! + next;
      return v <= 31 ? { value: v, length: 2 } : null;
    }
  }
  return null;
}

/** A year: "2024", "twenty twenty four", "nineteen ninety nine", "two thousand and five",
 * "twenty oh five". Only 1100-2999 are read as years. */
export function parseYear(tokens: readonly string[], i: number): NumberMatch | null {
  const t = tokens[i];
  if (t === undefined) return null;
  if (/^\d{4}$/.test(t)) {
    const v = Number(t);
    return v >= 1100 && v <= 2999 ? { value: v, length: 1 } : null;
  }
  if (t === 'two' && tokens[i + 1] === 'thousand') {
    let j = i + 2;
    if (tokens[j] === 'and') j++;
    const rest = parseCardinal(tokens, j);
    if (rest && rest.value < 100 && literalNumber(tokens[j]!) === null) return { value: 2000 + rest.value, length: j - i + rest.length };
    return { value: 2000, length: 2 };
  }
  // Two-part reading: a century (eleven..twenty nine) then the rest of the year.
  let century: number | null = null;
  const teenCentury = TEENS.get(t);
  if (teenCentury !== undefined && teenCentury >= 11) century = teenCentury;
  else if (t === 'twenty') century = 20;
  if (century === null) return null;
  const a = tokens[i + 1];
  if (a === undefined) return null;
  if (a === 'hundred') return { value: century * 100, length: 2 };
  const after = tokens[i + 2] === undefined ? undefined : UNITS.get(tokens[i + 2]!);
  if ((a === 'oh' || a === 'o') && after !== undefined) return { value: century * 100 + after, length: 3 };
  const teen = TEENS.get(a);
  if (teen !== undefined) return { value: century * 100 + teen, length: 2 };
  const tens = TENS.get(a);
  if (tens !== undefined) {
    if (after !== undefined && tokens[i + 2] !== 'zero') return { value: century * 100 + tens + after, length: 3 };
    return { value: century * 100 + tens, length: 2 };
  }
  return null;
}

/** Digits read out one by one starting at tokens[i]: digit words, "double"/"triple" before a
 * digit, and literal digit groups ("415", "555-1212"). Returns the digit string and how many
 * tokens it used, or null when tokens[i] does not start such a reading. `spoken` tells
 * whether any digit came from a word. */
export function readDigits(tokens: readonly string[], i: number): { digits: string; length: number; spoken: boolean } | null {
  let digits = '';
  let spoken = false;
  let j = i;
  while (j < tokens.length) {
    const t = tokens[j]!;
    const repeat = t === 'double' ? 2 : t === 'triple' ? 3 : 0;
    if (repeat > 0) {
      const next = tokens[j + 1];
      const d = next === undefined ? undefined : (DIGIT_WORDS.get(next) ?? (/^\d$/.test(next) ? next : undefined));
      if (d === undefined) break;
      digits += d.repeat(repeat);
      spoken = true;
      j += 2;
      continue;
    }
    const word = DIGIT_WORDS.get(t);
    if (word !== undefined) {
      // A lone "o" or "oh" only counts once a run has started: "oh" alone is a word.
      if ((t === 'o' || t === 'oh') && digits === '' && !startsRun(tokens, j + 1)) break;
      digits += word;
      spoken = true;
      j++;
      continue;
    }
    if (/^\(?\d+\)?(-\d+)*$/.test(t)) {
      digits += t.replace(/\D/g, '');
      j++;
      continue;
    }
    break;
  }
  if (digits === '') return null;
  return { digits, length: j - i, spoken };
}

function startsRun(tokens: readonly string[], i: number): boolean {
  const t = tokens[i];
  return t !== undefined && (DIGIT_WORDS.has(t) || t === 'double' || t === 'triple' || /^\d/.test(t)) && t !== 'o' && t !== 'oh';
}

/** Luhn (mod 10) check over a digit string. */
export function luhnValid(digits: string): boolean {
  if (!/^\d+$/.test(digits)) return false;
  let sum = 0;
  for (let k = 0; k < digits.length; k++) {
    let d = digits.charCodeAt(digits.length - 1 - k) - 48;
    if (k % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}
