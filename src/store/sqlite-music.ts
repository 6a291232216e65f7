// SQLite table of music projects (issue 4). One transaction per function (SqlAccess.write):
// state checks and the changes they guard commit together, so a brief update and a quote
// racing each other cannot both pass the "no operation in progress" check.
import type { SqlAccess } from './sqlite-access.js';
import type { MusicOutcome, MusicProjectRecord, MusicProjectStatus, MusicQuote } from './store.js';

interface Row {
  id: string;
  account_id: string;
  status: MusicProjectStatus;
  brief_json: string;
  arrangement_version: bigint;
  arrangement_json: string | null;
  active_quote_json: string | null;
  generation_json: string | null;
  created_at: string;
  updated_at: string;
}

function toProject(r: Row): MusicProjectRecord {
  return {
    id: r.id,
    accountId: r.account_id,
    status: r.status,
    brief: JSON.parse(r.brief_json) as Record<string, unknown>,
    arrangementVersion: Number(r.arrangement_version),
    arrangement: r.arrangement_json === null ? null : (JSON.parse(r.arrangement_json) as Record<string, unknown>),
    activeQuote: r.active_quote_json === null ? null : (JSON.parse(r.active_quote_json) as MusicQuote),
    generation: r.generation_json === null ? null : (JSON.parse(r.generation_json) as Record<string, unknown>),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

function read(sql: SqlAccess, id: string, accountId: string): MusicProjectRecord | null {
  const r = sql.stmt('SELECT * FROM music_projects WHERE id = ? AND account_id = ?').get(id, accountId) as Row | undefined;
  return r ? toProject(r) : null;
}

export function createMusicProject(sql: SqlAccess, input: { id: string; accountId: string; brief: Record<string, unknown>; createdAt: string }): MusicProjectRecord {
  return sql.write(() => {
    sql
      .stmt(
        `INSERT INTO music_projects (id, account_id, status, brief_json, arrangement_version, created_at, updated_at)
         VALUES (?, ?, 'ARRANGEMENT_GENERATING', ?, 1, ?, ?)`,
      )
      .run(input.id, input.accountId, JSON.stringify(input.brief), input.createdAt, input.createdAt);
    return read(sql, input.id, input.accountId)!;
  });
}

export function getMusicProject(sql: SqlAccess, id: string, accountId: string): MusicProjectRecord | null {
  return read(sql, id, accountId);
}

export function replaceMusicBrief(sql: SqlAccess, id: string, accountId: string, brief: Record<string, unknown>, now: Date): MusicOutcome {
  return sql.write((): MusicOutcome => {
    const p = read(sql, id, accountId);
    if (!p) return { kind: 'not_found' };
    // A failed arrangement is left by sending a brief again (the same one retries it).
    if (p.status !== 'ARRANGEMENT_READY' && p.status !== 'ARRANGEMENT_FAILED') return { kind: 'busy', status: p.status };
    sql
      .stmt(
        `UPDATE music_projects
            SET brief_json = ?, status = 'ARRANGEMENT_GENERATING', arrangement_version = arrangement_version + 1,
                arrangement_json = NULL, active_quote_json = NULL, updated_at = ?
          WHERE id = ?`,
      )
      .run(JSON.stringify(brief), now.toISOString(), id);
    return { kind: 'ok', project: read(sql, id, accountId)! };
  });
}

export function createMusicQuote(sql: SqlAccess, id: string, accountId: string, quote: (p: MusicProjectRecord) => MusicQuote, now: Date): MusicOutcome {
  return sql.write((): MusicOutcome => {
    const p = read(sql, id, accountId);
    if (!p) return { kind: 'not_found' };
    if (p.status !== 'ARRANGEMENT_READY') return { kind: 'busy', status: p.status };
    sql.stmt('UPDATE music_projects SET active_quote_json = ?, updated_at = ? WHERE id = ?').run(JSON.stringify(quote(p)), now.toISOString(), id);
    return { kind: 'ok', project: read(sql, id, accountId)! };
  });
}

export function startMusicGeneration(
  sql: SqlAccess,
  id: string,
  accountId: string,
  quoteId: string,
  now: Date,
  generation: (q: MusicQuote) => Record<string, unknown>,
): MusicOutcome {
  return sql.write((): MusicOutcome => {
    const p = read(sql, id, accountId);
    if (!p) return { kind: 'not_found' };
    if (p.status !== 'ARRANGEMENT_READY') return { kind: 'busy', status: p.status };
    const q = p.activeQuote;
    if (!q || q.quoteId !== quoteId || Date.parse(q.expiresAt) <= now.getTime() || q.arrangementVersion !== p.arrangementVersion) {
      return { kind: 'stale_quote' };
    }
    const amount = BigInt(q.characters);
    const balance = sql.readBalance(accountId);
    if (balance < amount) return { kind: 'insufficient', balance };
    if (amount > 0n) {
      sql.stmt('UPDATE accounts SET characters = ? WHERE id = ?').run(balance - amount, accountId);
      sql.ledger(accountId, -amount, balance - amount, 'music_generation', `${id}:${q.quoteId}`);
    }
    sql
      .stmt("UPDATE music_projects SET status = 'GENERATION_QUEUED', active_quote_json = NULL, generation_json = ?, updated_at = ? WHERE id = ?")
      .run(JSON.stringify(generation(q)), now.toISOString(), id);
    return { kind: 'ok', project: read(sql, id, accountId)! };
  });
}

export function completeArrangement(sql: SqlAccess, id: string, version: number, plan: Record<string, unknown>, now: Date): boolean {
  return sql.write(() => {
    const info = sql
      .stmt(
        `UPDATE music_projects SET status = 'ARRANGEMENT_READY', arrangement_json = ?, updated_at = ?
          WHERE id = ? AND status = 'ARRANGEMENT_GENERATING' AND arrangement_version = ?`,
      )
      .run(JSON.stringify(plan), now.toISOString(), id, version);
    return info.changes === 1;
  });
}

export function failArrangement(sql: SqlAccess, id: string, version: number, now: Date): boolean {
  return sql.write(() => {
    const info = sql
      .stmt(
        `UPDATE music_projects SET status = 'ARRANGEMENT_FAILED', updated_at = ?
          WHERE id = ? AND status = 'ARRANGEMENT_GENERATING' AND arrangement_version = ?`,
      )
      .run(now.toISOString(), id, version);
    return info.changes === 1;
  });
}

export function listMusicProjectsByStatus(sql: SqlAccess, status: MusicProjectStatus): MusicProjectRecord[] {
  return (sql.stmt('SELECT * FROM music_projects WHERE status = ? ORDER BY created_at, id').all(status) as Row[]).map(toProject);
}
