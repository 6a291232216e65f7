// Real-time sessions, their idempotent creation and their browser tickets.
import crypto from 'node:crypto';
import { ScribedError } from '../../core/errors.js';
import type {
  CreateSessionInput,
  CreateSessionOutcome,
  SessionProgress,
  SessionRecord,
  SessionState,
  TicketConsumeOutcome,
  TicketRecord,
  TicketScope,
  TranscriptionStatus,
} from '../store.js';
import { greatest, int64, nowIso, type Db, type SqlValue, type Tx } from '../sql/db.js';
import { lockAccount } from './ledger.js';
import { updateTranscriptionStatus } from './history.js';
import { checkJoinCall } from './calls.js';

export interface SessionRow {
  id: string;
  account_id: string;
  transcription_id: string;
  title: string;
  language_hint: string | null;
  options_json: string;
  state: SessionState;
  epoch: bigint;
  epoch_bases: string;
  captured_samples: bigint;
  characters_charged: bigint;
  next_segment_index: bigint;
  call_id: string | null;
  speaker: string | null;
  created_at: string;
  updated_at: string;
}

interface TicketRow {
  id: string;
  secret_hash: Buffer;
  account_id: string;
  session_id: string;
  expires_at: string;
  used_at: string | null;
  scope: TicketScope;
  desk_session_id: string | null;
}

export function toSession(r: SessionRow): SessionRecord {
  const bases = JSON.parse(r.epoch_bases) as string[];
  return {
    id: r.id,
    accountId: r.account_id,
    transcriptionId: r.transcription_id,
    title: r.title,
    languageHint: r.language_hint,
    options: JSON.parse(r.options_json) as Record<string, unknown>,
    state: r.state,
    epoch: Number(r.epoch),
    epochBases: bases.map((b) => BigInt(b)),
    capturedSamples: r.captured_samples,
    charactersCharged: r.characters_charged,
    nextSegmentIndex: Number(r.next_segment_index),
    callId: r.call_id,
    speaker: r.speaker,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

async function mustReadSession(tx: Tx, sessionId: string, lock = false): Promise<SessionRow> {
  const sql = 'SELECT * FROM rt_sessions WHERE id = ?';
  const row = lock ? await tx.lockOne<SessionRow>(sql, [sessionId]) : await tx.one<SessionRow>(sql, [sessionId]);
  if (!row) throw new ScribedError('NOT_FOUND', `session ${sessionId} does not exist`);
  return row;
}

/** Idempotent create. The account row is locked first, so two creates with one key (from
 * two nodes, at the same instant) take turns and the second finds the first's key. */
export async function createSession(db: Db, input: CreateSessionInput): Promise<CreateSessionOutcome> {
  const s = input.session;
  if (s.accountId !== input.accountId) {
    throw new Error(`createSession: session.accountId ${s.accountId} differs from accountId ${input.accountId}`);
  }
  return db.tx(async (tx): Promise<CreateSessionOutcome> => {
    await lockAccount(tx, input.accountId);
    const existing = await tx.one<{ request_hash: string; session_id: string }>(
      'SELECT request_hash, session_id FROM idempotency_keys WHERE account_id = ? AND key = ?',
      [input.accountId, input.idempotencyKey],
    );
    if (existing) {
      if (existing.request_hash !== input.requestHash) return { kind: 'conflict' };
      return { kind: 'replayed', session: toSession(await mustReadSession(tx, existing.session_id)) };
    }
    const call = input.call ?? null;
    if (call) await checkJoinCall(tx, input.accountId, call.callId, call.speaker);
    await tx.run(
      `INSERT INTO transcriptions (id, account_id, kind, session_id, title, status, language_hint, sample_rate_hz,
                                   audio_samples, call_id, speaker, created_at, updated_at, completed_at)
       VALUES (?, ?, 'realtime', ?, ?, 'RECORDING', ?, ?, 0, ?, ?, ?, ?, NULL)`,
      [
        s.transcriptionId,
        input.accountId,
        s.id,
        s.title,
        s.languageHint,
        input.sampleRateHz,
        call?.callId ?? null,
        call?.speaker ?? null,
        s.createdAt,
        s.createdAt,
      ],
    );
    await tx.run(
      `INSERT INTO rt_sessions (id, account_id, transcription_id, title, language_hint, options_json, state, epoch,
                                epoch_bases, captured_samples, characters_charged, next_segment_index, call_id, speaker, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, 'RECORDING', 1, '["0"]', 0, 0, 0, ?, ?, ?, ?)`,
      [
        s.id,
        input.accountId,
        s.transcriptionId,
        s.title,
        s.languageHint,
        JSON.stringify(s.options),
        call?.callId ?? null,
        call?.speaker ?? null,
        s.createdAt,
        s.createdAt,
      ],
    );
    await tx.run('INSERT INTO idempotency_keys (account_id, key, request_hash, session_id, created_at) VALUES (?, ?, ?, ?, ?)', [
      input.accountId,
      input.idempotencyKey,
      input.requestHash,
      s.id,
      s.createdAt,
    ]);
    return { kind: 'created', session: toSession(await mustReadSession(tx, s.id)) };
  });
}

export async function getSession(db: Tx, sessionId: string, accountId: string): Promise<SessionRecord | null> {
  const row = await db.one<SessionRow>('SELECT * FROM rt_sessions WHERE id = ? AND account_id = ?', [sessionId, accountId]);
  return row ? toSession(row) : null;
}

export async function listSessionsByState(db: Tx, state: SessionState): Promise<SessionRecord[]> {
  return (await db.all<SessionRow>('SELECT * FROM rt_sessions WHERE state = ? ORDER BY created_at, id', [state])).map(toSession);
}

export async function setSessionState(
  db: Db,
  sessionId: string,
  state: SessionState,
  transcriptionStatus: TranscriptionStatus,
): Promise<void> {
  await db.tx(async (tx) => {
    const row = await mustReadSession(tx, sessionId);
    const now = nowIso();
    await tx.run('UPDATE rt_sessions SET state = ?, updated_at = ? WHERE id = ?', [state, now, sessionId]);
    await updateTranscriptionStatus(tx, row.transcription_id, transcriptionStatus, undefined, now);
  });
}

export async function beginEpoch(db: Db, sessionId: string): Promise<SessionRecord> {
  return db.tx(async (tx) => {
    const row = await mustReadSession(tx, sessionId, true);
    const bases = JSON.parse(row.epoch_bases) as string[];
    bases.push(row.captured_samples.toString());
    await tx.run('UPDATE rt_sessions SET epoch = epoch + 1, epoch_bases = ?, updated_at = ? WHERE id = ?', [
      JSON.stringify(bases),
      nowIso(),
      sessionId,
    ]);
    return toSession(await mustReadSession(tx, sessionId));
  });
}

export async function saveProgress(db: Db, sessionId: string, progress: SessionProgress): Promise<void> {
  if (!(await raiseProgress(db, 'id = ?', [sessionId], progress)))
    throw new ScribedError('NOT_FOUND', `session ${sessionId} does not exist`);
}

/** Raise a session's cursors where `where` holds; true when a row changed. One statement, so
 * no transaction is needed; the larger value wins everywhere, so a late or reordered write can
 * never move a cursor backwards. */
export async function raiseProgress(db: Db, where: string, whereParams: readonly SqlValue[], progress: SessionProgress): Promise<boolean> {
  const captured = int64(progress.capturedSamples, 'capturedSamples');
  const charged = progress.charactersCharged === undefined ? null : int64(progress.charactersCharged, 'charactersCharged');
  const nextIndex = progress.nextSegmentIndex ?? null;
  if (nextIndex !== null && (!Number.isSafeInteger(nextIndex) || nextIndex < 0)) {
    throw new RangeError(`nextSegmentIndex must be a non-negative integer, got ${nextIndex}`);
  }
  const changed = await db.run(
    `UPDATE rt_sessions
        SET captured_samples   = ${greatest(db, 'captured_samples', '?')},
            characters_charged = ${greatest(db, 'characters_charged', 'COALESCE(?, characters_charged)')},
            next_segment_index = ${greatest(db, 'next_segment_index', 'COALESCE(?, next_segment_index)')},
            updated_at         = ?
      WHERE ${where}`,
    [captured, charged, nextIndex === null ? null : BigInt(nextIndex), nowIso(), ...whereParams],
  );
  return changed === 1;
}

export async function insertTicket(db: Db, ticket: TicketRecord): Promise<void> {
  await db.run(
    'INSERT INTO tickets (id, secret_hash, account_id, session_id, expires_at, used_at, scope, desk_session_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    [
      ticket.id,
      ticket.secretHash,
      ticket.accountId,
      ticket.sessionId,
      ticket.expiresAt,
      ticket.usedAt,
      ticket.scope ?? 'stream',
      ticket.deskSessionId ?? null,
    ],
  );
}

/** Mark a ticket used if it exists, is unused and unexpired, and its hash matches (constant
 * time). The ticket row is locked, and the update re-checks used_at, so of two nodes
 * consuming one ticket at once exactly one succeeds. */
export async function consumeTicket(db: Db, ticketId: string, secretHash: Buffer, now: Date): Promise<TicketConsumeOutcome> {
  return db.tx(async (tx): Promise<TicketConsumeOutcome> => {
    const row = await tx.lockOne<TicketRow>('SELECT * FROM tickets WHERE id = ?', [ticketId]);
    if (!row) return { ok: false, reason: 'unknown' };
    const stored = row.secret_hash;
    if (stored.length !== secretHash.length || !crypto.timingSafeEqual(stored, secretHash)) return { ok: false, reason: 'forged' };
    if (row.used_at !== null) return { ok: false, reason: 'used' };
    const expires = Date.parse(row.expires_at);
    if (!Number.isFinite(expires) || expires <= now.getTime()) return { ok: false, reason: 'expired' };
    const usedAt = now.toISOString();
    const changed = await tx.run('UPDATE tickets SET used_at = ? WHERE id = ? AND used_at IS NULL', [usedAt, ticketId]);
    if (changed !== 1) return { ok: false, reason: 'used' };
    return {
      ok: true,
      ticket: {
        id: row.id,
        accountId: row.account_id,
        sessionId: row.session_id,
        secretHash: row.secret_hash,
        expiresAt: row.expires_at,
        usedAt,
        scope: row.scope,
        deskSessionId: row.desk_session_id,
      },
    };
  });
}
