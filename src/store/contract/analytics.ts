// Conversation analytics (areas/analytics.ts, docs/analytics.md): an account's post-call
// categories, each leg's loudness track, and the figures and matches of every finished call
// or lone transcription (computed in the transaction that finishes it).
import type { CategoryCondition } from '../../core/analytics/categories.js';
import type { LevelTrack } from '../../core/analytics/levels.js';
import type { SpottedPhrase } from '../../core/analytics/characteristics.js';
import type { ConversationAnalytics, FigureName } from '../../core/analytics/summary.js';

export interface CategoryRecord {
  id: string; // cat_...
  accountId: string;
  name: string;
  conditions: CategoryCondition[];
  enabled: boolean;
  createdAt: string;
  updatedAt: string;
}

export interface CreateCategoryInput {
  id: string;
  accountId: string;
  name: string;
  conditions: CategoryCondition[];
  enabled: boolean;
  createdAt: string;
}

export interface CategoryChange {
  name?: string;
  conditions?: CategoryCondition[];
  enabled?: boolean;
}

export interface AnalyticsRecord {
  /** The call's id, or the lone transcription's. */
  subjectId: string;
  accountId: string;
  callId: string | null;
  transcriptionId: string | null;
  agentId: string | null;
  analytics: ConversationAnalytics;
  completedAt: string;
}

/** Keyset position in a range of analytics rows: the last row of the previous page. */
export interface AnalyticsPosition {
  completedAt: string;
  subjectId: string;
}

/** A figure a search or an aggregate filters by: over (`gt`) or under (`lt`) a value. */
export interface FigureFilter {
  figure: FigureName;
  gt?: number;
  lt?: number;
}

export interface AnalyticsStore {
  /** Null when the account already has `maxPerAccount` categories (counted under its lock). */
  createCategory(input: CreateCategoryInput, maxPerAccount: number): Promise<CategoryRecord | null>;
  /** The account's categories, oldest first. */
  listCategories(accountId: string): Promise<CategoryRecord[]>;
  /** Null when missing or another account's. */
  getCategory(categoryId: string, accountId: string): Promise<CategoryRecord | null>;
  updateCategory(categoryId: string, accountId: string, change: CategoryChange, now: Date): Promise<CategoryRecord | null>;
  /** False when missing or another account's. */
  deleteCategory(categoryId: string, accountId: string): Promise<boolean>;
  /** A leg's loudness so far, merged over what is stored (the newer frames win). */
  saveLegLevels(transcriptionId: string, track: LevelTrack): Promise<void>;
  /** Phrases a leg's keyphrase search detected (session ms), added to those stored. */
  saveLegSpots(transcriptionId: string, spots: readonly SpottedPhrase[]): Promise<void>;
  /** A finished call's (call_...) or lone transcription's (stt_...) analytics; null when
   * missing, not finished, or another account's. */
  getAnalytics(subjectId: string, accountId: string): Promise<AnalyticsRecord | null>;
  /** The account's analytics finished in [from, to), oldest first, after `after`. */
  listAnalytics(
    accountId: string,
    range: { from: string; to: string; agentId?: string },
    limit: number,
    after?: AnalyticsPosition,
  ): Promise<AnalyticsRecord[]>;
}
