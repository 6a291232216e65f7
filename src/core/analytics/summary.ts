// What a finished call's analytics are, as stored, served and sent (docs/analytics.md): the
// figures (characteristics.ts) and the categories matched (category-match.ts); the compact
// form the `call.completed` webhook and the CSV export carry; the figures search filters on.
import type { TextMatchers } from '../rules-match.js';
import { evaluateCategories, type CategoryMatch, type CategoryToRead } from './category-match.js';
import { computeCharacteristics, type AnalyticsLeg, type ConversationFigures } from './characteristics.js';

export interface ConversationAnalytics {
  figures: ConversationFigures;
  categories: CategoryMatch[];
}

export function analyseConversation(
  legs: readonly AnalyticsLeg[],
  categories: readonly CategoryToRead[],
  m: TextMatchers,
): ConversationAnalytics {
  const figures = computeCharacteristics(legs);
  return { figures, categories: evaluateCategories(categories, legs, figures, m) };
}

/** The figures a search may filter on, kept in columns of their own (docs/search.md). */
export interface SearchableFigures {
  durationMs: number;
  talkMs: number;
  nonTalkMs: number;
  longestSilenceMs: number;
  overtalkMs: number;
  interruptions: number;
}

export function searchableFigures(f: ConversationFigures): SearchableFigures {
  return {
    durationMs: f.durationMs,
    talkMs: f.talkMs,
    nonTalkMs: f.nonTalk.totalMs,
    longestSilenceMs: f.nonTalk.longestMs,
    overtalkMs: f.overtalk.totalMs,
    interruptions: f.interruptions.length,
  };
}

/** The figures without their spans and level tracks, and the categories by id and name: what
 * the webhook carries (the full form is one GET away). */
export function compactAnalytics(a: ConversationAnalytics): Record<string, unknown> {
  const f = a.figures;
  return {
    durationMs: f.durationMs,
    talkMs: f.talkMs,
    nonTalkMs: f.nonTalk.totalMs,
    longestSilenceMs: f.nonTalk.longestMs,
    overtalkMs: f.overtalk.totalMs,
    overtalkShare: f.overtalk.share,
    interruptions: f.interruptions.length,
    turns: f.turns,
    legs: f.legs.map((l) => ({
      speaker: l.speaker,
      talkMs: l.talkMs,
      talkShare: l.talkShare,
      words: l.words,
      wordsPerMinute: l.wordsPerMinute,
      interruptionsMade: l.interruptionsMade,
      talkDbfs: l.loudness?.talkDbfs ?? null,
    })),
    categories: a.categories.map((c) => ({ categoryId: c.categoryId, name: c.name })),
  };
}

/** Figures a search filters by: `name` over (`gt`) or under (`lt`) a value in seconds (counts
 * for interruptions). */
export const FIGURE_FILTERS = {
  silence: 'longest_silence_ms',
  nonTalk: 'non_talk_ms',
  talk: 'talk_ms',
  overtalk: 'overtalk_ms',
  duration: 'duration_ms',
  interruptions: 'interruptions',
} as const;
export type FigureName = keyof typeof FIGURE_FILTERS;
