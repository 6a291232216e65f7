// Full-text search over an account's final segments (areas/search.ts, docs/search.md).
import type { SearchFilters, SearchPosition, SearchQuery } from '../../core/search-query.js';

export interface SearchHit {
  transcriptionId: string;
  /** The segment's index in its transcription. */
  index: number;
  /** The segment's text. */
  text: string;
  /** The text with each match between MATCH_OPEN and MATCH_CLOSE (core/search-query.ts). */
  marked: string;
  callId: string | null;
  speaker: string | null;
  startSample: bigint;
  endSample: bigint;
  sampleRateHz: number;
  createdAt: string;
}

export interface SearchStore {
  /** The account's final segments matching `query` and every filter, newest first by
   * (createdAt, transcriptionId, index), strictly after `after` when given; at most `limit`.
   * Another account's segments are never found. */
  searchSegments(
    accountId: string,
    query: SearchQuery,
    filters: SearchFilters,
    limit: number,
    after?: SearchPosition,
  ): Promise<SearchHit[]>;
}
