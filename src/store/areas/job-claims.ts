// Background work on any node (docs/scaling.md, "Background work"): the rows that already
// hold a job's state (batch jobs, music projects generating an arrangement, voice designs
// with a preview or callback to do) are the queue. A node claims a row with a lease
// (claimed_by, lease_until), renews it while it works, and lets it go when done; a row whose
// node died becomes claimable again once its lease runs out, so another node picks the job up
// within one lease. Claims use `FOR UPDATE SKIP LOCKED` on PostgreSQL (nodes looking for work
// at the same instant take different rows instead of queueing on one); SQLite's single writer
// does the same in turn.
//
// Why not pg-boss or graphile-worker: the job's state is the domain row itself, changed in the
// same transaction as what the job does (a FAILED batch job and its refund, a segment and the
// channel state after it), and the same code must run on the embedded SQLite store, where a
// PostgreSQL-only queue cannot. A library would keep a second copy of each job's state in its
// own tables, and every transition would have to be made twice and kept in agreement.
import type { Db } from '../sql/db.js';
import type { JobClaim, JobTable } from '../store.js';

/** The tables whose rows are jobs, with their key column (never taken from input). */
const JOB_TABLES: Record<JobTable, string> = {
  batch_jobs: 'transcription_id',
  music_projects: 'id',
  voice_designs: 'id',
};

function leaseEnd(now: Date, leaseMs: number): string {
  return new Date(now.getTime() + leaseMs).toISOString();
}

/**
 * Claim the oldest row of `table` that matches `pending` (a condition over the table's own
 * columns, written in code, e.g. "state IN ('QUEUED', 'RUNNING')") and that no live node holds.
 * Returns its key, or null when there is none.
 */
export async function claimNextJob(
  db: Db,
  table: JobTable,
  pending: string,
  node: string,
  leaseMs: number,
  now: Date,
): Promise<string | null> {
  const key = JOB_TABLES[table];
  return db.tx(async (tx) => {
    const row = await tx.claimOne<{ k: string }>(
      `SELECT ${key} AS k FROM ${table} WHERE (${pending}) AND (claimed_by IS NULL OR lease_until IS NULL OR lease_until < ?) ORDER BY created_at, ${key} LIMIT 1`,
      [now.toISOString()],
    );
    if (!row) return null;
    await tx.run(`UPDATE ${table} SET claimed_by = ?, lease_until = ? WHERE ${key} = ?`, [node, leaseEnd(now, leaseMs), row.k]);
    return row.k;
  });
}

/** Claim one named row (a job this node just created, say) unless a live node holds it. */
export async function claimJob(db: Db, claim: JobClaim, leaseMs: number, now: Date): Promise<boolean> {
  const key = JOB_TABLES[claim.table];
  const changed = await db.run(
    `UPDATE ${claim.table} SET claimed_by = ?, lease_until = ?
      WHERE ${key} = ? AND (claimed_by IS NULL OR claimed_by = ? OR lease_until IS NULL OR lease_until < ?)`,
    [claim.node, leaseEnd(now, leaseMs), claim.key, claim.node, now.toISOString()],
  );
  return changed === 1;
}

/** Extend this node's leases on `keys`; answers the keys it still holds. */
export async function renewJobs(
  db: Db,
  table: JobTable,
  node: string,
  keys: readonly string[],
  leaseMs: number,
  now: Date,
): Promise<string[]> {
  if (keys.length === 0) return [];
  const key = JOB_TABLES[table];
  const rows = await db.all<{ k: string }>(
    `UPDATE ${table} SET lease_until = ? WHERE claimed_by = ? AND ${key} IN (${keys.map(() => '?').join(', ')}) RETURNING ${key} AS k`,
    [leaseEnd(now, leaseMs), node, ...keys],
  );
  return rows.map((r) => r.k);
}

/** Let a job go (done, or this node stops): another node may claim it at once. */
export async function releaseJob(db: Db, claim: JobClaim): Promise<void> {
  const key = JOB_TABLES[claim.table];
  await db.run(`UPDATE ${claim.table} SET claimed_by = NULL, lease_until = NULL WHERE ${key} = ? AND claimed_by = ?`, [
    claim.key,
    claim.node,
  ]);
}

/** True while `node` holds the job: work whose effect must not be repeated checks it in the
 * same transaction (see the callers). */
export const HELD_BY = (table: JobTable) => `${JOB_TABLES[table]} = ? AND claimed_by = ?`;
