// vocabularyHints for pocketsphinx: which words to add and boost, how to pronounce words the
// dictionary lacks, and the small language model that boosts them. Pure (the dictionary is
// passed in as a lookup function); the backend applies the result to its decoder.
//
// Method (docs/options.md):
// - Hints are split into words (lower case; letters, digits and apostrophes).
// - A word in the dictionary keeps its pronunciations. A missing word gets a pronunciation
//   derived from the dictionary: the fewest dictionary words (each of at least two letters,
//   or "a") that spell it, their pronunciations joined ("dashboards" -> "dash" + "boards").
//   No letter-to-sound model ships with Debian's pocketsphinx; a word that cannot be spelt
//   from dictionary words is not added, and the session is told which ones.
// - The hint words form a unigram language model (uniform), interpolated with the main model
//   at HINT_WEIGHT: each hint word gets at least HINT_WEIGHT / (n + 1) probability wherever
//   it may occur, while every other word keeps (1 - HINT_WEIGHT) of its probability.

/** Interpolation weight of the hint model (measured on the dev clips: docs/options.md). */
export const HINT_WEIGHT = 0.05;
/** Longest word considered (letters); longer tokens are not hint words. */
const MAX_WORD = 40;

export function hintWords(hints: readonly string[]): string[] {
  const out: string[] = [];
  for (const hint of hints) {
    for (const raw of hint.toLowerCase().split(/[\s\-_/]+/)) {
      const w = raw.replace(/[^a-z0-9']/g, '').replace(/^'+|'+$/g, '');
      if (w.length > 0 && w.length <= MAX_WORD && !out.includes(w)) out.push(w);
    }
  }
  return out;
}

export type Lookup = (word: string) => string | null;

/** A pronunciation for a word the dictionary lacks, spelt from dictionary words; null when
 * none spells it. */
export function derivePronunciation(word: string, lookup: Lookup): string | null {
  const known = lookup(word);
  if (known !== null) return known;
  const n = word.length;
  // best[i]: fewest pieces spelling word[0..i), with the pronunciation so far
  const best: Array<{ pieces: number; phones: string } | null> = Array.from({ length: n + 1 }, () => null);
  best[0] = { pieces: 0, phones: '' };
  for (let i = 0; i < n; i++) {
    const from = best[i];
    if (from === null) continue;
    for (let j = i + 1; j <= n; j++) {
      const piece = word.slice(i, j);
      if (piece.length < 2 && piece !== 'a') continue;
      const phones = lookup(piece);
      if (phones === null) continue;
      const cand = { pieces: from.pieces + 1, phones: from.phones ? `${from.phones} ${phones}` : phones };
      const cur = best[j];
      if (cur === null || cand.pieces < cur.pieces) best[j] = cand;
    }
  }
  return best[n]?.phones ?? null;
}

/** A unigram ARPA model giving every hint word (and the sentence end) the same probability. */
export function hintArpa(words: readonly string[]): string {
  const logp = Math.log10(1 / (words.length + 1)).toFixed(6);
  const lines = ['\\data\\', `ngram 1=${words.length + 2}`, '', '\\1-grams:', '-99.000000 <s>', `${logp} </s>`];
  for (const w of words) lines.push(`${logp} ${w}`);
  lines.push('', '\\end\\', '');
  return lines.join('\n');
}

export interface VocabularyPlan {
  /** Words boosted, with the pronunciation to add when the dictionary lacks them (null when
   * the dictionary has the word). */
  entries: Array<{ word: string; phones: string | null; derived: boolean }>;
  /** Words that could not be given a pronunciation: not applied. */
  unknown: string[];
}

export function planVocabulary(hints: readonly string[], lookup: Lookup): VocabularyPlan {
  const entries: VocabularyPlan['entries'] = [];
  const unknown: string[] = [];
  for (const word of hintWords(hints)) {
    if (lookup(word) !== null) {
      entries.push({ word, phones: null, derived: false });
      continue;
    }
    const phones = derivePronunciation(word, lookup);
    if (phones === null) unknown.push(word);
    else entries.push({ word, phones, derived: true });
  }
  return { entries, unknown };
}
