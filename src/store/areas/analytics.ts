// Conversation analytics (contract/analytics.ts, docs/analytics.md): categories per account
// (another account's reads as missing), leg loudness tracks, and the analysis of a call or a
// lone transcription, computed by the pure core in the transaction that finishes it, so the
// `call.completed` (or `transcription.completed`) event it raises carries the figures.
import type { CategoryCondition } from '../../core/analytics/categories.js';
import { MAX_SPOTS_PER_LEG, type AnalyticsLeg, type SpottedPhrase } from '../../core/analytics/characteristics.js';
import { mergeLevelTracks, type LevelTrack } from '../../core/analytics/levels.js';
import { analyseConversation, compactAnalytics, searchableFigures, type ConversationAnalytics } from '../../core/analytics/summary.js';
import type { TextMatchers } from '../../core/rules-match.js';
import type { AnalyticsFilters } from '../../core/analytics/search-filters.js';
import { FIGURE_FILTERS } from '../../core/analytics/summary.js';
import type { SegmentWord } from '../../core/word-span.js';
import type { AnalyticsPosition, AnalyticsRecord, CategoryChange, CategoryRecord, CreateCategoryInput } from '../store.js';
import { nowIso, type Db, type SqlValue, type Tx } from '../sql/db.js';
import { lockAccount } from './ledger.js';

/** What the analysis needs from outside the store: the RE2 engine and the entity detectors for
 * pattern and entity conditions (src/text), and the per-category counter (src/obs). Set once
 * by the service (service.ts); a process that never sets them (an operator command) matches no
 * pattern or entity condition and counts nothing. */
export interface AnalyticsHooks {
  matchers: TextMatchers;
  /** Called when the matches are written, inside their transaction: a transaction that then
   * rolls back (or that PostgreSQL retries) counts its matches again (docs/analytics.md). */
  matched(categoryIds: readonly string[]): void;
}

const NO_HOOKS: AnalyticsHooks = { matchers: { pattern: () => null, entities: () => [] }, matched: () => {} };
let hooks: AnalyticsHooks = NO_HOOKS;

export function useAnalyticsHooks(h: AnalyticsHooks): void {
  hooks = h;
}

interface CategoryRow {
  id: string;
  account_id: string;
  name: string;
  conditions_json: string;
  enabled: bigint;
  created_at: string;
  updated_at: string;
}

function toCategory(r: CategoryRow): CategoryRecord {
  return {
    id: r.id,
    accountId: r.account_id,
    name: r.name,
    conditions: JSON.parse(r.conditions_json) as CategoryCondition[],
    enabled: Number(r.enabled) === 1,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export async function getCategory(db: Tx, categoryId: string, accountId: string): Promise<CategoryRecord | null> {
  const row = await db.one<CategoryRow>('SELECT * FROM analytics_categories WHERE id = ? AND account_id = ?', [categoryId, accountId]);
  return row ? toCategory(row) : null;
}

export async function createCategory(db: Db, input: CreateCategoryInput, maxPerAccount: number): Promise<CategoryRecord | null> {
  return db.tx(async (tx) => {
    await lockAccount(tx, input.accountId);
    const count = await tx.one<{ n: bigint }>('SELECT COUNT(*) AS n FROM analytics_categories WHERE account_id = ?', [input.accountId]);
    if (Number(count?.n ?? 0) >= maxPerAccount) return null;
    await tx.run(
      `INSERT INTO analytics_categories (id, account_id, name, conditions_json, enabled, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
      [input.id, input.accountId, input.name, JSON.stringify(input.conditions), input.enabled ? 1n : 0n, input.createdAt, input.createdAt],
    );
    return getCategory(tx, input.id, input.accountId);
  });
}

export async function listCategories(db: Tx, accountId: string): Promise<CategoryRecord[]> {
  return (await db.all<CategoryRow>('SELECT * FROM analytics_categories WHERE account_id = ? ORDER BY created_at, id', [accountId])).map(
    toCategory,
  );
}

export async function updateCategory(
  db: Db,
  categoryId: string,
  accountId: string,
  change: CategoryChange,
  now: Date,
): Promise<CategoryRecord | null> {
  return db.tx(async (tx) => {
    const sets: string[] = ['updated_at = ?'];
    const params: SqlValue[] = [now.toISOString()];
    const set = (column: string, value: SqlValue): void => {
      sets.push(`${column} = ?`);
      params.push(value);
    };
    if (change.name !== undefined) set('name', change.name);
    if (change.conditions !== undefined) set('conditions_json', JSON.stringify(change.conditions));
    if (change.enabled !== undefined) set('enabled', change.enabled ? 1n : 0n);
    const n = await tx.run(`UPDATE analytics_categories SET ${sets.join(', ')} WHERE id = ? AND account_id = ?`, [
      ...params,
      categoryId,
      accountId,
    ]);
    return n === 0 ? null : getCategory(tx, categoryId, accountId);
  });
}

export async function deleteCategory(db: Db, categoryId: string, accountId: string): Promise<boolean> {
  return (await db.run('DELETE FROM analytics_categories WHERE id = ? AND account_id = ?', [categoryId, accountId])) > 0;
}

export async function saveLegLevels(db: Db, transcriptionId: string, track: LevelTrack): Promise<void> {
  await db.tx(async (tx) => {
    const row = await tx.lockOne<{ frame_ms: bigint; levels_json: string }>(
      'SELECT frame_ms, levels_json FROM leg_levels WHERE transcription_id = ?',
      [transcriptionId],
    );
    const older = row ? { frameMs: Number(row.frame_ms), dbfs: JSON.parse(row.levels_json) as Array<number | null> } : null;
    const merged = mergeLevelTracks(older, track);
    await tx.run(
      `INSERT INTO leg_levels (transcription_id, frame_ms, levels_json, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (transcription_id) DO UPDATE SET frame_ms = excluded.frame_ms, levels_json = excluded.levels_json, updated_at = excluded.updated_at`,
      [transcriptionId, BigInt(merged.frameMs), JSON.stringify(merged.dbfs), nowIso()],
    );
  });
}

export async function saveLegSpots(db: Db, transcriptionId: string, spots: readonly SpottedPhrase[]): Promise<void> {
  if (spots.length === 0) return;
  await db.tx(async (tx) => {
    const row = await tx.lockOne<{ spots_json: string }>('SELECT spots_json FROM leg_spots WHERE transcription_id = ?', [transcriptionId]);
    const older = row ? (JSON.parse(row.spots_json) as SpottedPhrase[]) : [];
    // A session resumed on this node after a stop adds its later detections; the same one twice is kept once.
    const key = (s: SpottedPhrase) => `${s.phrase}@${s.startMs}`;
    const seen = new Set(older.map(key));
    const merged = [...older, ...spots.filter((s) => !seen.has(key(s)))].sort((a, b) => a.startMs - b.startMs).slice(0, MAX_SPOTS_PER_LEG);
    await tx.run(
      `INSERT INTO leg_spots (transcription_id, spots_json, updated_at) VALUES (?, ?, ?)
       ON CONFLICT (transcription_id) DO UPDATE SET spots_json = excluded.spots_json, updated_at = excluded.updated_at`,
      [transcriptionId, JSON.stringify(merged.map((s) => ({ phrase: s.phrase, startMs: s.startMs, endMs: s.endMs }))), nowIso()],
    );
  });
}

/** A leg as the analysis reads it from a History row. */
export interface LegRow {
  id: string;
  speaker: string | null;
  sample_rate_hz: bigint;
  audio_samples: bigint;
}

const toMs = (samples: bigint | string, rate: number) => (rate > 0 ? Number((BigInt(samples) * 1000n) / BigInt(rate)) : 0);

async function readLeg(tx: Tx, l: LegRow): Promise<AnalyticsLeg> {
  const rate = Number(l.sample_rate_hz);
  const segments = await tx.all<{ start_sample: bigint; end_sample: bigint; text: string; words_json: string }>(
    'SELECT start_sample, end_sample, text, words_json FROM segments WHERE transcription_id = ? ORDER BY idx',
    [l.id],
  );
  const levels = await tx.one<{ frame_ms: bigint; levels_json: string }>(
    'SELECT frame_ms, levels_json FROM leg_levels WHERE transcription_id = ?',
    [l.id],
  );
  const spots = await tx.one<{ spots_json: string }>('SELECT spots_json FROM leg_spots WHERE transcription_id = ?', [l.id]);
  return {
    speaker: l.speaker,
    transcriptionId: l.id,
    spots: spots ? (JSON.parse(spots.spots_json) as SpottedPhrase[]) : [],
    durationMs: toMs(l.audio_samples, rate),
    segments: segments.map((s) => ({
      startMs: toMs(s.start_sample, rate),
      endMs: toMs(s.end_sample, rate),
      text: s.text,
      words: (JSON.parse(s.words_json) as SegmentWord[]).map((w) => ({
        word: w.word,
        startMs: toMs(w.startSample, rate),
        endMs: toMs(w.endSample, rate),
      })),
    })),
    levels: levels ? { frameMs: Number(levels.frame_ms), dbfs: JSON.parse(levels.levels_json) as Array<number | null> } : null,
  };
}

/** The analysis of a finished call (callId given) or lone transcription, stored (again, if a
 * retried write finishes it twice) in the caller's transaction; answers its compact form for
 * the event the finish raises. */
export async function analyseFinished(
  tx: Tx,
  accountId: string,
  subject: { callId: string | null; transcriptionId: string | null },
  legRows: readonly LegRow[],
  now: string,
): Promise<Record<string, unknown>> {
  const subjectId = subject.callId ?? subject.transcriptionId!;
  const legs: AnalyticsLeg[] = [];
  for (const l of legRows) legs.push(await readLeg(tx, l));
  const categories = (await listCategories(tx, accountId)).filter((c) => c.enabled);
  const a = analyseConversation(legs, categories, hooks.matchers);
  const agent = subject.callId
    ? await tx.one<{ agent_id: string | null }>('SELECT agent_id FROM calls WHERE id = ?', [subject.callId])
    : undefined;
  const f = searchableFigures(a.figures);
  await tx.run('DELETE FROM category_matches WHERE subject_id = ?', [subjectId]);
  await tx.run(
    `INSERT INTO conversation_analytics (subject_id, account_id, call_id, transcription_id, agent_id, duration_ms, talk_ms, non_talk_ms, longest_silence_ms, overtalk_ms, interruptions, figures_json, categories_json, completed_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (subject_id) DO UPDATE SET agent_id = excluded.agent_id, duration_ms = excluded.duration_ms, talk_ms = excluded.talk_ms, non_talk_ms = excluded.non_talk_ms,
       longest_silence_ms = excluded.longest_silence_ms, overtalk_ms = excluded.overtalk_ms, interruptions = excluded.interruptions,
       figures_json = excluded.figures_json, categories_json = excluded.categories_json, completed_at = excluded.completed_at`,
    [
      subjectId,
      accountId,
      subject.callId,
      subject.callId ? null : subject.transcriptionId,
      agent?.agent_id ?? null,
      BigInt(f.durationMs),
      BigInt(f.talkMs),
      BigInt(f.nonTalkMs),
      BigInt(f.longestSilenceMs),
      BigInt(f.overtalkMs),
      BigInt(f.interruptions),
      JSON.stringify(a.figures),
      JSON.stringify(a.categories),
      now,
    ],
  );
  for (const m of a.categories) {
    await tx.run('INSERT INTO category_matches (subject_id, category_id, account_id, completed_at) VALUES (?, ?, ?, ?)', [
      subjectId,
      m.categoryId,
      accountId,
      now,
    ]);
  }
  if (a.categories.length > 0) hooks.matched(a.categories.map((c) => c.categoryId));
  return compactAnalytics(a);
}

interface AnalyticsRow {
  subject_id: string;
  account_id: string;
  call_id: string | null;
  transcription_id: string | null;
  agent_id: string | null;
  figures_json: string;
  categories_json: string;
  completed_at: string;
}

function toAnalytics(r: AnalyticsRow): AnalyticsRecord {
  return {
    subjectId: r.subject_id,
    accountId: r.account_id,
    callId: r.call_id,
    transcriptionId: r.transcription_id,
    agentId: r.agent_id,
    analytics: { figures: JSON.parse(r.figures_json), categories: JSON.parse(r.categories_json) } as ConversationAnalytics,
    completedAt: r.completed_at,
  };
}

const ANALYTICS_COLUMNS = 'subject_id, account_id, call_id, transcription_id, agent_id, figures_json, categories_json, completed_at';

export async function getAnalytics(db: Tx, subjectId: string, accountId: string): Promise<AnalyticsRecord | null> {
  const row = await db.one<AnalyticsRow>(
    `SELECT ${ANALYTICS_COLUMNS} FROM conversation_analytics WHERE subject_id = ? AND account_id = ?`,
    [subjectId, accountId],
  );
  return row ? toAnalytics(row) : null;
}

export async function listAnalytics(
  db: Tx,
  accountId: string,
  range: { from: string; to: string; agentId?: string },
  limit: number,
  after?: AnalyticsPosition,
): Promise<AnalyticsRecord[]> {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError('limit must be a positive integer');
  const where = ['account_id = ?', 'completed_at >= ?', 'completed_at < ?'];
  const params: SqlValue[] = [accountId, range.from, range.to];
  if (range.agentId !== undefined) {
    where.push('agent_id = ?');
    params.push(range.agentId);
  }
  if (after) {
    where.push('(completed_at > ? OR (completed_at = ? AND subject_id > ?))');
    params.push(after.completedAt, after.completedAt, after.subjectId);
  }
  const rows = await db.all<AnalyticsRow>(
    `SELECT ${ANALYTICS_COLUMNS} FROM conversation_analytics WHERE ${where.join(' AND ')} ORDER BY completed_at, subject_id LIMIT ?`,
    [...params, limit],
  );
  return rows.map(toAnalytics);
}

/** Erasure of a History row (areas/erasure.ts) takes its loudness, spotted phrases and kept
 * alerts and the analytics that read it with it: its own, and its call's (their hits quote what was said). */
export async function eraseAnalyticsOf(tx: Tx, transcriptionId: string): Promise<void> {
  const row = await tx.one<{ call_id: string | null }>('SELECT call_id FROM transcriptions WHERE id = ?', [transcriptionId]);
  await tx.run('DELETE FROM leg_levels WHERE transcription_id = ?', [transcriptionId]);
  await tx.run('DELETE FROM leg_spots WHERE transcription_id = ?', [transcriptionId]);
  await tx.run('DELETE FROM rule_alerts WHERE transcription_id = ?', [transcriptionId]);
  for (const subject of [transcriptionId, row?.call_id ?? null]) {
    if (subject === null) continue;
    await tx.run('DELETE FROM category_matches WHERE subject_id = ?', [subject]);
    await tx.run('DELETE FROM conversation_analytics WHERE subject_id = ?', [subject]);
  }
}

/** Search conditions (areas/search.ts) on a segment's History row `t`: its call's analytics, or
 * its own outside a call. Columns come from a fixed table (FIGURE_FILTERS), values are bound. */
export function analyticsConditions(f: AnalyticsFilters, add: (condition: string, ...values: SqlValue[]) => void): void {
  const subject = 'COALESCE(t.call_id, t.id)';
  if (f.category !== undefined)
    add(
      `EXISTS (SELECT 1 FROM category_matches m WHERE m.subject_id = ${subject} AND m.category_id = ? AND m.account_id = t.account_id)`,
      f.category,
    );
  for (const b of f.figures) {
    const column = FIGURE_FILTERS[b.figure];
    if (b.over !== undefined)
      add(
        `EXISTS (SELECT 1 FROM conversation_analytics a WHERE a.subject_id = ${subject} AND a.${column} > ?)`,
        BigInt(Math.round(b.over)),
      );
    if (b.under !== undefined)
      add(
        `EXISTS (SELECT 1 FROM conversation_analytics a WHERE a.subject_id = ${subject} AND a.${column} < ?)`,
        BigInt(Math.round(b.under)),
      );
  }
}
