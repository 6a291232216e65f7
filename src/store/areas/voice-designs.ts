// Voice designs (docs/api.md), on either engine (sql/db.ts): the design, its preview recording
// (a content hash into src/store/recordings.ts) and the visible state of its callback
// delivery.
//
// Locks (PostgreSQL runs READ COMMITTED): the PENDING quota is counted under the account
// lock, so parallel creates cannot both see room. The worker's transitions have no account:
// finishing locks the design row before its PENDING check, and the preview undo is one
// UPDATE whose WHERE re-checks the state, so a transition applies at most once.
//
// The worker's transitions (finish, preview undo, callback attempt) take the node that works
// the design (src/voices/design-jobs.ts): given one, they change nothing unless the design's
// job claim (claimed_by, areas/job-claims.ts) names that node, checked in the same statement
// or under the row lock. A node that lost the design to another (its lease ran out while it
// stalled) cannot finish it a second time or record a callback attempt over the new owner's.
import type { CallbackState, VoiceDesignRecord, VoiceDesignStatus } from '../store.js';
import type { Db, Tx } from '../sql/db.js';
import { lockAccount } from './ledger.js';

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

/** SQL condition (and its parameters) that the row is claimed by `node`; always true when no
 * node is given (callers outside the job worker). */
function heldBy(node: string | undefined): { sql: string; params: string[] } {
  return node === undefined ? { sql: '', params: [] } : { sql: ' AND claimed_by = ?', params: [node] };
}

type NewDesign = Omit<VoiceDesignRecord, 'status' | 'previewSha256' | 'previewBytes' | 'error' | 'callback' | 'updatedAt'>;

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

const BY_ID = 'SELECT * FROM voice_designs WHERE id = ?';

const byId = (tx: Tx, id: string) => tx.one<Row>(BY_ID, [id]);

async function insertDesign(tx: Tx, d: NewDesign): Promise<VoiceDesignRecord> {
  await tx.run(
    `INSERT INTO voice_designs (id, account_id, description, preview_text, callback_url, status, params_json, callback_state, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, 'PENDING', ?, 'NONE', ?, ?)`,
    [d.id, d.accountId, d.description, d.previewText, d.callbackUrl, JSON.stringify(d.params), d.createdAt, d.createdAt],
  );
  return toDesign((await byId(tx, d.id))!);
}

export async function createVoiceDesign(db: Db, d: NewDesign): Promise<VoiceDesignRecord> {
  return db.tx((tx) => insertDesign(tx, d));
}

export async function createVoiceDesignIfRoom(db: Db, d: NewDesign, maxPending: number): Promise<VoiceDesignRecord | null> {
  return db.tx(async (tx) => {
    // The account is locked before the count, so parallel creates cannot both see room.
    // NOT_FOUND for an unknown account (the insert failed on its foreign key before).
    await lockAccount(tx, d.accountId);
    const { n } = (await tx.one<{ n: bigint }>("SELECT COUNT(*) AS n FROM voice_designs WHERE status = 'PENDING' AND account_id = ?", [
      d.accountId,
    ]))!;
    if (Number(n) >= maxPending) return null;
    return insertDesign(tx, d);
  });
}

export async function getVoiceDesign(db: Db, id: string, accountId: string | null): Promise<VoiceDesignRecord | null> {
  const r = await byId(db, id);
  if (!r || (accountId !== null && r.account_id !== accountId)) return null;
  return toDesign(r);
}

export async function finishVoiceDesign(
  db: Db,
  id: string,
  outcome: { previewSha256: string; previewBytes: number } | { error: string },
  now: Date,
  node?: string,
): Promise<VoiceDesignRecord | null> {
  return db.tx(async (tx) => {
    // Locked before the PENDING check: a second finish waits, then reads the first's result.
    const r = await tx.lockOne<Row & { claimed_by: string | null }>(BY_ID, [id]);
    if (!r || r.status !== 'PENDING') return null;
    if (node !== undefined && r.claimed_by !== node) return null;
    const at = now.toISOString();
    const cb: CallbackState = r.callback_url ? 'PENDING' : 'NONE';
    if ('error' in outcome) {
      await tx.run(
        "UPDATE voice_designs SET status = 'FAILED', error = ?, callback_state = ?, callback_next_at = ?, updated_at = ? WHERE id = ?",
        [outcome.error, cb, cb === 'PENDING' ? at : null, at, id],
      );
    } else {
      await tx.run(
        `UPDATE voice_designs SET status = 'COMPLETED', preview_sha256 = ?, preview_bytes = ?, callback_state = ?, callback_next_at = ?, updated_at = ?
          WHERE id = ?`,
        [outcome.previewSha256, outcome.previewBytes, cb, cb === 'PENDING' ? at : null, at, id],
      );
    }
    return toDesign((await byId(tx, id))!);
  });
}

export async function recordCallbackAttempt(
  db: Db,
  id: string,
  c: VoiceDesignRecord['callback'],
  now: Date,
  node?: string,
): Promise<boolean> {
  // One UPDATE: the worker holding the design's claim has the latest word.
  const held = heldBy(node);
  const changed = await db.tx((tx) =>
    tx.run(
      `UPDATE voice_designs SET callback_state = ?, callback_attempts = ?, callback_last_status = ?, callback_last_error = ?,
              callback_next_at = ?, updated_at = ? WHERE id = ?${held.sql}`,
      [c.state, c.attempts, c.lastStatus, c.lastError, c.nextAt, now.toISOString(), id, ...held.params],
    ),
  );
  return changed === 1;
}

export async function failVoiceDesignPreview(
  db: Db,
  id: string,
  previewSha256: string,
  error: string,
  now: Date,
  node?: string,
): Promise<VoiceDesignRecord | null> {
  const held = heldBy(node);
  return db.tx(async (tx) => {
    // The WHERE re-checks the state on the row's latest version, so no lock is needed.
    const changed = await tx.run(
      `UPDATE voice_designs SET status = 'FAILED', preview_sha256 = NULL, preview_bytes = NULL, error = ?, updated_at = ?
        WHERE id = ? AND status = 'COMPLETED' AND preview_sha256 = ?${held.sql}`,
      [error, now.toISOString(), id, previewSha256, ...held.params],
    );
    return changed === 1 ? toDesign((await byId(tx, id))!) : null;
  });
}

export async function listUnfinishedVoiceDesigns(db: Db): Promise<VoiceDesignRecord[]> {
  return (
    await db.all<Row>("SELECT * FROM voice_designs WHERE status = 'PENDING' OR callback_state = 'PENDING' ORDER BY created_at, id")
  ).map(toDesign);
}

/** One node on the store (the embedded SQLite store, behind the data-dir lock): claims left by
 * an earlier process are void, so its designs can be taken up at once. */
export async function clearOtherVoiceDesignClaims(db: Db, node: string): Promise<void> {
  await db.run('UPDATE voice_designs SET claimed_by = NULL, lease_until = NULL WHERE claimed_by IS NOT NULL AND claimed_by <> ?', [node]);
}
