// SQLite table of voice designs (issue 4): the design, its preview recording (a content
// hash into src/store/recordings.ts) and the visible state of its callback delivery.
import type { SqlAccess } from './sqlite-access.js';
import type { CallbackState, VoiceDesignRecord, VoiceDesignStatus } from './store.js';

interface Row {
  id: string;
  account_id: string;
  description: string;
  preview_text: string;
  callback_url: string | null;
  status: VoiceDesignStatus;
  params_json: string;
  preview_sha256: string | null;
  preview_bytes: bigint | null;
  error: string | null;
  callback_state: CallbackState;
  callback_attempts: bigint;
  callback_last_status: bigint | null;
  callback_last_error: string | null;
  callback_next_at: string | null;
  created_at: string;
  updated_at: string;
}

function toDesign(r: Row): VoiceDesignRecord {
  return {
    id: r.id,
    accountId: r.account_id,
    description: r.description,
    previewText: r.preview_text,
    callbackUrl: r.callback_url,
    status: r.status,
    params: JSON.parse(r.params_json) as Record<string, unknown>,
    previewSha256: r.preview_sha256,
    previewBytes: r.preview_bytes === null ? null : Number(r.preview_bytes),
    error: r.error,
    callback: {
      state: r.callback_state,
      attempts: Number(r.callback_attempts),
      lastStatus: r.callback_last_status === null ? null : Number(r.callback_last_status),
      lastError: r.callback_last_error,
      nextAt: r.callback_next_at,
    },
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

const byId = (sql: SqlAccess, id: string) => sql.stmt('SELECT * FROM voice_designs WHERE id = ?').get(id) as Row | undefined;

export function createVoiceDesign(
  sql: SqlAccess,
  d: Omit<VoiceDesignRecord, 'status' | 'previewSha256' | 'previewBytes' | 'error' | 'callback' | 'updatedAt'>,
): VoiceDesignRecord {
  return sql.write(() => {
    sql
      .stmt(
        `INSERT INTO voice_designs (id, account_id, description, preview_text, callback_url, status, params_json, callback_state, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, 'PENDING', ?, 'NONE', ?, ?)`,
      )
      .run(d.id, d.accountId, d.description, d.previewText, d.callbackUrl, JSON.stringify(d.params), d.createdAt, d.createdAt);
    return toDesign(byId(sql, d.id)!);
  });
}

export function createVoiceDesignIfRoom(
  sql: SqlAccess,
  d: Omit<VoiceDesignRecord, 'status' | 'previewSha256' | 'previewBytes' | 'error' | 'callback' | 'updatedAt'>,
  maxPending: number,
): VoiceDesignRecord | null {
  // The write lock is taken before the count, so parallel creates cannot both see room.
  return sql.write(() => {
    const { n } = sql.stmt("SELECT COUNT(*) AS n FROM voice_designs WHERE status = 'PENDING' AND account_id = ?").get(d.accountId) as { n: bigint };
    if (Number(n) >= maxPending) return null;
    return createVoiceDesign(sql, d);
  });
}

export function getVoiceDesign(sql: SqlAccess, id: string, accountId: string | null): VoiceDesignRecord | null {
  const r = byId(sql, id);
  if (!r || (accountId !== null && r.account_id !== accountId)) return null;
  return toDesign(r);
}

export function finishVoiceDesign(
  sql: SqlAccess,
  id: string,
  outcome: { previewSha256: string; previewBytes: number } | { error: string },
  now: Date,
): VoiceDesignRecord | null {
  return sql.write(() => {
    const r = byId(sql, id);
    if (!r || r.status !== 'PENDING') return null;
    const at = now.toISOString();
    const cb: CallbackState = r.callback_url ? 'PENDING' : 'NONE';
    if ('error' in outcome) {
      sql
        .stmt("UPDATE voice_designs SET status = 'FAILED', error = ?, callback_state = ?, callback_next_at = ?, updated_at = ? WHERE id = ?")
        .run(outcome.error, cb, cb === 'PENDING' ? at : null, at, id);
    } else {
      sql
        .stmt(
          `UPDATE voice_designs SET status = 'COMPLETED', preview_sha256 = ?, preview_bytes = ?, callback_state = ?, callback_next_at = ?, updated_at = ?
            WHERE id = ?`,
        )
        .run(outcome.previewSha256, outcome.previewBytes, cb, cb === 'PENDING' ? at : null, at, id);
    }
    return toDesign(byId(sql, id)!);
  });
}

export function recordCallbackAttempt(sql: SqlAccess, id: string, c: VoiceDesignRecord['callback'], now: Date): void {
  sql.write(() => {
    sql
      .stmt(
        `UPDATE voice_designs SET callback_state = ?, callback_attempts = ?, callback_last_status = ?, callback_last_error = ?,
                callback_next_at = ?, updated_at = ? WHERE id = ?`,
      )
      .run(c.state, c.attempts, c.lastStatus, c.lastError, c.nextAt, now.toISOString(), id);
  });
}

export function failVoiceDesignPreview(sql: SqlAccess, id: string, previewSha256: string, error: string, now: Date): VoiceDesignRecord | null {
  return sql.write(() => {
    const changed = sql
      .stmt(
        `UPDATE voice_designs SET status = 'FAILED', preview_sha256 = NULL, preview_bytes = NULL, error = ?, updated_at = ?
          WHERE id = ? AND status = 'COMPLETED' AND preview_sha256 = ?`,
      )
      .run(error, now.toISOString(), id, previewSha256).changes;
    return changed === 1 ? toDesign(byId(sql, id)!) : null;
  });
}

export function listUnfinishedVoiceDesigns(sql: SqlAccess): VoiceDesignRecord[] {
  return (sql.stmt("SELECT * FROM voice_designs WHERE status = 'PENDING' OR callback_state = 'PENDING' ORDER BY created_at, id").all() as Row[]).map(toDesign);
}
