// Reading post-call categories (categories.ts) against a finished call: each condition's test
// in its window and speaker scope, negation, and the hits a match is stored with. Pure: the
// regular expression engine and the entity detector are given (rules-match.ts TextMatchers).
import { ruleWords, spotPhrase } from '../rules.js';
import type { TextMatchers } from '../rules-match.js';
import type { CategoryCondition, CategoryInput, CategoryWindow } from './categories.js';
import { legRuns, union, type AnalyticsLeg, type ConversationFigures } from './characteristics.js';
import type { Interval } from './levels.js';

/** At most this many hits are kept a condition (a phrase said 200 times is one fact). */
export const MAX_HITS_PER_CONDITION = 20;

export interface CategoryHit {
  /** Index of the condition in the category. */
  condition: number;
  startMs: number;
  endMs: number;
  speaker: string | null;
  /** The words or text matched; absent for silence, interruptions, talk share and negations. */
  text?: string;
  /** A negated condition holds over its whole window: the hit is the window. */
  negated?: true;
  /** Phrase spotting: found in the audio by the keyphrase search, not in the transcript. */
  spotted?: true;
}

export interface CategoryMatch {
  categoryId: string;
  name: string;
  hits: CategoryHit[];
}

export interface CategoryToRead extends CategoryInput {
  id: string;
}

/** The window on the call's time line, clipped to the call ([0, durationMs]). */
export function windowSpan(w: CategoryWindow | null, durationMs: number): Interval {
  if (w === null) return { startMs: 0, endMs: durationMs };
  const clip = (x: number) => Math.min(durationMs, Math.max(0, Math.round(x)));
  if ('first' in w) return { startMs: 0, endMs: clip(w.first * 1000) };
  if ('last' in w) return { startMs: clip(durationMs - w.last * 1000), endMs: durationMs };
  if ('firstShare' in w) return { startMs: 0, endMs: clip(w.firstShare * durationMs) };
  return { startMs: clip((1 - w.lastShare) * durationMs), endMs: durationMs };
}

const startsIn = (startMs: number, w: Interval) => startMs >= w.startMs && startMs < w.endMs;
const inScope = (leg: AnalyticsLeg, speaker: string | null) => speaker === null || leg.speaker === speaker;

interface Token {
  word: string;
  startMs: number;
  endMs: number;
}

function tokens(leg: AnalyticsLeg): Token[] {
  return leg.segments
    .flatMap((s) => s.words)
    .sort((a, b) => a.startMs - b.startMs)
    .flatMap((w) => ruleWords(w.word).map((word) => ({ word, startMs: w.startMs, endMs: w.endMs })));
}

/** Every place a phrase's words stand together in the leg's words. */
function phraseHits(toks: readonly Token[], phrase: string): Array<Interval & { text: string }> {
  const p = ruleWords(phrase);
  const out: Array<Interval & { text: string }> = [];
  for (let i = 0; i + p.length <= toks.length; i++) {
    if (p.every((w, k) => toks[i + k]!.word === w))
      out.push({ startMs: toks[i]!.startMs, endMs: toks[i + p.length - 1]!.endMs, text: p.join(' ') });
  }
  return out;
}

/** Phrase spotting: where the leg's keyphrase search detected the phrase in its audio. */
function spottedHits(leg: AnalyticsLeg, phrase: string): Array<Interval & { text: string; spotted: true }> {
  const p = spotPhrase(phrase);
  return (leg.spots ?? []).filter((s) => s.phrase === p).map((s) => ({ startMs: s.startMs, endMs: s.endMs, text: p, spotted: true }));
}

/** A spotted detection this close (ms) to a transcript hit of the same phrase is that hit: the
 * search's times can run up to about a second late (docs/analytics.md). */
const SPOT_SLACK_MS = 1000;

/** The transcript's hits and the spotted ones, a detection at a transcript hit of the same
 * phrase counted once (as the transcript's). */
function withSpotted<T extends Interval>(heard: T[], spotted: T[]): T[] {
  const extra = spotted.filter((s) => !heard.some((h) => h.startMs < s.endMs + SPOT_SLACK_MS && s.startMs < h.endMs + SPOT_SLACK_MS));
  return [...heard, ...extra].sort((a, b) => a.startMs - b.startMs);
}

function talkIn(runs: readonly Interval[], w: Interval): number {
  return runs.reduce((a, r) => a + Math.max(0, Math.min(r.endMs, w.endMs) - Math.max(r.startMs, w.startMs)), 0);
}

/** The hits of a condition's test (not negated) in its window; empty when it does not hold. */
function testHits(
  c: CategoryCondition,
  index: number,
  legs: readonly AnalyticsLeg[],
  figures: ConversationFigures,
  w: Interval,
  m: TextMatchers,
): CategoryHit[] {
  const t = c.test;
  const scoped = legs.filter((l) => inScope(l, c.speaker));
  switch (t.kind) {
    case 'phrases': {
      const per = t.phrases.map((p) =>
        scoped.flatMap((leg) =>
          withSpotted(phraseHits(tokens(leg), p), t.spot ? spottedHits(leg, p) : [])
            .filter((h) => startsIn(h.startMs, w))
            .map((h) => ({ condition: index, ...h, speaker: leg.speaker })),
        ),
      );
      if (t.match === 'all')
        return per.every((hits) => hits.length > 0) ? per.map((hits) => hits.sort((a, b) => a.startMs - b.startMs)[0]!) : [];
      return per.flat().sort((a, b) => a.startMs - b.startMs);
    }
    case 'pattern':
    case 'entity': {
      const hits: CategoryHit[] = [];
      for (const leg of scoped) {
        for (const s of leg.segments) {
          if (!startsIn(s.startMs, w) || s.text.trim() === '') continue;
          const span = t.kind === 'pattern' ? m.pattern(t.pattern, t.caseSensitive, s.text) : (m.entities(s.text, t.entity)[0] ?? null);
          if (span)
            hits.push({
              condition: index,
              startMs: s.startMs,
              endMs: s.endMs,
              speaker: leg.speaker,
              text: s.text.slice(span.start, span.end),
            });
        }
      }
      return hits.sort((a, b) => a.startMs - b.startMs);
    }
    case 'silence': {
      const talk = union(legs.flatMap((l, i) => legRuns(l, i)));
      const hits: CategoryHit[] = [];
      let from = w.startMs;
      for (const r of [...talk, { startMs: w.endMs, endMs: w.endMs }]) {
        const startMs = Math.max(from, w.startMs);
        const endMs = Math.min(r.startMs, w.endMs);
        if (endMs - startMs > t.seconds * 1000) hits.push({ condition: index, startMs, endMs, speaker: null });
        from = Math.max(from, r.endMs);
      }
      return hits;
    }
    case 'interruptions': {
      const made = figures.interruptions.filter((i) => (c.speaker === null || i.by === c.speaker) && startsIn(i.atMs, w));
      return made.length >= t.atLeast
        ? made.map((i) => ({ condition: index, startMs: i.atMs, endMs: i.atMs + i.overlapMs, speaker: i.by }))
        : [];
    }
    case 'talkShare': {
      const runs = legs.map((l, i) => union(legRuns(l, i)));
      const all = runs.reduce((a, r) => a + talkIn(r, w), 0);
      if (all === 0) return [];
      const own = legs.reduce((a, l, i) => a + (inScope(l, c.speaker) ? talkIn(runs[i]!, w) : 0), 0);
      const share = own / all;
      const holds = (t.min === null || share >= t.min) && (t.max === null || share <= t.max);
      return holds
        ? [{ condition: index, startMs: w.startMs, endMs: w.endMs, speaker: c.speaker, text: `talk share ${share.toFixed(3)}` }]
        : [];
    }
  }
}

/** The category's match, or null when a condition does not hold (or it is disabled). */
export function evaluateCategory(
  cat: CategoryToRead,
  legs: readonly AnalyticsLeg[],
  figures: ConversationFigures,
  m: TextMatchers,
): CategoryMatch | null {
  if (!cat.enabled) return null;
  const hits: CategoryHit[] = [];
  for (const [i, c] of cat.conditions.entries()) {
    const w = windowSpan(c.window, figures.durationMs);
    const found = testHits(c, i, legs, figures, w, m);
    if (c.negate) {
      if (found.length > 0) return null;
      hits.push({ condition: i, startMs: w.startMs, endMs: w.endMs, speaker: c.speaker, negated: true });
    } else {
      if (found.length === 0) return null;
      hits.push(...found.slice(0, MAX_HITS_PER_CONDITION));
    }
  }
  return { categoryId: cat.id, name: cat.name, hits };
}

export function evaluateCategories(
  cats: readonly CategoryToRead[],
  legs: readonly AnalyticsLeg[],
  figures: ConversationFigures,
  m: TextMatchers,
): CategoryMatch[] {
  return cats.map((c) => evaluateCategory(c, legs, figures, m)).filter((x): x is CategoryMatch => x !== null);
}
