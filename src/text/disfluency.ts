// removeDisfluencies: filler words dropped from a final's text and word list. Pure.
//
// What counts as a filler (docs/options.md):
// - hesitation sounds that carry no content in any context: uh, um, er, ah, hmm and their
//   common spellings (uhm, erm, umm, hm, mhm is NOT one: it is a "yes");
// - engine filler tokens that are not words at all: `<sil>`, `<s>`, `</s>`, `[noise]`,
//   `++garbage++` and similar bracketed tokens some recognizers emit.
// Not removed: "you know", "I mean", "like", "so". Each is also an ordinary phrase ("do you
// know the number", "I mean it", "I like it"), and on recognizer output without prosody or
// punctuation there is no reliable way to tell the filler use from the content use, so
// removing them would delete real words. Likewise "ah" before a name ("ah, Smith") is
// removed, which loses nothing of meaning.
// Matching is on whole words, case-insensitive, ignoring punctuation glued to the word
// ("um," -> removed together with its comma). Spacing is normalised to single spaces.
import { REDACTION_TOKENS } from './redaction/spans.js';

const REDACTION_TOKEN_SET = new Set(Object.values(REDACTION_TOKENS));
const FILLERS = new Set(['uh', 'uhh', 'uhm', 'um', 'umm', 'er', 'erm', 'err', 'ah', 'ahh', 'hmm', 'hm', 'hmmm', 'mm']);

/** True for a token that is a filler (see above). */
export function isFiller(token: string): boolean {
  const t = token.trim().toLowerCase();
  if (t === '') return false;
  // A redaction token ([CARD_NUMBER], [NUMBER]) looks like an engine marker but marks where
  // something was said: it stays.
  if (REDACTION_TOKEN_SET.has(token.trim().replace(/[.,;:!?]+$/, ''))) return false;
  // Engine markers: <sil>, </s>, [noise], ++garbage++.
  if (/^<\/?[a-z_]*>$/.test(t) || /^\[[a-z_]*\]$/.test(t) || /^\+\+[a-z_]*\+\+$/.test(t)) return true;
  const bare = t.replace(/^[^\p{L}]+|[^\p{L}]+$/gu, '');
  return FILLERS.has(bare);
}

export interface CleanedText<W> {
  text: string;
  words: W[];
  /** Number of filler tokens removed. */
  removed: number;
}

/** Remove fillers from `text` and from `words` (objects with a `word` field). Word times are
 * untouched: the kept words keep their own times. */
export function removeDisfluencies<W extends { word: string }>(text: string, words: readonly W[]): CleanedText<W> {
  const tokens = text.split(/\s+/).filter((t) => t !== '');
  const kept = tokens.filter((t) => !isFiller(t));
  return {
    text: kept.join(' '),
    words: words.filter((w) => !isFiller(w.word)),
    removed: tokens.length - kept.length,
  };
}
