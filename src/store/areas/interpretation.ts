// Interpretation projects (docs/api.md) on either engine (sql/db.ts). Each exported function is
// one method of the Store. Every function that writes runs as exactly one db.tx, so a retry's
// key check, ownership check, plan check, debit and state change commit together or not at
// all. Characters move only through areas/ledger.ts.
//
// Locks (PostgreSQL runs READ COMMITTED; SQLite's BEGIN IMMEDIATE already serialises all
// writers). Writers take them in one order, account row before target row, so two of them
// never wait on each other in a cycle:
// - createInterpretationProject and retryInterpretationTarget lock the account first (the
//   balance check and the retry key check must hold until commit), then the target;
// - transitionInterpretationTarget has no account from its caller: it reads the target's
//   (never changing) account_id, locks that account, then the target;
// - issueRetryPlan touches only the target and its answer for a missing account must stay
//   not_found, so it locks the target row alone.
//
// getInterpretationProject runs two SELECTs (project, then its targets) outside a
// transaction. It cannot see a torn project: a project row and all its targets are inserted
// in one transaction and neither is ever deleted nor the project row updated, so a later
// statement that sees the project sees all its targets; each target row is read whole by the
// one SELECT, so only target states changed between the two reads may be newer than the
// project row, which holds nothing about them. Targets keep the order of the request through
// their `seq` column (their index in it).
import { ScribedError } from '../../core/errors.js';
import type { Db, Tx } from '../sql/db.js';
import type {
  InterpretationProjectRecord,
  InterpretationRetryInput,
  InterpretationRetryOutcome,
  InterpretationTargetRecord,
  InterpretationTargetState,
  RetryPlan,
  RetryPlanOutcome,
  NewInterpretationProject,
} from '../store.js';
import { lockAccount, moveCharacters } from './ledger.js';

interface ProjectRow {
  id: string;
  account_id: string;
  title: string;
  source_language: string;
  source_json: string | null;
  created_at: string;
}

interface TargetRow {
  id: string;
  project_id: string;
  account_id: string;
  language: string;
  generation_id: string;
  state: InterpretationTargetState;
  reservation_cycle: bigint;
  reserved_characters: bigint;
  source_units: bigint;
  plan_cycle: bigint | null;
  plan_characters: bigint | null;
  plan_rate_version: string | null;
  plan_expires_at: string | null;
  created_at: string;
  updated_at: string;
  seq: bigint;
}

function toTarget(r: TargetRow): InterpretationTargetRecord {
  return {
    id: r.id,
    projectId: r.project_id,
    accountId: r.account_id,
    language: r.language,
    generationId: r.generation_id,
    state: r.state,
    reservationCycle: Number(r.reservation_cycle),
    reservedCharacters: r.reserved_characters,
    sourceUnits: r.source_units,
    plan:
      r.plan_cycle === null || r.plan_characters === null || r.plan_rate_version === null || r.plan_expires_at === null
        ? null
        : {
            nextReservationCycle: Number(r.plan_cycle),
            characters: r.plan_characters,
            rateVersion: r.plan_rate_version,
            expiresAt: r.plan_expires_at,
          },
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

async function readProject(tx: Tx, projectId: string, accountId: string): Promise<InterpretationProjectRecord | null> {
  const p = await tx.one<ProjectRow>('SELECT * FROM interp_projects WHERE id = ? AND account_id = ?', [projectId, accountId]);
  if (!p) return null;
  const targets = (await tx.all<TargetRow>('SELECT * FROM interp_targets WHERE project_id = ? ORDER BY seq, id', [projectId])).map(
    toTarget,
  );
  return {
    id: p.id,
    accountId: p.account_id,
    title: p.title,
    sourceLanguage: p.source_language,
    source: p.source_json === null ? null : (JSON.parse(p.source_json) as { text: string }),
    createdAt: p.created_at,
    targets,
  };
}

const OWNED_TARGET = 'SELECT * FROM interp_targets WHERE id = ? AND project_id = ? AND account_id = ?';

async function readOwnedTarget(tx: Tx, projectId: string, targetId: string, accountId: string): Promise<InterpretationTargetRecord | null> {
  const row = await tx.one<TargetRow>(OWNED_TARGET, [targetId, projectId, accountId]);
  return row ? toTarget(row) : null;
}

/** The same read, locking the target row until the transaction ends. */
async function lockOwnedTarget(tx: Tx, projectId: string, targetId: string, accountId: string): Promise<InterpretationTargetRecord | null> {
  const row = await tx.lockOne<TargetRow>(OWNED_TARGET, [targetId, projectId, accountId]);
  return row ? toTarget(row) : null;
}

/** moveCharacters answered "short" after the balance was checked under the account lock. */
function shortAfterCheck(accountId: string): never {
  throw new Error(`account ${accountId}'s balance fell short after it was checked under its row lock`);
}

export async function createInterpretationProject(db: Db, input: NewInterpretationProject): Promise<InterpretationProjectRecord | null> {
  return db.tx(async (tx) => {
    // Locked first: the total must still be covered when the reservations below are taken.
    // NOT_FOUND for an unknown account, as before.
    const balance = await lockAccount(tx, input.accountId);
    const total = input.targets.reduce((sum, t) => sum + t.characters, 0n);
    if (balance < total) return null;
    await tx.run(
      'INSERT INTO interp_projects (id, account_id, title, source_language, source_json, created_at) VALUES (?, ?, ?, ?, ?, ?)',
      [
        input.id,
        input.accountId,
        input.title,
        input.sourceLanguage,
        input.source === null ? null : JSON.stringify(input.source),
        input.createdAt,
      ],
    );
    for (const [seq, t] of input.targets.entries()) {
      await tx.run(
        `INSERT INTO interp_targets (id, project_id, account_id, language, generation_id, state, reservation_cycle,
                                     reserved_characters, source_units, created_at, updated_at, seq)
         VALUES (?, ?, ?, ?, ?, 'QUEUED', 1, ?, ?, ?, ?, ?)`,
        [
          t.id,
          input.id,
          input.accountId,
          t.language,
          t.generationId,
          t.characters,
          input.sourceUnits,
          input.createdAt,
          input.createdAt,
          seq,
        ],
      );
      if (t.characters > 0n) {
        const after = await moveCharacters(tx, {
          accountId: input.accountId,
          delta: -t.characters,
          reason: 'interpretation_reserve',
          ref: `${t.id}:1`,
        });
        if (after === null) shortAfterCheck(input.accountId);
      }
    }
    return readProject(tx, input.id, input.accountId);
  });
}

export async function getInterpretationProject(db: Db, projectId: string, accountId: string): Promise<InterpretationProjectRecord | null> {
  return readProject(db, projectId, accountId);
}

export async function issueRetryPlan(
  db: Db,
  projectId: string,
  targetId: string,
  accountId: string,
  now: Date,
  plan: (target: InterpretationTargetRecord) => RetryPlan,
  reusable: (plan: RetryPlan) => boolean,
): Promise<RetryPlanOutcome> {
  return db.tx(async (tx): Promise<RetryPlanOutcome> => {
    // The target row, not the account, is locked: only this row is read and written, and a
    // missing account must answer not_found like any foreign target (lockAccount would throw).
    const target = await lockOwnedTarget(tx, projectId, targetId, accountId);
    if (!target) return { kind: 'not_found' };
    if (target.state !== 'FAILED_RELEASED') return { kind: 'not_failed', state: target.state };
    if (target.plan && reusable(target.plan)) return { kind: 'plan', target };
    const next = plan(target);
    await tx.run(
      'UPDATE interp_targets SET plan_cycle = ?, plan_characters = ?, plan_rate_version = ?, plan_expires_at = ?, updated_at = ? WHERE id = ?',
      [next.nextReservationCycle, next.characters, next.rateVersion, next.expiresAt, now.toISOString(), targetId],
    );
    return { kind: 'plan', target: { ...target, plan: next } };
  });
}

export async function retryInterpretationTarget(db: Db, input: InterpretationRetryInput): Promise<InterpretationRetryOutcome> {
  return db.tx(async (tx): Promise<InterpretationRetryOutcome> => {
    // The account row first: it serialises this account's retries, so the key check below
    // stays true until the key is inserted, and the balance stays what it reads here. An
    // unknown account owns no key and no target: not_found, as before the lock existed.
    let balance: bigint;
    try {
      balance = await lockAccount(tx, input.accountId);
    } catch (err) {
      if (err instanceof ScribedError && err.code === 'NOT_FOUND') return { kind: 'not_found' };
      throw err;
    }
    // The key next: a replay must answer with the stored result even though the target
    // has since left FAILED_RELEASED.
    const existing = await tx.one<{ request_hash: string; result_json: string }>(
      'SELECT request_hash, result_json FROM interp_retry_keys WHERE account_id = ? AND key = ?',
      [input.accountId, input.idempotencyKey],
    );
    if (existing) {
      if (existing.request_hash !== input.requestHash) return { kind: 'key_mismatch' };
      return { kind: 'replayed', result: JSON.parse(existing.result_json) as Record<string, unknown> };
    }
    // Locked too: issueRetryPlan changes the plan this request is checked against without
    // taking the account lock.
    const target = await lockOwnedTarget(tx, input.projectId, input.targetId, input.accountId);
    if (!target) return { kind: 'not_found' };
    const reason = input.refusal(target);
    if (reason !== null) return { kind: 'refused', reason };
    const amount = input.request.characters;
    if (balance < amount) return { kind: 'insufficient', balance };
    const nowIso = input.now.toISOString();
    if (amount > 0n) {
      const after = await moveCharacters(tx, {
        accountId: input.accountId,
        delta: -amount,
        reason: 'interpretation_reserve',
        ref: `${target.id}:${input.request.nextReservationCycle}`,
      });
      if (after === null) shortAfterCheck(input.accountId);
    }
    await tx.run(
      `UPDATE interp_targets
          SET state = 'QUEUED', reservation_cycle = ?, reserved_characters = ?,
              plan_cycle = NULL, plan_characters = NULL, plan_rate_version = NULL, plan_expires_at = NULL, updated_at = ?
        WHERE id = ?`,
      [input.request.nextReservationCycle, amount, nowIso, target.id],
    );
    const updated = (await readOwnedTarget(tx, input.projectId, input.targetId, input.accountId))!;
    const result = input.result(updated);
    await tx.run('INSERT INTO interp_retry_keys (account_id, key, request_hash, result_json, created_at) VALUES (?, ?, ?, ?, ?)', [
      input.accountId,
      input.idempotencyKey,
      input.requestHash,
      JSON.stringify(result),
      nowIso,
    ]);
    return { kind: 'retried', result };
  });
}

const ALLOWED_FROM: Record<'PROCESSING' | 'COMPLETED' | 'FAILED_RELEASED', InterpretationTargetState[]> = {
  PROCESSING: ['QUEUED'],
  COMPLETED: ['QUEUED', 'PROCESSING'],
  FAILED_RELEASED: ['QUEUED', 'PROCESSING'],
};

export async function transitionInterpretationTarget(
  db: Db,
  targetId: string,
  to: 'PROCESSING' | 'COMPLETED' | 'FAILED_RELEASED',
  now: Date,
): Promise<InterpretationTargetRecord> {
  return db.tx(async (tx) => {
    const notFound = () => new ScribedError('NOT_FOUND', `target ${targetId} does not exist`);
    // A target's account never changes, so it can be read unlocked to lock that account
    // before the target, in the order retryInterpretationTarget takes the two (no deadlock
    // between a release and a retry of the same target). The state is checked on the row
    // read under its own lock.
    const owner = await tx.one<{ account_id: string }>('SELECT account_id FROM interp_targets WHERE id = ?', [targetId]);
    if (!owner) throw notFound();
    await lockAccount(tx, owner.account_id);
    const row = await tx.lockOne<TargetRow>('SELECT * FROM interp_targets WHERE id = ?', [targetId]);
    if (!row) throw notFound();
    const target = toTarget(row);
    if (!ALLOWED_FROM[to].includes(target.state)) {
      throw new ScribedError('VALIDATION_FAILED', `target ${targetId} is ${target.state}; it cannot move to ${to}`);
    }
    const nowIso = now.toISOString();
    let reserved = target.reservedCharacters;
    if (to === 'FAILED_RELEASED' && reserved > 0n) {
      // Release: the cycle's reservation goes back to the balance.
      await moveCharacters(tx, {
        accountId: target.accountId,
        delta: reserved,
        reason: 'interpretation_release',
        ref: `${target.id}:${target.reservationCycle}`,
      });
      reserved = 0n;
    }
    // COMPLETED consumes the reservation: it was already taken from the balance.
    if (to === 'COMPLETED') reserved = 0n;
    await tx.run('UPDATE interp_targets SET state = ?, reserved_characters = ?, updated_at = ? WHERE id = ?', [
      to,
      reserved,
      nowIso,
      targetId,
    ]);
    return toTarget((await tx.one<TargetRow>('SELECT * FROM interp_targets WHERE id = ?', [targetId]))!);
  });
}
