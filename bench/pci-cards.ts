// How `pci` names cards: recall on cards read with one digit misheard, and false alarms on
// speech that holds numbers but no card, for today's rule against the Luhn-only rule it
// replaced (computed here from the same number runs), in the same run.
//
// Cards: 2,000 Luhn-valid 16-digit numbers spoken digit by digit, each with one digit heard
// as another word (a content word from the clips' transcripts) at a random place, and 2,000
// read correctly but for one wrong digit (Luhn fails). Non-cards: the dev set's reference
// transcripts, and 2,000 each of phone numbers with extensions, two phone numbers said in a
// row with "or", a phone number then any word then a short number, order numbers of 8-11 digits after "number is", amounts and dates.
//
// Run: npx vite-node bench/pci-cards.ts
import { loadClips } from '../test/helpers/audio.js';
import { findSensitiveSpans, normalizeToken, numberRuns } from '../src/text/redaction/spans.js';
import { luhnValid } from '../src/text/numbers.js';

const N = 2000;
let seed = 7;
const rand = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!;
const digitsOf = (n: number) => Array.from({ length: n }, () => String(Math.floor(rand() * 10))).join('');
const NAMES = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];
const spell = (d: string) => [...d].map((c) => NAMES[Number(c)]!);
const clips = loadClips();
const contentWords = [...new Set(clips.flatMap((c) => c.reference.toLowerCase().split(/\s+/)).filter((w) => /^[a-z]{4,8}$/.test(w)))];

function luhnCard(): string {
  const body = `4${digitsOf(14)}`;
  for (let d = 0; d < 10; d++) if (luhnValid(body + d)) return body + d;
  throw new Error('unreachable');
}

/** The rule this replaced: a window of a run with 13-19 digits that passes Luhn. */
function luhnOnlyCards(words: string[]): number {
  let n = 0;
  for (const run of numberRuns(words.map(normalizeToken))) {
    let found = false;
    for (let a = 0; a < run.length && !found; a++) {
      let d = '';
      for (let b = a; b < run.length; b++) {
        d += run[b]!.digits;
        if (d.length > 19) break;
        if (d.length >= 13 && luhnValid(d)) found = true;
      }
    }
    if (found) n++;
  }
  return n;
}
const cardsNow = (words: string[]) => findSensitiveSpans(words, ['pci']).filter((s) => s.type === 'card_number').length;

const misheard: string[][] = [];
const wrongDigit: string[][] = [];
for (let i = 0; i < N; i++) {
  const said = ['my', 'card', 'is', ...spell(luhnCard()), 'thanks'];
  said[3 + Math.floor(rand() * 16)] = pick(contentWords);
  misheard.push(said);
  const card = [...luhnCard()];
  const k = Math.floor(rand() * 16);
  card[k] = String((Number(card[k]) + 1 + Math.floor(rand() * 9)) % 10);
  wrongDigit.push(['the', 'number', 'is', ...spell(card.join('')), 'okay']);
}
const nonCards: Record<string, string[][]> = {
  'dev set references': clips.map((c) => c.reference.toLowerCase().split(/\s+/)),
  'phone + extension': Array.from({ length: N }, () => [
    'call',
    ...spell(`${pick(['415', '650', '212'])}${digitsOf(7)}`),
    pick(['extension', 'ext']),
    ...spell(digitsOf(3 + Math.floor(rand() * 3))),
  ]),
  'two phones with "or"': Array.from({ length: N }, () => [...spell(digitsOf(10)), 'or', ...spell(digitsOf(10))]),
  'order number 8-11 digits': Array.from({ length: N }, () => [
    'order',
    'number',
    'is',
    ...spell(digitsOf(8 + Math.floor(rand() * 4))),
    'please',
  ]),
  'phone, any word, 2-3 digits': Array.from({ length: N }, () => [
    ...spell(digitsOf(10)),
    pick(contentWords),
    ...spell(digitsOf(2 + Math.floor(rand() * 2))),
  ]),
  'phone, any word, 4 digits': Array.from({ length: N }, () => [...spell(digitsOf(10)), pick(contentWords), ...spell(digitsOf(4))]),
  'amounts and dates': Array.from({ length: N }, () => [
    'that',
    'is',
    'one',
    'thousand',
    'two',
    'hundred',
    'dollars',
    'on',
    'december',
    'twenty',
    'sixth',
    'twenty',
    'twenty',
    'six',
  ]),
};

const share = (xs: string[][], f: (w: string[]) => number) => xs.filter((w) => f(w) > 0).length / xs.length;
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
console.log('recall (share of cards named card_number)      Luhn-only   now');
console.log(
  `  one digit heard as a word                      ${pct(share(misheard, luhnOnlyCards)).padStart(6)}   ${pct(share(misheard, cardsNow)).padStart(6)}`,
);
console.log(
  `  one digit heard wrong (Luhn fails)             ${pct(share(wrongDigit, luhnOnlyCards)).padStart(6)}   ${pct(share(wrongDigit, cardsNow)).padStart(6)}`,
);
console.log('false alarms (share of texts with a card_number)');
for (const [name, texts] of Object.entries(nonCards)) {
  console.log(
    `  ${name.padEnd(45)}  ${pct(share(texts, luhnOnlyCards)).padStart(6)}   ${pct(share(texts, cardsNow)).padStart(6)}   (${texts.length} texts)`,
  );
}
