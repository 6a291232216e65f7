// Full-text search over final segments (contract/search.ts, docs/search.md), each engine with
// its own: SQLite's FTS5 table segments_fts (kept by triggers on segments, migration 12) and
// PostgreSQL's GIN index on to_tsvector('simple', text) (migration 7). The query arrives
// parsed (core/search-query.ts) and is rebuilt from its words for each engine, always as a
// bound parameter. The account is a condition of the query itself, never a filter after it.
import { MATCH_CLOSE, MATCH_OPEN, toFts5Match, toPostgresTsquery, type SearchFilters, type SearchPosition, type SearchQuery } from '../../core/search-query.js';
import type { SearchHit } from '../store.js';
import type { SqlValue, Tx } from '../sql/db.js';

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

function filterSql(accountId: string, filters: SearchFilters, after: SearchPosition | undefined): { where: string; params: SqlValue[] } {
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
  if (after !== undefined) {
    where.push('(s.created_at, s.transcription_id, s.idx) < (?, ?, ?)');
    params.push(after.createdAt, after.transcriptionId, BigInt(after.index));
  }
  return { where: where.join(' AND '), params };
}

const COLUMNS = 's.transcription_id, s.idx, s.start_sample, s.end_sample, s.text, s.created_at, t.call_id, t.speaker, t.sample_rate_hz';
const ORDER = 'ORDER BY s.created_at DESC, s.transcription_id DESC, s.idx DESC';

export async function searchSegments(
  db: Tx,
  accountId: string,
  query: SearchQuery,
  filters: SearchFilters,
  limit: number,
  after?: SearchPosition,
): Promise<SearchHit[]> {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError('limit must be a positive integer');
  const f = filterSql(accountId, filters, after);
  const ts = db.dialect === 'postgres' ? toPostgresTsquery(query) : null;
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
            ${ORDER} LIMIT ?`,
          [MATCH_OPEN, MATCH_CLOSE, toFts5Match(query), ...f.params, BigInt(limit)],
        )
      : await db.all<HitRow>(
          `SELECT ${COLUMNS}, ts_headline('simple', s.text, q.query, ?) AS marked
             FROM segments s
             CROSS JOIN (SELECT ${ts!.sql} AS query) AS q
             JOIN transcriptions t ON t.id = s.transcription_id
             LEFT JOIN calls c ON c.id = t.call_id
            WHERE to_tsvector('simple', s.text) @@ q.query AND ${f.where}
            ${ORDER} LIMIT ?`,
          [`StartSel=${MATCH_OPEN}, StopSel=${MATCH_CLOSE}, HighlightAll=true`, ...ts!.params, ...f.params, BigInt(limit)],
        );
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
