// entityCategories: entities found in a final's text, with character offsets. Pure.
//
// Recognizer output is mostly lower-case words with numbers spelled out ("four one five"),
// so every detector reads both the written form ("415-555-1212", "$25", "john@x.com") and
// the spoken form. Categories (docs/options.md):
// - phone_number: 7 digits, 10 digits, or 11 starting with 1 (North American forms), or a
//   written number starting with "+" and 8-15 digits; value: the digits ("+" kept).
// - credit_card: 13-19 digits that pass the Luhn check; value: the digits.
// - email: written addresses, and spoken ones ("john dot smith at example dot com", with
//   "underscore", "dash" too) whose last label is a known top-level domain; value: address.
// - money: "$25.50", "25 dollars", "twenty five dollars and fifty cents", euros, pounds,
//   "cents" alone; value: "<ISO currency> <amount with 2 decimals>", e.g. "USD 25.50".
// - date: month name with a day ("march fifth", "5 march", "the fifth of march") and an
//   optional year ("twenty twenty four"), "2024-03-05", "3/5/2024" (read month/day/year);
//   value: ISO "2024-03-05", or "--03-05" when no year was said.
// - spelled_digits: a run of at least 3 digits read out one by one with at least one digit
//   word ("oh", "double five" included) that no more specific requested category claims;
//   value: the digits.
// - person, organization, location: accepted by validation, but no named-entity model is on
//   this server; they are never detected and the session says so (notDetectedCategories).
// Offsets: `start`/`end` are JavaScript string indices (UTF-16 code units) into the final
// text as sent, `end` exclusive. When spans overlap, the longer wins; at equal length the
// earlier category in PRIORITY wins.
// Lookups are Maps and Sets only (src/text/numbers.ts): words are arbitrary, and a plain
// object would also match "constructor", "toString" and other Object.prototype names.
import type { EntityCategory } from '../core/session-options.js';
import { DETECTABLE_CATEGORIES, type Entity } from '../core/text-options.js';
import { DIGIT_WORDS, literalNumber, wordTable, luhnValid, parseCardinal, parseDay, parseYear, readDigits } from './numbers.js';

export type { Entity };
export { DETECTABLE_CATEGORIES, notDetectedCategories } from '../core/text-options.js';

const PRIORITY: readonly EntityCategory[] = DETECTABLE_CATEGORIES;

interface Token {
  /** Lower-case, outer punctuation removed. */
  norm: string;
  start: number;
  end: number;
}

/** Whitespace tokens with their offsets; trailing sentence punctuation and wrapping quotes
 * are trimmed from the span so an entity never swallows a comma. */
function tokenize(text: string): Token[] {
  const out: Token[] = [];
  for (const m of text.matchAll(/\S+/g)) {
    let s = m.index;
    let e = s + m[0].length;
    while (s < e && /["'([]/.test(text[s]!) && !/^\(\d/.test(text.slice(s, e))) s++;
    while (e > s && /[,;:!?."')\]]/.test(text[e - 1]!) && !/\(\d+\)$/.test(text.slice(s, e))) e--;
    if (e > s) out.push({ norm: text.slice(s, e).toLowerCase(), start: s, end: e });
  }
  return out;
}

const MONTHS = wordTable({
  january: 1,
  jan: 1,
  february: 2,
  feb: 2,
  march: 3,
  mar: 3,
  april: 4,
  apr: 4,
  may: 5,
  june: 6,
  jun: 6,
  july: 7,
  jul: 7,
  august: 8,
  aug: 8,
  september: 9,
  sep: 9,
  sept: 9,
  october: 10,
  oct: 10,
  november: 11,
  nov: 11,
  december: 12,
  dec: 12,
});

const TLDS = new Set([
  'com',
  'org',
  'net',
  'edu',
  'gov',
  'io',
  'co',
  'uk',
  'us',
  'de',
  'fr',
  'ca',
  'au',
  'info',
  'biz',
  'me',
  'ai',
  'dev',
  'app',
]);

const CURRENCY_WORDS = wordTable({
  dollar: 'USD',
  dollars: 'USD',
  bucks: 'USD',
  euro: 'EUR',
  euros: 'EUR',
  pound: 'GBP',
  pounds: 'GBP',
  quid: 'GBP',
});
const CURRENCY_SYMBOLS = wordTable({ $: 'USD', '€': 'EUR', '£': 'GBP' });
/** Spoken separators inside an email address. */
const EMAIL_JOINERS = wordTable({ dot: '.', underscore: '_', dash: '-', hyphen: '-' });

type Candidate = Omit<Entity, 'text'>;

function pad2(n: number): string {
  return String(n).padStart(2, '0');
}

function isoDate(year: number | null, month: number, day: number): string | null {
  const dim = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!;
  if (day < 1 || day > dim) return null;
  if (year !== null && month === 2 && day === 29 && !(year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0))) return null;
  return year === null ? `--${pad2(month)}-${pad2(day)}` : `${year}-${pad2(month)}-${pad2(day)}`;
}

function span(tokens: Token[], i: number, length: number): { start: number; end: number } {
  return { start: tokens[i]!.start, end: tokens[i + length - 1]!.end };
}

function emails(tokens: Token[], words: string[]): Candidate[] {
  const out: Candidate[] = [];
  tokens.forEach((t) => {
    if (/^[\w.+-]+@[\w-]+(\.[\w-]+)+$/.test(t.norm)) out.push({ category: 'email', value: t.norm, start: t.start, end: t.end });
  });
  const label = (w: string | undefined) => w !== undefined && /^[a-z0-9]+$/.test(w) && !EMAIL_JOINERS.has(w) && w !== 'at';
  for (let k = 1; k < words.length - 1; k++) {
    if (words[k] !== 'at' || !label(words[k - 1])) continue;
    // Domain: label (dot label)+ ending in a known top-level domain.
    const j = k + 1;
    if (!label(words[j])) continue;
    let domain = words[j]!;
    let end = j;
    let lastTld = -1;
    while (words[end + 1] === 'dot' && label(words[end + 2])) {
      domain += `.${words[end + 2]}`;
      end += 2;
      if (TLDS.has(words[end]!)) lastTld = end;
    }
    if (lastTld < 0) continue;
    if (lastTld !== end)
      domain = domain
        .split('.')
        .slice(0, (lastTld - j) / 2 + 1)
        .join('.');
    // Local part: one label, extended backwards over "<label> dot|underscore|dash".
    let s = k - 1;
    let local = words[s]!;
    while (s >= 2 && EMAIL_JOINERS.has(words[s - 1]!) && label(words[s - 2])) {
      local = `${words[s - 2]}${EMAIL_JOINERS.get(words[s - 1]!)}${local}`;
      s -= 2;
    }
    out.push({ category: 'email', value: `${local}@${domain}`, ...span(tokens, s, lastTld - s + 1) });
  }
  return out;
}

function money(tokens: Token[], words: string[]): Candidate[] {
  const out: Candidate[] = [];
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    const sym = CURRENCY_SYMBOLS.get(w[0]!);
    if (sym !== undefined) {
      const n = literalNumber(w.slice(1));
      if (n !== null) out.push({ category: 'money', value: `${sym} ${n.toFixed(2)}`, ...span(tokens, i, 1) });
      continue;
    }
    const num = parseCardinal(words, i);
    if (!num) continue;
    const unit = words[i + num.length];
    if (unit === 'cents' || unit === 'cent') {
      if (num.value < 100)
        out.push({ category: 'money', value: `USD ${(num.value / 100).toFixed(2)}`, ...span(tokens, i, num.length + 1) });
      continue;
    }
    const currency = unit === undefined ? undefined : CURRENCY_WORDS.get(unit);
    if (currency === undefined) continue;
    let amount = num.value;
    let length = num.length + 1;
    // "... dollars and fifty cents" / "... dollars fifty cents"
    let j = i + length;
    if (words[j] === 'and') j++;
    const cents = parseCardinal(words, j);
    const centWord = cents ? words[j + cents.length] : undefined;
    if (cents && cents.value < 100 && (centWord === 'cents' || centWord === 'cent' || centWord === 'pence')) {
      amount += cents.value / 100;
      length = j + cents.length + 1 - i;
    }
    out.push({ category: 'money', value: `${currency} ${amount.toFixed(2)}`, ...span(tokens, i, length) });
    i += length - 1;
  }
  return out;
}

function dates(tokens: Token[], words: string[]): Candidate[] {
  const out: Candidate[] = [];
  const yearAfter = (j: number): { year: number | null; length: number } => {
    let k = j;
    if (words[k] === 'of' || words[k] === 'in') k++;
    const y = parseYear(words, k);
    return y ? { year: y.value, length: k - j + y.length } : { year: null, length: 0 };
  };
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    let m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(w);
    if (m) {
      const v = isoDate(Number(m[1]), Number(m[2]), Number(m[3]));
      if (v) out.push({ category: 'date', value: v, ...span(tokens, i, 1) });
      continue;
    }
    m = /^(\d{1,2})\/(\d{1,2})\/(\d{2}|\d{4})$/.exec(w);
    if (m) {
      const y = m[3]!.length === 2 ? 2000 + Number(m[3]) : Number(m[3]);
      const v = isoDate(y, Number(m[1]), Number(m[2]));
      if (v && Number(m[1]) <= 12) out.push({ category: 'date', value: v, ...span(tokens, i, 1) });
      continue;
    }
    // <month> [the] <day> [[of] <year>]
    const month = MONTHS.get(w);
    if (month !== undefined) {
      let j = i + 1;
      if (words[j] === 'the') j++;
      const day = parseDay(words, j);
      if (day) {
        const y = yearAfter(j + day.length);
        const v = isoDate(y.year, month, day.value);
        if (v) {
          out.push({ category: 'date', value: v, ...span(tokens, i, j + day.length + y.length - i) });
          i = j + day.length + y.length - 1;
        }
      }
      continue;
    }
    // [the] <day> [of] <month> [<year>]
    const s = w === 'the' ? i + 1 : i;
    const day = parseDay(words, s);
    if (day) {
      let j = s + day.length;
      if (words[j] === 'of') j++;
      const mo = words[j] === undefined ? undefined : MONTHS.get(words[j]!);
      if (mo !== undefined && words[j] !== 'may' && words[j] !== 'mar' && words[j] !== 'jan') {
        const y = yearAfter(j + 1);
        const v = isoDate(y.year, mo, day.value);
        if (v) {
          out.push({ category: 'date', value: v, ...span(tokens, i, j + 1 + y.length - i) });
          i = j + y.length;
        }
      } else if (mo === 5 || mo === 3 || mo === 1) {
        // "the fifth of may": only with "of" between, since "may" is also a verb.
        if (words[j - 1] === 'of') {
          const y = yearAfter(j + 1);
          const v = isoDate(y.year, mo, day.value);
          if (v) {
            out.push({ category: 'date', value: v, ...span(tokens, i, j + 1 + y.length - i) });
            i = j + y.length;
          }
        }
      }
    }
  }
  return out;
}

function digitRuns(tokens: Token[], words: string[], wanted: ReadonlySet<EntityCategory>): Candidate[] {
  const out: Candidate[] = [];
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    // A written international number: "+44 20 7946 0958" style tokens.
    if (wanted.has('phone_number') && /^\+\d/.test(w)) {
      const run = readDigits(words, i + 1);
      const digits = w.replace(/\D/g, '') + (run?.digits ?? '');
      if (digits.length >= 8 && digits.length <= 15) {
        out.push({ category: 'phone_number', value: `+${digits}`, ...span(tokens, i, 1 + (run?.length ?? 0)) });
        i += run?.length ?? 0;
        continue;
      }
    }
    const run = readDigits(words, i);
    if (!run) continue;
    const d = run.digits;
    let category: EntityCategory | null = null;
    if (wanted.has('credit_card') && d.length >= 13 && d.length <= 19 && luhnValid(d)) category = 'credit_card';
    else if (wanted.has('phone_number') && (d.length === 7 || d.length === 10 || (d.length === 11 && d[0] === '1')))
      category = 'phone_number';
    else if (wanted.has('spelled_digits') && run.spoken && d.length >= 3) category = 'spelled_digits';
    if (category !== null) out.push({ category, value: d, ...span(tokens, i, run.length) });
    i += run.length - 1;
  }
  return out;
}

/** Entities of the requested categories in `text`, in text order, without overlaps. */
export function detectEntities(text: string, categories: readonly string[]): Entity[] {
  const wanted = new Set(categories.filter((c): c is EntityCategory => (DETECTABLE_CATEGORIES as readonly string[]).includes(c)));
  if (wanted.size === 0 || text.trim() === '') return [];
  const tokens = tokenize(text);
  const words = tokens.map((t) => t.norm);
  const found: Candidate[] = [];
  if (wanted.has('email')) found.push(...emails(tokens, words));
  if (wanted.has('money')) found.push(...money(tokens, words));
  if (wanted.has('date')) found.push(...dates(tokens, words));
  if (wanted.has('credit_card') || wanted.has('phone_number') || wanted.has('spelled_digits'))
    found.push(...digitRuns(tokens, words, wanted));

  const rank = (c: Candidate) => PRIORITY.indexOf(c.category);
  found.sort((a, b) => b.end - b.start - (a.end - a.start) || rank(a) - rank(b) || a.start - b.start);
  const kept: Candidate[] = [];
  for (const c of found) {
    if (kept.every((k) => c.end <= k.start || c.start >= k.end)) kept.push(c);
  }
  kept.sort((a, b) => a.start - b.start);
  return kept.map((c) => ({ category: c.category, text: text.slice(c.start, c.end), value: c.value, start: c.start, end: c.end }));
}

/** Digit words known to the reader, exported for documentation tests. */
export const SPOKEN_DIGITS = [...DIGIT_WORDS.keys()];
