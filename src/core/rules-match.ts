// Matching live rules (docs/rules.md) against what a session says: a phrase in a final's
// text, a regular expression, an entity, a silence before speech, two legs talking at once.
// Pure: the session layer (src/session/rule-alerts.ts) keeps the per-session state (where
// speech last ended, each leg's recent speech) and hands it in; the regular expression engine
// and the entity detector are given as functions.
import { ruleWords, type RuleCondition } from './rules.js';

export interface TextSpan {
  /** JavaScript string offsets into the text, `end` exclusive. */
  start: number;
  end: number;
}

export interface Interval {
  startMs: number;
  endMs: number;
}

/** Text conditions read with these: RE2 (never backtracks) and the entity detector. */
export interface TextMatchers {
  /** The first match of the rule's pattern, or null. */
  pattern(pattern: string, caseSensitive: boolean, text: string): TextSpan | null;
  /** The entities of one category found in the text. */
  entities(text: string, category: string): TextSpan[];
}

interface WordAt {
  word: string;
  start: number;
  end: number;
}

function wordsAt(text: string): WordAt[] {
  return [...text.matchAll(/[\p{L}\p{N}]+(?:['’][\p{L}\p{N}]+)*/gu)].map((m) => ({
    word: m[0].toLowerCase().replace(/’/g, "'"),
    start: m.index,
    end: m.index + m[0].length,
  }));
}

/** The first place (leftmost, then the first phrase listed) where a phrase's words stand
 * together in the text: whole words, case-insensitive, punctuation between them ignored. */
export function findPhrase(text: string, phrases: readonly string[]): TextSpan | null {
  const words = wordsAt(text);
  const wanted = phrases.map(ruleWords).filter((p) => p.length > 0);
  for (let i = 0; i < words.length; i++) {
    for (const p of wanted) {
      if (i + p.length > words.length) continue;
      if (p.every((w, k) => words[i + k]!.word === w)) return { start: words[i]!.start, end: words[i + p.length - 1]!.end };
    }
  }
  return null;
}

/** Where a text condition matches the text, or null (silence and talk-over are not text). */
export function matchText(c: RuleCondition, text: string, m: TextMatchers): TextSpan | null {
  switch (c.kind) {
    case 'phrases':
      return findPhrase(text, c.phrases);
    case 'pattern':
      return m.pattern(c.pattern, c.caseSensitive, text);
    case 'entity':
      return m.entities(text, c.entity)[0] ?? null;
    default:
      return null;
  }
}

/** The silence from the end of the last speech to the start of this speech, when it is
 * longer than `seconds` (`lastSpeechEndMs` 0 at the session's start). */
export function silenceBefore(lastSpeechEndMs: number, speechStartMs: number, seconds: number): Interval | null {
  return speechStartMs - lastSpeechEndMs > seconds * 1000 ? { startMs: lastSpeechEndMs, endMs: speechStartMs } : null;
}

/** Words joined into runs of speech: a pause shorter than `joinMs` does not end a run. */
export function speechRuns(words: readonly Interval[], joinMs: number): Interval[] {
  const sorted = [...words].filter((w) => w.endMs > w.startMs).sort((a, b) => a.startMs - b.startMs);
  const runs: Interval[] = [];
  for (const w of sorted) {
    const last = runs[runs.length - 1];
    if (last && w.startMs - last.endMs < joinMs) last.endMs = Math.max(last.endMs, w.endMs);
    else runs.push({ ...w });
  }
  return runs;
}

/** The first stretch where a run of `a` and a run of `b` overlap for longer than `seconds`. */
export function overlapLongerThan(a: readonly Interval[], b: readonly Interval[], seconds: number): Interval | null {
  for (const x of a) {
    for (const y of b) {
      const startMs = Math.max(x.startMs, y.startMs);
      const endMs = Math.min(x.endMs, y.endMs);
      if (endMs - startMs > seconds * 1000) return { startMs, endMs };
    }
  }
  return null;
}

/** Whether a rule reads this leg's event: its speaker scope, and partials only if asked. */
export function ruleReads(
  rule: { speaker: string | null; partials: boolean; enabled: boolean },
  legSpeaker: string | null,
  final: boolean,
): boolean {
  if (!rule.enabled) return false;
  if (rule.speaker !== null && rule.speaker !== legSpeaker) return false;
  return final || rule.partials;
}
