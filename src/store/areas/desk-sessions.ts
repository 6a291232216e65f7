// The desk's login links and browser sessions (contract/desk-sessions.ts, docs/desk.md).
// Both kinds of secret are checked as tickets are: the row is found by its public id and the
// secret's SHA-256 compared in constant time; the link is spent under its row lock.
import crypto from 'node:crypto';
import type { Db } from '../sql/db.js';
import type {
  DeskLinkRedeemOutcome,
  DeskLiveSession,
  DeskLoginLinkRecord,
  DeskSessionOutcome,
  NewDeskSession,
} from '../contract/desk-sessions.js';

interface LinkRow {
  id: string;
  account_id: string;
  secret_hash: Buffer;
  expires_at: string;
  used_at: string | null;
}

interface SessionRow {
  id: string;
  account_id: string;
  secret_hash: Buffer;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
  ended_at: string | null;
}

function sameHash(stored: Buffer, presented: Buffer): boolean {
  return stored.length === presented.length && crypto.timingSafeEqual(stored, presented);
}

export async function insertDeskLoginLink(db: Db, link: DeskLoginLinkRecord, now: Date): Promise<void> {
  await db.tx(async (tx) => {
    await tx.run('DELETE FROM desk_login_links WHERE expires_at < ?', [now.toISOString()]);
    await tx.run('DELETE FROM desk_sessions WHERE expires_at < ?', [now.toISOString()]);
    await tx.run(
      'INSERT INTO desk_login_links (id, account_id, secret_hash, created_at, expires_at, used_at) VALUES (?, ?, ?, ?, ?, NULL)',
      [link.id, link.accountId, link.secretHash, link.createdAt, link.expiresAt],
    );
  });
}

export async function redeemDeskLoginLink(
  db: Db,
  linkId: string,
  secretHash: Buffer,
  session: NewDeskSession,
  now: Date,
): Promise<DeskLinkRedeemOutcome> {
  return db.tx(async (tx): Promise<DeskLinkRedeemOutcome> => {
    const row = await tx.lockOne<LinkRow>('SELECT id, account_id, secret_hash, expires_at, used_at FROM desk_login_links WHERE id = ?', [
      linkId,
    ]);
    if (!row) return { ok: false, reason: 'unknown' };
    if (!sameHash(row.secret_hash, secretHash)) return { ok: false, reason: 'forged' };
    if (row.used_at !== null) return { ok: false, reason: 'used' };
    if (!(Date.parse(row.expires_at) > now.getTime())) return { ok: false, reason: 'expired' };
    const changed = await tx.run('UPDATE desk_login_links SET used_at = ? WHERE id = ? AND used_at IS NULL', [now.toISOString(), linkId]);
    if (changed !== 1) return { ok: false, reason: 'used' };
    await tx.run(
      'INSERT INTO desk_sessions (id, account_id, secret_hash, link_id, created_at, last_seen_at, expires_at, ended_at) VALUES (?, ?, ?, ?, ?, ?, ?, NULL)',
      [session.id, row.account_id, session.secretHash, linkId, session.createdAt, session.createdAt, session.expiresAt],
    );
    return { ok: true, accountId: row.account_id };
  });
}

export async function useDeskSession(
  db: Db,
  sessionId: string,
  secretHash: Buffer,
  now: Date,
  idleMs: number,
  touchAfterMs: number,
): Promise<DeskSessionOutcome> {
  const row = await db.one<SessionRow>('SELECT * FROM desk_sessions WHERE id = ?', [sessionId]);
  if (!row) return { ok: false, reason: 'unknown' };
  if (!sameHash(row.secret_hash, secretHash)) return { ok: false, reason: 'forged' };
  if (row.ended_at !== null) return { ok: false, reason: 'ended' };
  const t = now.getTime();
  if (!(Date.parse(row.expires_at) > t)) return { ok: false, reason: 'expired' };
  const lastSeen = Date.parse(row.last_seen_at);
  if (!(lastSeen + idleMs > t)) return { ok: false, reason: 'idle' };
  let lastSeenAt = row.last_seen_at;
  if (t - lastSeen >= touchAfterMs) {
    lastSeenAt = now.toISOString();
    // Only ever forward; a session ended meanwhile stays ended (checked on the next use).
    await db.run('UPDATE desk_sessions SET last_seen_at = ? WHERE id = ? AND last_seen_at < ?', [lastSeenAt, sessionId, lastSeenAt]);
  }
  return { ok: true, session: { id: row.id, accountId: row.account_id, createdAt: row.created_at, lastSeenAt, expiresAt: row.expires_at } };
}

export async function endDeskSession(db: Db, sessionId: string, now: Date): Promise<boolean> {
  return (await db.run('UPDATE desk_sessions SET ended_at = ? WHERE id = ? AND ended_at IS NULL', [now.toISOString(), sessionId])) === 1;
}

export async function endAccountDeskSessions(db: Db, accountId: string, now: Date): Promise<{ sessions: number; links: number }> {
  const at = now.toISOString();
  return db.tx(async (tx) => ({
    sessions: await tx.run('UPDATE desk_sessions SET ended_at = ? WHERE account_id = ? AND ended_at IS NULL AND expires_at > ?', [
      at,
      accountId,
      at,
    ]),
    links: await tx.run('UPDATE desk_login_links SET used_at = ? WHERE account_id = ? AND used_at IS NULL AND expires_at > ?', [
      at,
      accountId,
      at,
    ]),
  }));
}

export async function closedDeskSessions(db: Db, sessionIds: readonly string[], now: Date, idleMs: number): Promise<string[]> {
  if (sessionIds.length === 0) return [];
  const t = now.getTime();
  const open = new Set<string>();
  // Bounded batches keep the statement's parameter count small whatever a node watches.
  for (let i = 0; i < sessionIds.length; i += 200) {
    const batch = sessionIds.slice(i, i + 200);
    const rows = await db.all<{ id: string; last_seen_at: string; expires_at: string; ended_at: string | null }>(
      `SELECT id, last_seen_at, expires_at, ended_at FROM desk_sessions WHERE id IN (${batch.map(() => '?').join(', ')})`,
      batch,
    );
    for (const r of rows) {
      if (r.ended_at === null && Date.parse(r.expires_at) > t && Date.parse(r.last_seen_at) + idleMs > t) open.add(r.id);
    }
  }
  return sessionIds.filter((id) => !open.has(id));
}

export async function listDeskLiveSessions(db: Db, accountId: string, limit: number, leaseAfter?: Date): Promise<DeskLiveSession[]> {
  const rows = await db.all<{
    id: string;
    transcription_id: string;
    title: string;
    state: 'RECORDING' | 'PAUSED';
    call_id: string | null;
    speaker: string | null;
    created_at: string;
  }>(
    `SELECT id, transcription_id, title, state, call_id, speaker, created_at FROM rt_sessions
      WHERE account_id = ? AND state = 'RECORDING' AND owner_node IS NOT NULL AND owner_epoch = epoch
        AND (CAST(? AS TEXT) IS NULL OR lease_until > ?)
      ORDER BY created_at DESC, id DESC LIMIT ?`,
    [accountId, leaseAfter?.toISOString() ?? null, leaseAfter?.toISOString() ?? null, BigInt(limit)],
  );
  return rows.map((r) => ({
    sessionId: r.id,
    transcriptionId: r.transcription_id,
    title: r.title,
    state: r.state,
    callId: r.call_id,
    speaker: r.speaker,
    createdAt: r.created_at,
  }));
}
