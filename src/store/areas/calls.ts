// Calls and their legs (docs/calls.md). A call is a row of its own; its legs are History rows
// (transcriptions.call_id, .speaker) and, for real-time legs, their sessions, which join at
// creation (areas/sessions.ts calls joinCall inside its transaction).
import { MAX_CALL_LEGS } from '../../core/calls.js';
import { ScribedError } from '../../core/errors.js';
import type { CallLegRecord, CallRecord, CreateCallInput, CreateCallOutcome, HistoryPosition, TranscriptionStatus } from '../store.js';
import type { Db, SqlValue, Tx } from '../sql/db.js';
import { lockAccount } from './ledger.js';

interface CallRow {
  id: string;
  account_id: string;
  external_id: string | null;
  title: string;
  agent_id: string | null;
  idempotency_key: string;
  request_hash: string;
  created_at: string;
  updated_at: string;
}

interface LegRow {
  call_id: string;
  speaker: string;
  id: string;
  session_id: string | null;
  kind: 'realtime' | 'batch';
  status: TranscriptionStatus;
  sample_rate_hz: bigint;
  audio_samples: bigint;
  created_at: string;
  updated_at: string;
}

function toLeg(r: LegRow): CallLegRecord {
  return {
    speaker: r.speaker,
    transcriptionId: r.id,
    sessionId: r.session_id,
    kind: r.kind,
    status: r.status,
    sampleRateHz: Number(r.sample_rate_hz),
    audioSamples: r.audio_samples,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/** The calls with their legs, in the order given. One query for all the legs. */
async function withLegs(db: Tx, rows: CallRow[]): Promise<CallRecord[]> {
  if (rows.length === 0) return [];
  const legs = await db.all<LegRow>(
    `SELECT call_id, speaker, id, session_id, kind, status, sample_rate_hz, audio_samples, created_at, updated_at
       FROM transcriptions WHERE call_id IN (${rows.map(() => '?').join(', ')})
      ORDER BY created_at, id`,
    rows.map((r) => r.id),
  );
  return rows.map((r) => ({
    id: r.id,
    accountId: r.account_id,
    externalId: r.external_id,
    title: r.title,
    agentId: r.agent_id,
    legs: legs.filter((l) => l.call_id === r.id).map(toLeg),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  }));
}

async function readCall(db: Tx, callId: string): Promise<CallRecord> {
  const row = await db.one<CallRow>('SELECT * FROM calls WHERE id = ?', [callId]);
  if (!row) throw new Error(`call ${callId} vanished inside its transaction`);
  return (await withLegs(db, [row]))[0]!;
}

/** Idempotent create. The account row is locked first, so two creates with one key (the two
 * legs of one PBX call reaching two nodes at once) take turns and the second finds the first. */
export async function createCall(db: Db, input: CreateCallInput): Promise<CreateCallOutcome> {
  const c = input.call;
  return db.tx(async (tx): Promise<CreateCallOutcome> => {
    await lockAccount(tx, c.accountId);
    const existing = await tx.one<{ id: string; request_hash: string }>(
      'SELECT id, request_hash FROM calls WHERE account_id = ? AND idempotency_key = ?',
      [c.accountId, input.idempotency.key],
    );
    if (existing) {
      if (existing.request_hash !== input.idempotency.requestHash) return { kind: 'conflict' };
      return { kind: 'replayed', call: await readCall(tx, existing.id) };
    }
    await tx.run(
      `INSERT INTO calls (id, account_id, external_id, title, agent_id, idempotency_key, request_hash, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        c.id,
        c.accountId,
        c.externalId,
        c.title,
        c.agentId ?? null,
        input.idempotency.key,
        input.idempotency.requestHash,
        c.createdAt,
        c.createdAt,
      ],
    );
    return { kind: 'created', call: await readCall(tx, c.id) };
  });
}

/**
 * Checks that `speaker` may join the call, inside the caller's transaction, which holds the
 * account's lock (so of two legs racing for one speaker exactly one passes; the unique index
 * on (call_id, speaker) is the backstop). Another account's call reads as missing.
 */
export async function checkJoinCall(tx: Tx, accountId: string, callId: string, speaker: string): Promise<void> {
  const call = await tx.one<{ id: string }>('SELECT id FROM calls WHERE id = ? AND account_id = ?', [callId, accountId]);
  if (!call) throw new ScribedError('NOT_FOUND', `call ${callId} does not exist`);
  const legs = await tx.all<{ speaker: string }>('SELECT speaker FROM transcriptions WHERE call_id = ?', [callId]);
  if (legs.some((l) => l.speaker === speaker)) {
    throw new ScribedError('CALL_SPEAKER_TAKEN', `call ${callId} already has a leg with speaker ${speaker}`, {
      details: { field: 'speaker' },
    });
  }
  if (legs.length >= MAX_CALL_LEGS)
    throw new ScribedError('CALL_LEG_LIMIT', `call ${callId} already holds ${legs.length} legs, the most a call may`);
}

export async function getCall(db: Tx, callId: string, accountId: string): Promise<CallRecord | null> {
  const row = await db.one<CallRow>('SELECT * FROM calls WHERE id = ? AND account_id = ?', [callId, accountId]);
  return row ? (await withLegs(db, [row]))[0]! : null;
}

/** Newest first, keyset on (created_at, id) as History (areas/history.ts); served by
 * calls_account_newest, or calls_account_external with an external id. */
export async function listCalls(
  db: Tx,
  accountId: string,
  limit: number,
  opts: { externalId?: string; after?: HistoryPosition } = {},
): Promise<CallRecord[]> {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError(`limit must be a positive integer`);
  const where = ['account_id = ?'];
  const params: SqlValue[] = [accountId];
  if (opts.externalId !== undefined) {
    where.push('external_id = ?');
    params.push(opts.externalId);
  }
  if (opts.after !== undefined) {
    where.push('(created_at < ? OR (created_at = ? AND id < ?))');
    params.push(opts.after.createdAt, opts.after.createdAt, opts.after.id);
  }
  const rows = await db.all<CallRow>(`SELECT * FROM calls WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT ?`, [
    ...params,
    limit,
  ]);
  return withLegs(db, rows);
}
