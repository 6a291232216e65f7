// A number said across two segments of a live session (docs/redaction.md, "Real-time
// sessions"). Pure. Each final is redacted on its own, so "one one" ending one final and "one"
// starting the next would be three digits in a row across the two. The session carries the
// digits of the run its last final ended with; a run at the start of the next final (or of a
// partial) that makes three or more with them is masked as [NUMBER]. Carrying across any pause
// errs on the side of masking: a short number right after another one at a segment's end is
// masked too.
import type { TimelineWord } from '../../core/final-event.js';
import type { RedactionPolicy } from '../../core/session-options.js';
import { REDACTION_TOKENS, normalizeToken, numberRuns, type RedactionType } from './spans.js';

/** A final's redacted text, words and spans (apply.ts's RedactedFinal). */
interface Redacted {
  text: string;
  words: TimelineWord[];
  redactions: Array<{ type: RedactionType; startSample: string; endSample: string }>;
}

const digitCount = (run: ReadonlyArray<{ digits: string }>) => run.reduce((n, u) => n + u.digits.length, 0);

/** The number run `words` start with: its end (exclusive) and digits; null when they do not
 * start with one. */
function leadingRun(words: readonly { word: string }[]): { end: number; digits: number } | null {
  const first = numberRuns(words.map((w) => normalizeToken(w.word)))[0];
  if (!first || first[0]!.from !== 0) return null;
  return { end: first[first.length - 1]!.to, digits: digitCount(first) };
}

/** `words` with their leading run replaced by one [NUMBER] word made by `merge`, when it and
 * the `carried` digits make three or more; `masked` names the run's first and last word. */
export function maskLeadingRun<W extends { word: string }>(
  words: readonly W[],
  carried: number,
  merge: (first: W, last: W, token: string) => W,
): { words: W[]; masked: { first: W; last: W } | null } {
  const lead = carried > 0 ? leadingRun(words) : null;
  if (!lead || carried + lead.digits < 3) return { words: [...words], masked: null };
  const first = words[0]!;
  const last = words[lead.end - 1]!;
  return { words: [merge(first, last, REDACTION_TOKENS.number), ...words.slice(lead.end)], masked: { first, last } };
}

/** The digits a session carries after a final whose shown text is `text`: those of the run
 * it ends with, plus `carried` when that run is all of it (an empty final carries them on). */
export function digitsCarried(text: string, carried: number): number {
  const norm = text
    .split(/\s+/)
    .filter((t) => t !== '')
    .map(normalizeToken);
  if (norm.length === 0) return carried;
  const runs = numberRuns(norm);
  const last = runs[runs.length - 1];
  if (!last || last[last.length - 1]!.to !== norm.length) return 0;
  return digitCount(last) + (last[0]!.from === 0 ? carried : 0);
}

/** A redacted final continued from the `carried` digits (under `numbers`, the policy that
 * masks any three digits in a row): its leading run masked as above in its text and words, the
 * span added to its redactions. */
export function continueFinal<F extends Redacted>(final: F, carried: number, policies: readonly RedactionPolicy[]): F {
  if (!policies.includes('numbers') || carried === 0) return final;
  const tokens = final.text
    .split(/\s+/)
    .filter((t) => t !== '')
    .map((word) => ({ word }));
  const text = maskLeadingRun(tokens, carried, (_f, _l, token) => ({ word: token }));
  const words = maskLeadingRun<TimelineWord>(final.words, carried, (first, last, token) => ({
    word: token,
    startSample: first.startSample,
    endSample: last.endSample,
    confidence: null,
  }));
  if (!text.masked && !words.masked) return final;
  return {
    ...final,
    text: text.words.map((w) => w.word).join(' '),
    words: words.words,
    redactions: words.masked
      ? [{ type: 'number', startSample: words.masked.first.startSample, endSample: words.masked.last.endSample }, ...final.redactions]
      : final.redactions,
  };
}
