// Applying the `redact` option to a final's words and text, and guarding partials. Pure.
//
// A sensitive span of words becomes ONE token word (REDACTION_TOKENS) that lasts from the
// span's first word's start to its last word's end, so alignment and captions keep their
// timing and the client sees where something was said, not what. The `redactions` list
// carries the type and times of each span, never a value. The text is redacted from its own
// tokens the same way (a recognizer's text and words agree, but the text is never trusted to).
//
// Partials (guardPartial): a final is redacted whole, but a partial is a prefix that may still
// grow: "four one one" is three digits now and may be the start of a card. So under any
// digit policy a partial never shows a number run of three digits or more (masked as
// [NUMBER] until the final decides), and a run of one or two digits at the partial's end is
// held back (it may grow into three).
import type { RedactionPolicy } from '../../core/session-options.js';
import type { TimelineWord } from '../../core/final-event.js';
import { REDACTION_TOKENS, findSensitiveSpans, normalizeToken, numberRuns, type RedactionType } from './spans.js';
import { maskLeadingRun } from './carry.js';

export { REDACTION_TOKENS, type RedactionType } from './spans.js';

/** A redacted span on the session timeline (samples, decimal strings like the words'). */
export interface Redaction {
  type: RedactionType;
  startSample: string;
  endSample: string;
}

/** Replace each sensitive span of `words` by one word made by `merge` (given the span's first
 * and last word and the token). Also returns the spans, as pairs of those words. */
export function redactWords<W extends { word: string }>(
  words: readonly W[],
  policies: readonly RedactionPolicy[],
  merge: (first: W, last: W, token: string) => W,
): { words: W[]; spans: Array<{ type: RedactionType; first: W; last: W }> } {
  const spans = findSensitiveSpans(
    words.map((w) => w.word),
    policies,
  );
  if (spans.length === 0) return { words: [...words], spans: [] };
  const out: W[] = [];
  let next = 0;
  for (const s of spans) {
    out.push(...words.slice(next, s.first));
    out.push(merge(words[s.first]!, words[s.last]!, REDACTION_TOKENS[s.type]));
    next = s.last + 1;
  }
  out.push(...words.slice(next));
  return { words: out, spans: spans.map((s) => ({ type: s.type, first: words[s.first]!, last: words[s.last]! })) };
}

/** `text` with its sensitive spans replaced by tokens (whitespace between words kept as one space). */
export function redactText(text: string, policies: readonly RedactionPolicy[]): string {
  if (policies.length === 0 || text.trim() === '') return text;
  const tokens = text.split(/\s+/).filter((t) => t !== '');
  const { words } = redactWords(
    tokens.map((word) => ({ word })),
    policies,
    (first, last, token) => ({ word: keepPunctuation(first.word, last.word, token) }),
  );
  return words.map((w) => w.word).join(' ');
}

/** A token keeps the span's trailing sentence punctuation ("... one one." -> "[NUMBER].") and its
 * sentence-initial capital is not needed: tokens are upper case. */
function keepPunctuation(_first: string, last: string, token: string): string {
  const tail = /[.,;:!?]+$/.exec(last)?.[0] ?? '';
  return /\d/.test(tail) ? token : token + tail;
}

export interface RedactedFinal {
  text: string;
  words: TimelineWord[];
  redactions: Redaction[];
}

/** A final's recognizer text and timeline words under `policies`. */
export function redactFinal(text: string, words: readonly TimelineWord[], policies: readonly RedactionPolicy[]): RedactedFinal {
  if (policies.length === 0) return { text, words: [...words], redactions: [] };
  const redacted = redactWords(words, policies, (first, last, token) => ({
    word: token,
    startSample: first.startSample,
    endSample: last.endSample,
    confidence: null,
  }));
  return {
    text: redactText(text, policies),
    words: redacted.words,
    redactions: redacted.spans.map((s) => ({ type: s.type, startSample: s.first.startSample, endSample: s.last.endSample })),
  };
}

const DIGIT_POLICIES: readonly RedactionPolicy[] = ['pci', 'numbers', 'ssn', 'phone'];

/** A partial's words fit to show: redacted as a final would be, then every number run of three
 * digits or more masked, and a short run (or a "double"/"triple") at the end held back.
 * `heldBack`: words left out at the end (they are shown once the next partial or the final
 * resolves them). */
export function guardPartial<W extends { word: string }>(
  words: readonly W[],
  policies: readonly RedactionPolicy[],
  merge: (first: W, last: W, token: string) => W,
): { words: W[]; heldBack: number } {
  if (policies.length === 0) return { words: [...words], heldBack: 0 };
  const redacted = redactWords(words, policies, merge).words;
  if (!policies.some((p) => DIGIT_POLICIES.includes(p))) return { words: redacted, heldBack: 0 };
  const norm = redacted.map((w) => normalizeToken(w.word));
  // Held back: a trailing run (it may grow), and a trailing "double"/"triple"/"oh" that would
  // start one.
  let end = redacted.length;
  const runs = numberRuns(norm);
  const lastRun = runs[runs.length - 1];
  if (lastRun !== undefined && lastRun[lastRun.length - 1]!.to === end) end = lastRun[0]!.from;
  while (end > 0 && ['double', 'triple', 'oh', 'o'].includes(norm[end - 1]!)) end--;
  const out: W[] = [];
  let next = 0;
  for (const run of runs) {
    const from = run[0]!.from;
    const to = run[run.length - 1]!.to;
    if (from >= end || run.reduce((n, u) => n + u.digits.length, 0) < 3) continue;
    out.push(...redacted.slice(next, from), merge(redacted[from]!, redacted[to - 1]!, REDACTION_TOKENS.number));
    next = to;
  }
  out.push(...redacted.slice(next, end));
  return { words: out, heldBack: redacted.length - end };
}

/** A partial's text as guardPartial lets it be shown (the recognizer's partial is text only:
 * its words are its whitespace-separated tokens), its leading run masked when it makes three
 * digits with the `carried` ones the last final ended with (carry.ts). Without policies, the
 * text as it is. */
export function guardPartialText(text: string, policies: readonly RedactionPolicy[], carried = 0): string {
  if (policies.length === 0) return text;
  const words = text
    .split(/\s+/)
    .filter((w) => w !== '')
    .map((word) => ({ word }));
  const merge = (_first: { word: string }, _last: { word: string }, token: string) => ({ word: token });
  const guarded = guardPartial(words, policies, merge).words;
  const shown = policies.some((p) => DIGIT_POLICIES.includes(p)) ? maskLeadingRun(guarded, carried, merge).words : guarded;
  return shown.map((w) => w.word).join(' ');
}
