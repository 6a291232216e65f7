// Inverse text normalization (ITN) for readableText: spoken numbers in recognizer words become
// numerals where the words can only be a number. Pure, rule-based; works on whitespace tokens
// and says which token ranges are rewritten, so callers can merge word times and map entity
// offsets (src/text/readable-text.ts).
//
// The rules (docs/options.md, "readableText"), conservative by design: a rewrite must be the
// only sensible reading of the words, otherwise they stay words.
// - Number words are read in clusters: a maximal run of number words ("twenty", "five",
//   "hundred", "first", "oh"/"double" before a digit word, "and" after hundred/thousand/million,
//   "point" before a digit word).
//   A cluster becomes a numeral only when ONE reading covers it exactly; anything else
//   ("twenty twenty four" without context, "five twenty", "nineteen ninety nine dollars") is
//   left as it was said, never half converted.
// - Digits read one by one, 3 or more digits ("oh", "double five", "triple seven" included):
//   10 digits "415-555-1212", 11 starting with 1 "1-415-555-1212", 7 digits "555-1212",
//   13-19 digits passing the Luhn check in groups of four "4111 1111 1111 1111", any other
//   length the plain digits "90210".
// - Money: a number before dollars/bucks/euros ("$25", "€40"), with "and? N cents" ("$25.50");
//   "quid", and "pounds" only with pence ("five pounds fifty pence" "£5.50": a bare "ten
//   pounds" may be a weight); "N cents" alone "50¢". "a hundred dollars" "$100".
// - Percent: a number before "percent" ("5%", "2.5%").
// - Decimals: a number, "point", digit words ("3.14"); "zero"/"oh" before "point" reads 0.
// - Dates: a month name with an ordinal day ("march third" "March 3"), then an optional year
//   ("March 3, 2024"); "the third of march" "the 3rd of March". "may" and "march" are verbs
//   too: only with a year, or after on/of/by/until/since/from/before/after/in/during.
// - Years outside dates: only after a word that introduces one (in, since, of, year, by,
//   until, till, from, before, after, during, through, circa) and only 1600-2099 ("in
//   nineteen ninety nine" "in 1999").
// - Cardinals of 10 and more ("twenty five" "25", "ten thousand" "10,000"; commas from
//   10,000 on, so four-digit numbers and years read alike). Zero to nine stay words ("one of
//   them", "two kids"), and so does a number said with "a" ("a hundred", "a thousand times":
//   usually a figure of speech).
// - Ordinals of 10th and more ("twenty first" "21st", "tenth" "10th"); first to ninth stay
//   words ("first of all", "wait a second"); a compound ending in "second" ("a twenty second
//   delay") stays words outside dates.
import {
  DIGIT_WORDS,
  ORDINAL_UNITS,
  TEENS,
  TENS,
  UNITS,
  luhnValid,
  parseCardinal,
  parseDay,
  parseYear,
  readDigits,
  wordTable,
} from './numbers.js';

/** Tokens [from, to) are written as `text`. */
export interface Rewrite {
  from: number;
  to: number;
  text: string;
  /** When the written form has spaces ("March 3, 2024", a card number in groups): one part per
   * written word with the tokens it stands for, so each word of a final is one word of its
   * text. Parts are in order; two parts share a token only when one spoken word gave digits to
   * both ("double one" across two groups of a card number). */
  parts?: Array<{ from: number; to: number; text: string }>;
}

const SCALES = new Set(['hundred', 'thousand', 'million']);

const MONTH_NAMES = wordTable({
  january: 'January',
  february: 'February',
  march: 'March',
  april: 'April',
  may: 'May',
  june: 'June',
  july: 'July',
  august: 'August',
  september: 'September',
  october: 'October',
  november: 'November',
  december: 'December',
});

/** Words that introduce a year when no month is said: "in 1999", "since 2005". */
const YEAR_CONTEXT = new Set(['in', 'since', 'of', 'year', 'by', 'until', 'till', 'from', 'before', 'after', 'during', 'through', 'circa']);
/** Words before "may" or "march" that make it a month rather than the verb. */
const MAY_CONTEXT = new Set(['on', 'of', 'by', 'until', 'till', 'since', 'from', 'before', 'after', 'in', 'during']);

const CURRENCY_SYMBOL = wordTable({ dollar: '$', dollars: '$', buck: '$', bucks: '$', euro: '€', euros: '€', quid: '£' });

function isDigitWord(t: string | undefined): boolean {
  return t !== undefined && DIGIT_WORDS.has(t);
}

function isNumberWord(t: string): boolean {
  return UNITS.has(t) || TEENS.has(t) || TENS.has(t) || SCALES.has(t) || ORDINAL_UNITS.has(t);
}

/** A token that belongs to a number cluster. "oh", "o", "double" and "triple" only before a
 * digit word: alone they are ordinary words. */
function isNumberish(w: readonly string[], i: number): boolean {
  const t = w[i];
  if (t === undefined) return false;
  if (isNumberWord(t)) return true;
  if (t === 'double' || t === 'triple') return isDigitWord(w[i + 1]);
  // "oh" inside a digit run too: "nine oh two one oh".
  if (t === 'oh' || t === 'o') return isDigitWord(w[i + 1]) || (i > 0 && isDigitWord(w[i - 1]) && isNumberish(w, i - 1));
  return false;
}

function isClusterStart(w: readonly string[], i: number): boolean {
  return isNumberish(w, i) || (w[i] === 'a' && SCALES.has(w[i + 1] ?? ''));
}

/** End (exclusive) of the number cluster starting at i. */
function clusterEnd(w: readonly string[], i: number): number {
  let j = i;
  if (w[j] === 'a' && SCALES.has(w[j + 1] ?? '')) j++;
  while (j < w.length) {
    if (isNumberish(w, j)) j++;
    // "and" is part of a number only after a scale word: "two hundred and fifty".
    else if (w[j] === 'and' && j > i && SCALES.has(w[j - 1]!) && isNumberish(w, j + 1)) j++;
    else if (w[j] === 'point' && j > i && isNumberish(w, j - 1) && isDigitWord(w[j + 1])) j++;
    else break;
  }
  return j;
}

/** Thousands separators from 10,000 on; four-digit numbers stay plain (years, "2500"). */
export function formatInteger(n: number): string {
  const s = String(n);
  return n >= 10000 ? s.replace(/\B(?=(\d{3})+$)/g, ',') : s;
}

export function ordinalSuffix(n: number): string {
  const tens = n % 100;
  if (tens >= 11 && tens <= 13) return 'th';
  return ({ 1: 'st', 2: 'nd', 3: 'rd' } as Record<number, string>)[n % 10] ?? 'th';
}

/** A number value written out: integer part and optional decimal digits. */
interface Amount {
  integer: number;
  decimals: string;
  /** Said with "a" ("a hundred"). */
  withA: boolean;
}

function amountText(a: Amount): string {
  return a.decimals === '' ? formatInteger(a.integer) : `${formatInteger(a.integer)}.${a.decimals}`;
}

/** The whole cluster [i, c) as a cardinal or decimal, or null. */
function readAmount(w: readonly string[], i: number, c: number): Amount | null {
  let integer: number;
  let k: number;
  if ((w[i] === 'zero' || w[i] === 'oh' || w[i] === 'o') && w[i + 1] === 'point') {
    integer = 0;
    k = i + 1;
  } else {
    const n = parseCardinal(w, i);
    if (!n) return null;
    integer = n.value;
    k = i + n.length;
  }
  let decimals = '';
  if (w[k] === 'point') {
    k++;
    while (k < c && isDigitWord(w[k])) decimals += DIGIT_WORDS.get(w[k++]!)!;
    if (decimals === '') return null;
  }
  return k === c ? { integer, decimals, withA: w[i] === 'a' } : null;
}

/** The whole cluster [i, c) as an ordinal ("twenty first", "one hundred and tenth"). */
function readOrdinal(w: readonly string[], i: number, c: number): { value: number; compound: boolean } | null {
  const last = ORDINAL_UNITS.get(w[c - 1] ?? '');
  if (last === undefined) return null;
  if (c - 1 === i) return { value: last, compound: false };
  let end = c - 1;
  if (w[end - 1] === 'and') end--;
  const prefix = parseCardinal(w, i);
  if (!prefix || i + prefix.length !== end || w[i] === 'a') return null;
  const v = prefix.value;
  // "twenty" + "first": a tens word before a unit ordinal; "hundred" + "tenth": a round
  // hundred (or more) before any ordinal under 100.
  const tensBefore = v % 10 === 0 && v % 100 !== 0 && last < 10;
  const roundBefore = v % 100 === 0 && v > 0;
  if (!tensBefore && !roundBefore) return null;
  return { value: v + last, compound: true };
}

function ordinalText(n: number): string {
  return `${n}${ordinalSuffix(n)}`;
}

/** A card number's groups of four, each with the tokens [i..c) that said its digits. */
function cardParts(w: readonly string[], i: number, c: number, digits: string): Rewrite['parts'] {
  // Which token range said each digit: "double"/"triple" and the digit word after it together.
  const saidBy: Array<{ from: number; to: number }> = [];
  for (let j = i; j < c;) {
    const repeat = w[j] === 'double' ? 2 : w[j] === 'triple' ? 3 : 0;
    if (repeat > 0) {
      for (let k = 0; k < repeat; k++) saidBy.push({ from: j, to: j + 2 });
      j += 2;
    } else {
      saidBy.push({ from: j, to: j + 1 });
      j++;
    }
  }
  const parts: NonNullable<Rewrite['parts']> = [];
  for (let d = 0; d < digits.length; d += 4) {
    const last = Math.min(d + 4, digits.length) - 1;
    parts.push({ from: saidBy[d]!.from, to: saidBy[last]!.to, text: digits.slice(d, last + 1) });
  }
  return parts;
}

function isCardNumber(d: string): boolean {
  return d.length >= 13 && d.length <= 19 && luhnValid(d);
}

function digitsText(d: string): string {
  if (isCardNumber(d)) return d.replace(/(\d{4})(?=\d)/g, '$1 ');
  if (d.length === 10) return `${d.slice(0, 3)}-${d.slice(3, 6)}-${d.slice(6)}`;
  if (d.length === 11 && d[0] === '1') return `1-${d.slice(1, 4)}-${d.slice(4, 7)}-${d.slice(7)}`;
  if (d.length === 7) return `${d.slice(0, 3)}-${d.slice(3)}`;
  return d;
}

/** The cluster [i, c) as digits read one by one (3 or more), or null. A telephone number may
 * be read with "hundred" ("one eight hundred five five five ..."): "<digit> hundred" reads as
 * the digit and "00" when the whole run is telephone-shaped (7, 10 or 11 digits). */
function digitRun(w: readonly string[], i: number, c: number): string | null {
  const plain = readDigits(w, i);
  if (plain && i + plain.length === c) return plain.digits.length >= 3 ? plain.digits : null;
  const cluster = w.slice(i, c);
  if (!cluster.includes('hundred')) return null;
  const expanded: string[] = [];
  for (let k = 0; k < cluster.length; k++) {
    const t = cluster[k]!;
    if (t === 'hundred') {
      const before = UNITS.get(cluster[k - 1] ?? '');
      if (before === undefined || before === 0) return null;
      expanded.push('zero', 'zero');
    } else expanded.push(t);
  }
  const run = readDigits(expanded, 0);
  if (!run || run.length !== expanded.length) return null;
  const n = run.digits.length;
  return n === 7 || n === 10 || (n === 11 && run.digits[0] === '1') ? run.digits : null;
}

/** "N cents" after a money amount, from j: [and] <cardinal under 100> cents|cent|pence. */
function centsAfter(w: readonly string[], j: number, units: ReadonlySet<string>): { cents: number; end: number } | null {
  let k = j;
  if (w[k] === 'and') k++;
  if (!isClusterStart(w, k)) return null;
  const c = clusterEnd(w, k);
  const a = readAmount(w, k, c);
  if (!a || a.decimals !== '' || a.withA || a.integer >= 100 || !units.has(w[c] ?? '')) return null;
  return { cents: a.integer, end: c + 1 };
}

const CENT_WORDS = new Set(['cents', 'cent']);
const PENCE_WORDS = new Set(['pence', 'p']);

/** A year cluster [i, c) in its spoken form ("twenty twenty four", "two thousand and five"). */
function readYear(w: readonly string[], i: number, c: number): number | null {
  const y = parseYear(w, i);
  return y && i + y.length === c ? y.value : null;
}

/** A date starting at a month name at i: "march third [twenty twenty four]". */
function dateAtMonth(w: readonly string[], i: number): Rewrite | null {
  const month = MONTH_NAMES.get(w[i]!);
  if (month === undefined || !isClusterStart(w, i + 1)) return null;
  const c = clusterEnd(w, i + 1);
  const day = parseDay(w, i + 1);
  if (!day || !ORDINAL_UNITS.has(w[i + day.length]!)) return null;
  const dayEnd = i + 1 + day.length;
  let year: number | null = null;
  if (dayEnd < c) {
    year = readYear(w, dayEnd, c);
    if (year === null) return null;
  }
  if ((w[i] === 'may' || w[i] === 'march') && year === null && !MAY_CONTEXT.has(w[i - 1] ?? '')) return null;
  const parts = [
    { from: i, to: i + 1, text: month },
    { from: i + 1, to: dayEnd, text: year === null ? `${day.value}` : `${day.value},` },
    ...(year === null ? [] : [{ from: dayEnd, to: c, text: String(year) }]),
  ];
  return { from: i, to: c, text: parts.map((p) => p.text).join(' '), parts };
}

/** "third of march [twenty twenty four]" starting at the day cluster [i, c). */
function dayOfMonth(w: readonly string[], i: number, c: number): Rewrite | null {
  const day = parseDay(w, i);
  if (!day || i + day.length !== c || !ORDINAL_UNITS.has(w[c - 1]!) || w[c] !== 'of') return null;
  const month = MONTH_NAMES.get(w[c + 1] ?? '');
  if (month === undefined) return null;
  let end = c + 2;
  const parts = [
    { from: i, to: c, text: ordinalText(day.value) },
    { from: c, to: c + 1, text: 'of' },
    { from: c + 1, to: c + 2, text: month },
  ];
  if (isClusterStart(w, end)) {
    const yc = clusterEnd(w, end);
    const year = readYear(w, end, yc);
    if (year === null) return null;
    parts.push({ from: end, to: yc, text: String(year) });
    end = yc;
  }
  return { from: i, to: end, text: parts.map((p) => p.text).join(' '), parts };
}

/** The reading of the number cluster starting at i, or null to leave it as words. */
function clusterReading(w: readonly string[], i: number): Rewrite | null {
  const c = clusterEnd(w, i);
  const after = w[c];

  const digits = digitRun(w, i, c);
  if (digits !== null) {
    const r: Rewrite = { from: i, to: c, text: digitsText(digits) };
    return isCardNumber(digits) ? { ...r, parts: cardParts(w, i, c, digits) } : r;
  }

  const date = dayOfMonth(w, i, c);
  if (date) return date;

  const amount = readAmount(w, i, c);
  if (amount && after !== undefined) {
    const symbol = CURRENCY_SYMBOL.get(after);
    if (symbol !== undefined) {
      const cents = amount.decimals === '' ? centsAfter(w, c + 1, CENT_WORDS) : null;
      if (cents)
        return { from: i, to: cents.end, text: `${symbol}${formatInteger(amount.integer)}.${String(cents.cents).padStart(2, '0')}` };
      return { from: i, to: c + 1, text: `${symbol}${amountText(amount)}` };
    }
    if (after === 'pounds' || after === 'pound') {
      const pence = amount.decimals === '' ? centsAfter(w, c + 1, PENCE_WORDS) : null;
      if (pence) return { from: i, to: pence.end, text: `£${formatInteger(amount.integer)}.${String(pence.cents).padStart(2, '0')}` };
    }
    if (CENT_WORDS.has(after) && amount.decimals === '' && !amount.withA && amount.integer < 100)
      return { from: i, to: c + 1, text: `${amount.integer}¢` };
    if (after === 'percent' && !amount.withA) return { from: i, to: c + 1, text: `${amountText(amount)}%` };
  }

  if (YEAR_CONTEXT.has(w[i - 1] ?? '')) {
    const year = readYear(w, i, c);
    if (year !== null && year >= 1600 && year <= 2099) return { from: i, to: c, text: String(year) };
  }

  if (amount && !amount.withA && (amount.decimals !== '' || amount.integer >= 10)) return { from: i, to: c, text: amountText(amount) };

  const ordinal = readOrdinal(w, i, c);
  if (ordinal && ordinal.value >= 10 && !(ordinal.compound && w[c - 1] === 'second'))
    return { from: i, to: c, text: ordinalText(ordinal.value) };

  return null;
}

/**
 * The rewrites of `tokens` (recognizer words), in order, without overlaps. Tokens are matched
 * case-insensitively; tokens outside every rewrite are kept as they are.
 */
export function inverseNormalize(tokens: readonly string[]): Rewrite[] {
  const w = tokens.map((t) => t.toLowerCase());
  const out: Rewrite[] = [];
  let i = 0;
  while (i < w.length) {
    const date = dateAtMonth(w, i);
    if (date) {
      out.push(date);
      i = date.to;
      continue;
    }
    if (isClusterStart(w, i)) {
      const r = clusterReading(w, i);
      if (r) out.push(r);
      // A cluster without a reading is left whole: never half converted.
      i = r ? r.to : clusterEnd(w, i);
      continue;
    }
    i++;
  }
  return out;
}
