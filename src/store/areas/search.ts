// Full-text search over final segments (contract/search.ts, docs/search.md), each engine with
// its own: SQLite's FTS5 table segments_fts (kept by triggers on segments, migration 12) and
// PostgreSQL's GIN index on the generated tsvector column search_vector (migration 7).
// The query arrives parsed (core/search-query.ts) and is rebuilt from its words for each engine, always as a
// bound parameter. The account is a condition of the query itself, never a filter after it.
import {
  MATCH_CLOSE,
  MATCH_OPEN,
  toFts5Match,
  toPostgresTsquery,
  type SearchFilters,
  type SearchPosition,
  type SearchQuery,
} from '../../core/search-query.js';
import type { SearchHit } from '../store.js';
import type { SqlValue, Tx } from '../sql/db.js';
import { analyticsConditions } from './analytics.js';

interface HitRow {
  transcription_id: string;
  idx: bigint;
  start_sample: bigint;
  end_sample: bigint;
  text: string;
  marked: string;
  created_at: string;
  call_id: string | null;
  speaker: string | null;
  sample_rate_hz: bigint;
}

function filterSql(
  dialect: Tx['dialect'],
  accountId: string,
  filters: SearchFilters,
  after: SearchPosition | undefined,
): { where: string; params: SqlValue[] } {
  const where: string[] = ['t.account_id = ?'];
  const params: SqlValue[] = [accountId];
  const add = (condition: string, ...values: SqlValue[]): void => {
    where.push(condition);
    params.push(...values);
  };
  if (filters.from !== undefined) add('s.created_at >= ?', filters.from);
  if (filters.to !== undefined) add('s.created_at < ?', filters.to);
  if (filters.callId !== undefined) add('t.call_id = ?', filters.callId);
  if (filters.externalId !== undefined) add('c.external_id = ?', filters.externalId);
  if (filters.speaker !== undefined) add('t.speaker = ?', filters.speaker);
  // A leg's History row carries the session's title, its call the call's: either matches.
  if (filters.title !== undefined) add('(t.title = ? OR c.title = ?)', filters.title, filters.title);
  if (filters.analytics !== undefined) analyticsConditions(filters.analytics, add);
  if (after !== undefined) {
    if (dialect === 'sqlite')
      add(
        'segments_fts.rowid < (SELECT id FROM segments_fts_rows WHERE transcription_id = ? AND idx = ?)',
        after.transcriptionId,
        BigInt(after.index),
      );
    else add('(s.created_at, s.transcription_id, s.idx) < (?, ?, ?)', after.createdAt, after.transcriptionId, BigInt(after.index));
  }
  return { where: where.join(' AND '), params };
}

const COLUMNS = 's.transcription_id, s.idx, s.start_sample, s.end_sample, s.text, s.created_at, t.call_id, t.speaker, t.sample_rate_hz';
// Newest first, each engine by what its index gives in order, so a page of a word in most
// segments stops after its first rows rather than sorting every match: FTS5 streams its
// rowids (given as finals are stored) in order; PostgreSQL walks segments_newest when the
// words are common and the GIN index when they are rare (its planner chooses).
const SQLITE_ORDER = 'ORDER BY segments_fts.rowid DESC';
const POSTGRES_ORDER = 'ORDER BY s.created_at DESC, s.transcription_id DESC, s.idx DESC';

/** Matches (over every account) up to which PostgreSQL sorts them all rather than walk
 * segments_newest: under it, the GIN index finds every match and sorting them is cheap. */
const FEW_MATCHES = 5000;

/**
 * For a query with a phrase, PostgreSQL's plan is chosen here, not by the planner: it takes a
 * phrase for as common as its words standing anywhere in a segment, so for a phrase of two
 * common words that rarely stand together ("thank you" in synthetic text) it expects thousands
 * of matches, walks segments_newest and checks most of the table (806,000 rows at 1M segments,
 * 350 ms). So the phrase's matches are first read through the GIN index, up to FEW_MATCHES
 * (a materialized CTE): below it, they are every match, and the page is cut from them, sorted,
 * in the same statement; at it, the phrase is common, and the planner's walk along
 * segments_newest finds the page within its first rows. Queries of single words keep the
 * planner's choice: its word statistics are right, and reading up to FEW_MATCHES rows first
 * would cost a common word for nothing.
 */
async function postgresSearch(db: Tx, query: SearchQuery, f: { where: string; params: SqlValue[] }, limit: number): Promise<HitRow[]> {
  const ts = toPostgresTsquery(query);
  const headline = `StartSel=${MATCH_OPEN}, StopSel=${MATCH_CLOSE}, HighlightAll=true`;
  // ts_headline on the page only: in one SELECT it would run for every match before the sort.
  const page = (source: string) => `SELECT page.*, ts_headline('simple', page.text, page.query, ?) AS marked
       FROM (SELECT ${COLUMNS}, q.query
               FROM ${source}
               JOIN transcriptions t ON t.id = s.transcription_id
               LEFT JOIN calls c ON c.id = t.call_id
              WHERE s.search_vector @@ q.query AND ${f.where}
              ${POSTGRES_ORDER} LIMIT ?) AS page`;
  const pageOrder = POSTGRES_ORDER.replace(/\bs\./g, 'hit.');
  if (query.all.some((group) => group.some((phrase) => phrase.length > 1))) {
    const rows = await db.all<HitRow & { matches: bigint }>(
      `WITH m AS MATERIALIZED (SELECT s.* FROM segments s WHERE s.search_vector @@ (${ts.sql}) LIMIT ${FEW_MATCHES})
       SELECT counted.matches, hit.*
         FROM (SELECT COUNT(*) AS matches FROM m) AS counted
         LEFT JOIN (${page(`m AS s CROSS JOIN (SELECT ${ts.sql} AS query) AS q`)}) AS hit ON true
        ${pageOrder}`,
      [...ts.params, headline, ...ts.params, ...f.params, BigInt(limit)],
    );
    if (Number(rows[0]?.matches ?? 0) < FEW_MATCHES) return rows.filter((r) => r.transcription_id !== null);
  }
  return db.all<HitRow>(`SELECT hit.* FROM (${page(`segments s CROSS JOIN (SELECT ${ts.sql} AS query) AS q`)}) AS hit ${pageOrder}`, [
    headline,
    ...ts.params,
    ...f.params,
    BigInt(limit),
  ]);
}

export async function searchSegments(
  db: Tx,
  accountId: string,
  query: SearchQuery,
  filters: SearchFilters,
  limit: number,
  after?: SearchPosition,
): Promise<SearchHit[]> {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError('limit must be a positive integer');
  const f = filterSql(db.dialect, accountId, filters, after);
  const rows =
    db.dialect === 'sqlite'
      ? await db.all<HitRow>(
          `SELECT ${COLUMNS}, highlight(segments_fts, 0, ?, ?) AS marked
             FROM segments_fts
             JOIN segments_fts_rows r ON r.id = segments_fts.rowid
             JOIN segments s ON s.transcription_id = r.transcription_id AND s.idx = r.idx
             JOIN transcriptions t ON t.id = s.transcription_id
             LEFT JOIN calls c ON c.id = t.call_id
            WHERE segments_fts MATCH ? AND ${f.where}
            ${SQLITE_ORDER} LIMIT ?`,
          [MATCH_OPEN, MATCH_CLOSE, toFts5Match(query), ...f.params, BigInt(limit)],
        )
      : await postgresSearch(db, query, f, limit);
  return rows.map((r) => ({
    transcriptionId: r.transcription_id,
    index: Number(r.idx),
    text: r.text,
    marked: r.marked,
    callId: r.call_id,
    speaker: r.speaker,
    startSample: BigInt(r.start_sample),
    endSample: BigInt(r.end_sample),
    sampleRateHz: Number(r.sample_rate_hz),
    createdAt: r.created_at,
  }));
}
