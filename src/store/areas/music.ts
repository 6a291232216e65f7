// Music projects (docs/api.md) on either engine (sql/db.ts). One db.tx per writing function:
// state checks and the changes they guard commit together, so a brief update and a quote
// racing each other cannot both pass the "no operation in progress" check. On PostgreSQL
// (READ COMMITTED) that needs a lock: each check-then-write transaction reads the project row
// with lockOne (FOR UPDATE) before checking its status, and a missing project (or account)
// answers not_found, never NOT_FOUND. startMusicGeneration also debits, so it locks the
// account row first and the project row second, the order every account-owned writer uses.
import type { Db, Tx } from '../sql/db.js';
import type { MusicOutcome, MusicProjectRecord, MusicProjectStatus, MusicQuote } from '../store.js';
import { lockAccount, moveCharacters } from './ledger.js';

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

const OWNED = 'SELECT * FROM music_projects WHERE id = ? AND account_id = ?';

async function read(tx: Tx, id: string, accountId: string): Promise<MusicProjectRecord | null> {
  const r = await tx.one<Row>(OWNED, [id, accountId]);
  return r ? toProject(r) : null;
}

/** The same read, locking the project row until the transaction ends. */
async function lock(tx: Tx, id: string, accountId: string): Promise<MusicProjectRecord | null> {
  const r = await tx.lockOne<Row>(OWNED, [id, accountId]);
  return r ? toProject(r) : null;
}

export async function createMusicProject(
  db: Db,
  input: { id: string; accountId: string; brief: Record<string, unknown>; createdAt: string },
): Promise<MusicProjectRecord> {
  return db.tx(async (tx) => {
    await tx.run(
      `INSERT INTO music_projects (id, account_id, status, brief_json, arrangement_version, created_at, updated_at)
       VALUES (?, ?, 'ARRANGEMENT_GENERATING', ?, 1, ?, ?)`,
      [input.id, input.accountId, JSON.stringify(input.brief), input.createdAt, input.createdAt],
    );
    return (await read(tx, input.id, input.accountId))!;
  });
}

export async function getMusicProject(db: Db, id: string, accountId: string): Promise<MusicProjectRecord | null> {
  return read(db, id, accountId);
}

export async function replaceMusicBrief(
  db: Db,
  id: string,
  accountId: string,
  brief: Record<string, unknown>,
  now: Date,
): Promise<MusicOutcome> {
  return db.tx(async (tx): Promise<MusicOutcome> => {
    const p = await lock(tx, id, accountId);
    if (!p) return { kind: 'not_found' };
    // A failed arrangement is left by sending a brief again (the same one retries it).
    if (p.status !== 'ARRANGEMENT_READY' && p.status !== 'ARRANGEMENT_FAILED') return { kind: 'busy', status: p.status };
    await tx.run(
      `UPDATE music_projects
          SET brief_json = ?, status = 'ARRANGEMENT_GENERATING', arrangement_version = arrangement_version + 1,
              arrangement_json = NULL, active_quote_json = NULL, updated_at = ?
        WHERE id = ?`,
      [JSON.stringify(brief), now.toISOString(), id],
    );
    return { kind: 'ok', project: (await read(tx, id, accountId))! };
  });
}

export async function createMusicQuote(
  db: Db,
  id: string,
  accountId: string,
  quote: (p: MusicProjectRecord) => MusicQuote,
  now: Date,
): Promise<MusicOutcome> {
  return db.tx(async (tx): Promise<MusicOutcome> => {
    const p = await lock(tx, id, accountId);
    if (!p) return { kind: 'not_found' };
    if (p.status !== 'ARRANGEMENT_READY') return { kind: 'busy', status: p.status };
    await tx.run('UPDATE music_projects SET active_quote_json = ?, updated_at = ? WHERE id = ?', [
      JSON.stringify(quote(p)),
      now.toISOString(),
      id,
    ]);
    return { kind: 'ok', project: (await read(tx, id, accountId))! };
  });
}

export async function startMusicGeneration(
  db: Db,
  id: string,
  accountId: string,
  quoteId: string,
  now: Date,
  generation: (q: MusicQuote) => Record<string, unknown>,
): Promise<MusicOutcome> {
  return db.tx(async (tx): Promise<MusicOutcome> => {
    // The account row before the project row, the order of the project's convention (sql/db.ts),
    // so a debit here and any account-first writer never wait on each other in a cycle. The
    // unlocked look first keeps a missing project, or account, answering not_found.
    const owned = await tx.one<{ id: string }>('SELECT id FROM music_projects WHERE id = ? AND account_id = ?', [id, accountId]);
    if (!owned) return { kind: 'not_found' };
    const balance = await lockAccount(tx, accountId);
    const p = (await lock(tx, id, accountId))!; // projects are never deleted
    if (p.status !== 'ARRANGEMENT_READY') return { kind: 'busy', status: p.status };
    const q = p.activeQuote;
    if (!q || q.quoteId !== quoteId || Date.parse(q.expiresAt) <= now.getTime() || q.arrangementVersion !== p.arrangementVersion) {
      return { kind: 'stale_quote' };
    }
    const amount = BigInt(q.characters);
    if (balance < amount) return { kind: 'insufficient', balance };
    if (amount > 0n) {
      const after = await moveCharacters(tx, { accountId, delta: -amount, reason: 'music_generation', ref: `${id}:${q.quoteId}` });
      if (after === null) throw new Error(`account ${accountId}'s balance fell short after it was checked under its row lock`);
    }
    await tx.run(
      "UPDATE music_projects SET status = 'GENERATION_QUEUED', active_quote_json = NULL, generation_json = ?, updated_at = ? WHERE id = ?",
      [JSON.stringify(generation(q)), now.toISOString(), id],
    );
    return { kind: 'ok', project: (await read(tx, id, accountId))! };
  });
}

// The job-end updates are one conditional UPDATE each: the WHERE is the check, and on
// PostgreSQL an UPDATE re-checks it on the latest row after waiting for a competing writer.

export async function completeArrangement(db: Db, id: string, version: number, plan: Record<string, unknown>, now: Date): Promise<boolean> {
  return db.tx(async (tx) => {
    const changed = await tx.run(
      `UPDATE music_projects SET status = 'ARRANGEMENT_READY', arrangement_json = ?, updated_at = ?
        WHERE id = ? AND status = 'ARRANGEMENT_GENERATING' AND arrangement_version = ?`,
      [JSON.stringify(plan), now.toISOString(), id, version],
    );
    return changed === 1;
  });
}

export async function failArrangement(db: Db, id: string, version: number, now: Date): Promise<boolean> {
  return db.tx(async (tx) => {
    const changed = await tx.run(
      `UPDATE music_projects SET status = 'ARRANGEMENT_FAILED', updated_at = ?
        WHERE id = ? AND status = 'ARRANGEMENT_GENERATING' AND arrangement_version = ?`,
      [now.toISOString(), id, version],
    );
    return changed === 1;
  });
}

export async function listMusicProjectsByStatus(db: Db, status: MusicProjectStatus): Promise<MusicProjectRecord[]> {
  return (await db.all<Row>('SELECT * FROM music_projects WHERE status = ? ORDER BY created_at, id', [status])).map(toProject);
}
