// Which words of a text are sensitive, for the `redact` option (docs/redaction.md). Pure.
//
// Recognizer output spells numbers out ("four one one one ..."), and readable text or a
// client writes them ("4111 1111"), so a number is read from both: digit words, "oh", "double
// five", teens and tens ("forty one eleven" reads 4111, as people group card digits),
// "hundred"/"thousand" (they add zeros: the digit count matters, not the value), and any token
// holding a digit character (its digits). A run of such tokens is one number; the policies
// then decide what in it is sensitive:
// - pci: a card number is a window of the run whose digits are 13-19 long and pass the Luhn
//   check; failing that, a whole run of 13-19 digits (a recognizer mishears digits, and a
//   misheard card fails Luhn); failing that, one misheard digit: two runs with one word between
//   them, or a 12-digit run with one content word beside it, that make 13-19 counting that word
//   as the lost digit (cardWithStandIn). Near a card (CARD_CONTEXT_WORDS either side) a run of
//   3-4 digits is its expiry (when it reads as MM YY, or follows a month name) or its code.
// - ssn: a run of exactly 9 digits.
// - phone: 7 digits, 10, or 11 starting with 1, or a written number starting with "+" (8-15).
// - email: written and spoken addresses, as entity detection reads them (src/text/entities.ts).
// - numbers: whatever run of 3 or more digits is left (Deepgram's `redact=numbers`).
// Spans are whole words; each becomes one token. Lookups are Maps (see src/text/numbers.ts).
import type { RedactionPolicy } from '../../core/session-options.js';
import { detectEntities } from '../entities.js';
import { DIGIT_WORDS, TEENS, TENS, luhnValid, wordTable } from '../numbers.js';

export type RedactionType = 'card_number' | 'card_expiry' | 'card_security_code' | 'ssn' | 'phone' | 'email' | 'number';

export const REDACTION_TOKENS: Readonly<Record<RedactionType, string>> = {
  card_number: '[CARD_NUMBER]',
  card_expiry: '[CARD_EXPIRY]',
  card_security_code: '[CARD_CVV]',
  ssn: '[SSN]',
  phone: '[PHONE]',
  email: '[EMAIL]',
  number: '[NUMBER]',
};

/** Words (either side of a card) within which a short number counts as its expiry or code. */
export const CARD_CONTEXT_WORDS = 24;

/** A sensitive span: word indices `first`..`last`, inclusive. */
export interface SensitiveSpan {
  type: RedactionType;
  first: number;
  last: number;
}

/** A piece of a number run: words `from`..`to` (exclusive) reading as `digits`. */
interface NumberUnit {
  from: number;
  to: number;
  digits: string;
}

const MONTH_WORDS = new Set([
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
  'jan',
  'feb',
  'mar',
  'apr',
  'jun',
  'jul',
  'aug',
  'sep',
  'sept',
  'oct',
  'nov',
  'dec',
]);
const SCALE_ZEROS = wordTable({ hundred: '00', thousand: '000', million: '000000' });

/** Lower case, outer punctuation removed (a recognizer word or a written token). */
export function normalizeToken(word: string): string {
  return word.toLowerCase().replace(/^[^\p{L}\p{N}+$€£#]+|[^\p{L}\p{N}]+$/gu, '');
}

/** The number unit starting at norm[i], or null when norm[i] is not part of a number. `inRun`:
 * a run has started (a lone "oh" is a word, not a zero). */
export function numberUnitAt(norm: readonly string[], i: number, inRun: boolean): NumberUnit | null {
  const t = norm[i]!;
  if (/\d/.test(t)) return { from: i, to: i + 1, digits: t.replace(/\D/g, '') };
  const next = norm[i + 1];
  if (t === 'double' || t === 'triple') {
    const d = next === undefined ? undefined : (DIGIT_WORDS.get(next) ?? (/^\d$/.test(next) ? next : undefined));
    return d === undefined ? null : { from: i, to: i + 2, digits: d.repeat(t === 'double' ? 2 : 3) };
  }
  if (t === 'oh' || t === 'o') {
    if (!inRun && (next === undefined || numberUnitAt(norm, i + 1, true) === null || next === 'oh' || next === 'o')) return null;
    return { from: i, to: i + 1, digits: '0' };
  }
  const digit = DIGIT_WORDS.get(t);
  if (digit !== undefined) return { from: i, to: i + 1, digits: digit };
  const teen = TEENS.get(t);
  if (teen !== undefined) return { from: i, to: i + 1, digits: String(teen) };
  const tens = TENS.get(t);
  if (tens !== undefined) {
    const unit = next === undefined || next === 'zero' || next === 'oh' || next === 'o' ? undefined : DIGIT_WORDS.get(next);
    return unit === undefined ? { from: i, to: i + 1, digits: String(tens) } : { from: i, to: i + 2, digits: String(tens + Number(unit)) };
  }
  // Alone ("a hundred", "a thousand") a scale word is still a number: readable text writes it
  // as 100 or 1000.
  const zeros = SCALE_ZEROS.get(t);
  if (zeros !== undefined) return { from: i, to: i + 1, digits: inRun ? zeros : `1${zeros}` };
  return null;
}

/** The maximal number runs of a token list, each as its units. */
export function numberRuns(norm: readonly string[]): NumberUnit[][] {
  const runs: NumberUnit[][] = [];
  let run: NumberUnit[] = [];
  for (let i = 0; i < norm.length;) {
    const unit = numberUnitAt(norm, i, run.length > 0);
    if (unit === null) {
      if (run.length > 0) runs.push(run);
      run = [];
      i++;
      continue;
    }
    run.push(unit);
    i = unit.to;
  }
  if (run.length > 0) runs.push(run);
  return runs;
}

function digitsOf(units: readonly NumberUnit[]): string {
  return units.map((u) => u.digits).join('');
}

/** The longest (then earliest) window of units reading as a Luhn-valid 13-19 digit number. */
function cardWindow(units: readonly NumberUnit[]): [number, number] | null {
  let best: [number, number] | null = null;
  for (let a = 0; a < units.length; a++) {
    let digits = '';
    for (let b = a; b < units.length; b++) {
      digits += units[b]!.digits;
      if (digits.length > 19) break;
      if (digits.length >= 13 && luhnValid(digits) && (best === null || b - a > best[1] - best[0])) best = [a, b];
    }
  }
  return best;
}

/** Words that part two numbers or frame one ("extension", "and", "is"): never taken for a
 * misheard digit, so a phone number and its extension stay two numbers. */
const NOT_A_DIGIT = new Set([
  'a',
  'an',
  'and',
  'or',
  'the',
  'is',
  'it',
  'its',
  "it's",
  'my',
  'your',
  'our',
  'to',
  'then',
  'than',
  'from',
  'through',
  'until',
  'number',
  'numbers',
  'card',
  'account',
  'extension',
  'ext',
  'x',
  'plus',
  'minus',
  'dash',
  'hyphen',
  'point',
  'dot',
  'comma',
  'dollars',
  'dollar',
  'cents',
  'percent',
  'pounds',
  'euros',
  'code',
  'pin',
  'expires',
  'expiry',
  'exp',
  'phone',
  'call',
  'at',
  'on',
  'in',
  'of',
  'by',
]);

/** A word that may stand for one misheard digit: letters only, short, and no framing word. */
function mayStandForDigit(token: string | undefined): boolean {
  return token !== undefined && /^\p{L}{2,10}$/u.test(token) && !NOT_A_DIGIT.has(token);
}

/** Whether digits counted this way are a card's length. */
const cardLength = (n: number) => n >= 13 && n <= 19;

/** Cards read with one digit misheard as a word, among the runs no other rule made a card:
 * `runs[i]` and `runs[i + 1]` with one stand-in word between them, or a 12-digit run with a
 * stand-in word right before or after it. Bounded: one stand-in word a card, at least four
 * digits either side of it, and never a framing word (NOT_A_DIGIT), so a phone number and its
 * extension are not joined. Returns word spans (inclusive). */
function cardsWithStandIn(runs: readonly NumberUnit[][], norm: readonly string[]): Array<{ runs: number[]; first: number; last: number }> {
  const found: Array<{ runs: number[]; first: number; last: number }> = [];
  const used = new Set<number>();
  for (let i = 0; i < runs.length; i++) {
    if (used.has(i)) continue;
    const run = runs[i]!;
    const from = run[0]!.from;
    const to = run[run.length - 1]!.to;
    const digits = digitsOf(run).length;
    const next = runs[i + 1];
    const nextDigits = next ? digitsOf(next).length : 0;
    // Cards are read in groups of four: both sides of a misheard digit keep at least four
    // (a shorter side beside 12-15 digits is caught by the rules above or below).
    const joinable = next && !used.has(i + 1) && next[0]!.from === to + 1 && digits >= 4 && nextDigits >= 4;
    if (joinable && mayStandForDigit(norm[to]) && cardLength(digits + 1 + nextDigits)) {
      found.push({ runs: [i, i + 1], first: from, last: next![next!.length - 1]!.to - 1 });
      used.add(i).add(i + 1);
      continue;
    }
    if (digits === 12 && (mayStandForDigit(norm[from - 1]) || mayStandForDigit(norm[to]))) {
      found.push({ runs: [i], first: from, last: to - 1 });
      used.add(i);
    }
  }
  return found;
}

function looksLikeExpiry(digits: string, afterMonthName: boolean): boolean {
  if (afterMonthName) return digits.length >= 2 && digits.length <= 4;
  if (digits.length !== 4) return false;
  const month = Number(digits.slice(0, 2));
  return month >= 1 && month <= 12;
}

function isPhone(units: readonly NumberUnit[], norm: readonly string[]): boolean {
  const d = digitsOf(units);
  if (norm[units[0]!.from]!.startsWith('+')) return d.length >= 8 && d.length <= 15;
  return d.length === 7 || d.length === 10 || (d.length === 11 && d[0] === '1');
}

/** Email spans as entity detection finds them, mapped from characters back to words. */
function emailSpans(words: readonly string[]): SensitiveSpan[] {
  const starts: number[] = [];
  let text = '';
  for (const w of words) {
    starts.push(text.length);
    text += `${w.replace(/\s+/g, '_')} `;
  }
  const wordAt = (offset: number) => {
    let k = 0;
    while (k + 1 < starts.length && starts[k + 1]! <= offset) k++;
    return k;
  };
  return detectEntities(text, ['email']).map((e) => ({ type: 'email' as const, first: wordAt(e.start), last: wordAt(e.end - 1) }));
}

/** The sensitive spans of `words` under `policies`, in word order, never overlapping. */
export function findSensitiveSpans(words: readonly string[], policies: readonly RedactionPolicy[]): SensitiveSpan[] {
  if (policies.length === 0 || words.length === 0) return [];
  const want = new Set(policies);
  const norm = words.map(normalizeToken);
  const spans: SensitiveSpan[] = want.has('email') ? emailSpans(words) : [];
  const taken = (from: number, to: number) => spans.some((s) => s.first < to && s.last >= from);
  const add = (type: RedactionType, units: readonly NumberUnit[]) => {
    if (units.length > 0) spans.push({ type, first: units[0]!.from, last: units[units.length - 1]!.to - 1 });
  };

  // Cards first (they decide what is "near a card"), then every other piece of every run.
  const pieces: NumberUnit[][] = [];
  const cards: Array<{ first: number; last: number }> = [];
  const runs = numberRuns(norm);
  const plainRuns: NumberUnit[][] = [];
  for (const run of runs) {
    if (taken(run[0]!.from, run[run.length - 1]!.to)) {
      // Split around the email: what is left of the run on each side is a number of its own.
      let piece: NumberUnit[] = [];
      for (const u of run) {
        if (taken(u.from, u.to)) {
          pieces.push(piece);
          piece = [];
        } else piece.push(u);
      }
      pieces.push(piece);
      continue;
    }
    const card = want.has('pci') ? (cardWindow(run) ?? (cardLength(digitsOf(run).length) ? [0, run.length - 1] : null)) : null;
    if (card === null) {
      plainRuns.push(run);
      continue;
    }
    const cardUnits = run.slice(card[0], card[1] + 1);
    add('card_number', cardUnits);
    cards.push({ first: cardUnits[0]!.from, last: cardUnits[cardUnits.length - 1]!.to - 1 });
    pieces.push(run.slice(0, card[0]), run.slice(card[1] + 1));
  }
  const misheard = want.has('pci') ? cardsWithStandIn(plainRuns, norm) : [];
  const inMisheard = new Set(misheard.flatMap((c) => c.runs));
  for (const c of misheard) {
    spans.push({ type: 'card_number', first: c.first, last: c.last });
    cards.push(c);
  }
  pieces.push(...plainRuns.filter((_, i) => !inMisheard.has(i)));
  for (const piece of pieces) {
    if (piece.length === 0) continue;
    const digits = digitsOf(piece);
    const from = piece[0]!.from;
    const to = piece[piece.length - 1]!.to;
    const nearCard = cards.some((c) => from <= c.last + CARD_CONTEXT_WORDS && to - 1 >= c.first - CARD_CONTEXT_WORDS);
    if (want.has('pci') && nearCard && digits.length >= 2 && digits.length <= 4) {
      const afterMonth = from > 0 && MONTH_WORDS.has(norm[from - 1]!);
      if (looksLikeExpiry(digits, afterMonth)) {
        spans.push({ type: 'card_expiry', first: afterMonth ? from - 1 : from, last: to - 1 });
        continue;
      }
      if (digits.length >= 3) {
        add('card_security_code', piece);
        continue;
      }
    }
    if (want.has('ssn') && digits.length === 9) add('ssn', piece);
    else if (want.has('phone') && isPhone(piece, norm)) add('phone', piece);
    else if (want.has('numbers') && digits.length >= 3) add('number', piece);
  }
  return spans.sort((a, b) => a.first - b.first);
}
