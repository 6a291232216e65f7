// Erasure, retention and the audit trail (contract/erasure.ts). A History row is erased with
// everything that holds its words or audio: segments, its batch job and that job's audio
// rows, its recording (and the pieces of one being written), and for a real-time row its
// session with the session's tickets, idempotency keys and spool chunks. The characters ledger keeps its rows (amounts and ids only, no content: the
// account's balance must still add up). An erased row is gone for every reader at commit;
// what the database files still hold afterwards is in docs/redaction.md.
import { eraseAnalyticsOf } from './analytics.js';
import type { AuditEvent, EraseOutcome, RetentionPolicy } from '../store.js';
import type { Db, Tx } from '../sql/db.js';
import { deleteRecordingRows, unreferencedContent } from './session-recordings.js';

/** Statuses a row can be erased in: it has ended, so nothing writes to it any more. */
const ENDED = new Set(['COMPLETED', 'FAILED']);

interface RowToErase {
  id: string;
  status: string;
  session_id: string | null;
}

async function eraseRows(tx: Tx, rows: RowToErase[]): Promise<{ audioFiles: string[]; recordingFiles: string[] }> {
  const audioFiles: string[] = [];
  const recordings: string[] = [];
  for (const row of rows) {
    recordings.push(...(await deleteRecordingRows(tx, row.id)));
    const job = await tx.one<{ audio_file: string }>('SELECT audio_file FROM batch_jobs WHERE transcription_id = ?', [row.id]);
    if (job) {
      await tx.run('DELETE FROM batch_audio WHERE audio_file = ?', [job.audio_file]);
      await tx.run('DELETE FROM batch_jobs WHERE transcription_id = ?', [row.id]);
      audioFiles.push(job.audio_file);
    }
    const session = await tx.one<{ id: string }>('SELECT id FROM rt_sessions WHERE transcription_id = ?', [row.id]);
    if (session) {
      for (const table of ['tickets', 'idempotency_keys', 'spool_chunks'])
        await tx.run(`DELETE FROM ${table} WHERE session_id = ?`, [session.id]);
      await tx.run('DELETE FROM rt_sessions WHERE id = ?', [session.id]);
    }
    await eraseAnalyticsOf(tx, row.id);
    await tx.run('DELETE FROM segments WHERE transcription_id = ?', [row.id]);
    await tx.run('DELETE FROM transcriptions WHERE id = ?', [row.id]);
  }
  return { audioFiles, recordingFiles: await unreferencedContent(tx, recordings) };
}

export async function eraseTranscription(db: Db, transcriptionId: string, accountId: string): Promise<EraseOutcome> {
  return db.tx(async (tx) => {
    const row = await tx.lockOne<RowToErase>('SELECT id, status, session_id FROM transcriptions WHERE id = ? AND account_id = ?', [
      transcriptionId,
      accountId,
    ]);
    if (!row) return { kind: 'not_found' };
    if (!ENDED.has(row.status)) return { kind: 'in_progress', transcriptionId: row.id };
    return { kind: 'erased', transcriptionIds: [row.id], ...(await eraseRows(tx, [row])) };
  });
}

export async function eraseCall(db: Db, callId: string, accountId: string): Promise<EraseOutcome> {
  return db.tx(async (tx) => {
    const call = await tx.lockOne<{ id: string }>('SELECT id FROM calls WHERE id = ? AND account_id = ?', [callId, accountId]);
    if (!call) return { kind: 'not_found' };
    const legs = await tx.all<RowToErase>('SELECT id, status, session_id FROM transcriptions WHERE call_id = ? ORDER BY id', [callId]);
    const busy = legs.find((l) => !ENDED.has(l.status));
    if (busy) return { kind: 'in_progress', transcriptionId: busy.id };
    const files = await eraseRows(tx, legs);
    await tx.run('DELETE FROM calls WHERE id = ?', [callId]);
    return { kind: 'erased', transcriptionIds: legs.map((l) => l.id), ...files };
  });
}

function days(n: number | null, what: string): bigint | null {
  if (n === null) return null;
  if (!Number.isSafeInteger(n) || n < 1 || n > 36_500)
    throw new RangeError(`${what} must be a whole number of days from 1 to 36500, or none`);
  return BigInt(n);
}

export async function setRetention(
  db: Db,
  accountId: string,
  policy: { transcriptsDays: number | null; recordingsDays: number | null },
  now: Date,
): Promise<void> {
  const t = days(policy.transcriptsDays, 'transcripts retention');
  const r = days(policy.recordingsDays, 'recordings retention');
  await db.run(
    `INSERT INTO retention_policies (account_id, transcripts_days, recordings_days, updated_at) VALUES (?, ?, ?, ?)
     ON CONFLICT (account_id) DO UPDATE SET transcripts_days = excluded.transcripts_days, recordings_days = excluded.recordings_days, updated_at = excluded.updated_at`,
    [accountId, t, r, now.toISOString()],
  );
}

export async function getRetention(db: Tx, accountId: string): Promise<RetentionPolicy | null> {
  const row = await db.one<{ account_id: string; transcripts_days: bigint | null; recordings_days: bigint | null; updated_at: string }>(
    'SELECT * FROM retention_policies WHERE account_id = ?',
    [accountId],
  );
  if (!row) return null;
  const n = (v: bigint | null) => (v === null ? null : Number(v));
  return {
    accountId: row.account_id,
    transcriptsDays: n(row.transcripts_days),
    recordingsDays: n(row.recordings_days),
    updatedAt: row.updated_at,
  };
}

/** Per account with a transcripts retention, its ended rows created before now minus that
 * many days (ISO timestamps compare as text; the account's newest-first index serves it). */
export async function listExpiredTranscriptions(
  db: Tx,
  now: Date,
  limit: number,
): Promise<Array<{ transcriptionId: string; accountId: string }>> {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError('limit must be a positive integer');
  const policies = await db.all<{ account_id: string; transcripts_days: bigint }>(
    'SELECT account_id, transcripts_days FROM retention_policies WHERE transcripts_days IS NOT NULL ORDER BY account_id',
  );
  const out: Array<{ transcriptionId: string; accountId: string }> = [];
  for (const p of policies) {
    if (out.length >= limit) break;
    const cutoff = new Date(now.getTime() - Number(p.transcripts_days) * 86_400_000).toISOString();
    const rows = await db.all<{ id: string }>(
      `SELECT id FROM transcriptions WHERE account_id = ? AND created_at < ? AND status IN ('COMPLETED', 'FAILED') ORDER BY created_at, id LIMIT ?`,
      [p.account_id, cutoff, limit - out.length],
    );
    out.push(...rows.map((r) => ({ transcriptionId: r.id, accountId: p.account_id })));
  }
  return out;
}

export async function recordAudit(db: Db, e: AuditEvent): Promise<void> {
  await db.run('INSERT INTO audit_events (id, account_id, credential_id, action, subject_id, created_at) VALUES (?, ?, ?, ?, ?, ?)', [
    e.id,
    e.accountId,
    e.credentialId,
    e.action,
    e.subjectId,
    e.createdAt,
  ]);
}

export async function listAudit(db: Tx, accountId: string, limit: number): Promise<AuditEvent[]> {
  const rows = await db.all<{
    id: string;
    account_id: string;
    credential_id: string | null;
    action: AuditEvent['action'];
    subject_id: string;
    created_at: string;
  }>('SELECT * FROM audit_events WHERE account_id = ? ORDER BY created_at DESC, id DESC LIMIT ?', [accountId, limit]);
  return rows.map((r) => ({
    id: r.id,
    accountId: r.account_id,
    credentialId: r.credential_id,
    action: r.action,
    subjectId: r.subject_id,
    createdAt: r.created_at,
  }));
}
