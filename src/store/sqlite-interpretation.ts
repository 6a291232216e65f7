// SQLite tables of interpretation projects (issue 4). Each exported function is one
// method of SqliteStore. Every function that writes runs inside exactly one `BEGIN
// IMMEDIATE` transaction (through SqlAccess.write), so a retry's key check, ownership check,
// plan check, debit and state change commit together or not at all, and concurrent
// duplicates serialise on the lock. getInterpretationProject is the exception: it runs two
// SELECTs (project, then its targets) outside a transaction. It cannot see a torn project,
// because a project row and all its targets are inserted in one transaction and neither is
// ever deleted nor the project row updated; each target row is read whole by the one
// SELECT, so only target states changed between the two reads may be newer than the project
// row, which holds nothing about them.
import { ScribedError } from '../core/errors.js';
import type { SqlAccess } from './sqlite-access.js';
import type {
  InterpretationProjectRecord,
  InterpretationRetryInput,
  InterpretationRetryOutcome,
  InterpretationTargetRecord,
  InterpretationTargetState,
  RetryPlan,
  RetryPlanOutcome,
  NewInterpretationProject,
} from './store.js';

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
        : { nextReservationCycle: Number(r.plan_cycle), characters: r.plan_characters, rateVersion: r.plan_rate_version, expiresAt: r.plan_expires_at },
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

function readProject(sql: SqlAccess, projectId: string, accountId: string): InterpretationProjectRecord | null {
  const p = sql.stmt('SELECT * FROM interp_projects WHERE id = ? AND account_id = ?').get(projectId, accountId) as ProjectRow | undefined;
  if (!p) return null;
  const targets = (sql.stmt('SELECT * FROM interp_targets WHERE project_id = ? ORDER BY rowid').all(projectId) as TargetRow[]).map(toTarget);
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

function readOwnedTarget(sql: SqlAccess, projectId: string, targetId: string, accountId: string): InterpretationTargetRecord | null {
  const row = sql.stmt('SELECT * FROM interp_targets WHERE id = ? AND project_id = ? AND account_id = ?').get(targetId, projectId, accountId) as
    | TargetRow
    | undefined;
  return row ? toTarget(row) : null;
}

export function createInterpretationProject(sql: SqlAccess, input: NewInterpretationProject): InterpretationProjectRecord | null {
  return sql.write(() => {
    const total = input.targets.reduce((sum, t) => sum + t.characters, 0n);
    const balance = sql.readBalance(input.accountId);
    if (balance < total) return null;
    sql
      .stmt('INSERT INTO interp_projects (id, account_id, title, source_language, source_json, created_at) VALUES (?, ?, ?, ?, ?, ?)')
      .run(input.id, input.accountId, input.title, input.sourceLanguage, input.source === null ? null : JSON.stringify(input.source), input.createdAt);
    let running = balance;
    for (const t of input.targets) {
      sql
        .stmt(
          `INSERT INTO interp_targets (id, project_id, account_id, language, generation_id, state, reservation_cycle,
                                       reserved_characters, source_units, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, 'QUEUED', 1, ?, ?, ?, ?)`,
        )
        .run(t.id, input.id, input.accountId, t.language, t.generationId, t.characters, input.sourceUnits, input.createdAt, input.createdAt);
      if (t.characters > 0n) {
        running -= t.characters;
        sql.ledger(input.accountId, -t.characters, running, 'interpretation_reserve', `${t.id}:1`);
      }
    }
    sql.stmt('UPDATE accounts SET characters = ? WHERE id = ?').run(running, input.accountId);
    return readProject(sql, input.id, input.accountId);
  });
}

export function getInterpretationProject(sql: SqlAccess, projectId: string, accountId: string): InterpretationProjectRecord | null {
  return readProject(sql, projectId, accountId);
}

export function issueRetryPlan(
  sql: SqlAccess,
  projectId: string,
  targetId: string,
  accountId: string,
  now: Date,
  plan: (target: InterpretationTargetRecord) => RetryPlan,
  reusable: (plan: RetryPlan) => boolean,
): RetryPlanOutcome {
  return sql.write(() => {
    const target = readOwnedTarget(sql, projectId, targetId, accountId);
    if (!target) return { kind: 'not_found' } as const;
    if (target.state !== 'FAILED_RELEASED') return { kind: 'not_failed', state: target.state } as const;
    if (target.plan && reusable(target.plan)) return { kind: 'plan', target } as const;
    const next = plan(target);
    sql
      .stmt('UPDATE interp_targets SET plan_cycle = ?, plan_characters = ?, plan_rate_version = ?, plan_expires_at = ?, updated_at = ? WHERE id = ?')
      .run(next.nextReservationCycle, next.characters, next.rateVersion, next.expiresAt, now.toISOString(), targetId);
    return { kind: 'plan', target: { ...target, plan: next } } as const;
  });
}

export function retryInterpretationTarget(sql: SqlAccess, input: InterpretationRetryInput): InterpretationRetryOutcome {
  return sql.write((): InterpretationRetryOutcome => {
    // The key first: a replay must answer with the stored result even though the target
    // has since left FAILED_RELEASED.
    const existing = sql.stmt('SELECT request_hash, result_json FROM interp_retry_keys WHERE account_id = ? AND key = ?').get(
      input.accountId,
      input.idempotencyKey,
    ) as { request_hash: string; result_json: string } | undefined;
    if (existing) {
      if (existing.request_hash !== input.requestHash) return { kind: 'key_mismatch' };
      return { kind: 'replayed', result: JSON.parse(existing.result_json) as Record<string, unknown> };
    }
    const target = readOwnedTarget(sql, input.projectId, input.targetId, input.accountId);
    if (!target) return { kind: 'not_found' };
    const reason = input.refusal(target);
    if (reason !== null) return { kind: 'refused', reason };
    const amount = input.request.characters;
    const balance = sql.readBalance(input.accountId);
    if (balance < amount) return { kind: 'insufficient', balance };
    const nowIso = input.now.toISOString();
    const after = balance - amount;
    if (amount > 0n) {
      sql.stmt('UPDATE accounts SET characters = ? WHERE id = ?').run(after, input.accountId);
      sql.ledger(input.accountId, -amount, after, 'interpretation_reserve', `${target.id}:${input.request.nextReservationCycle}`);
    }
    sql
      .stmt(
        `UPDATE interp_targets
            SET state = 'QUEUED', reservation_cycle = ?, reserved_characters = ?,
                plan_cycle = NULL, plan_characters = NULL, plan_rate_version = NULL, plan_expires_at = NULL, updated_at = ?
          WHERE id = ?`,
      )
      .run(input.request.nextReservationCycle, amount, nowIso, target.id);
    const updated = readOwnedTarget(sql, input.projectId, input.targetId, input.accountId)!;
    const result = input.result(updated);
    sql
      .stmt('INSERT INTO interp_retry_keys (account_id, key, request_hash, result_json, created_at) VALUES (?, ?, ?, ?, ?)')
      .run(input.accountId, input.idempotencyKey, input.requestHash, JSON.stringify(result), nowIso);
    return { kind: 'retried', result };
  });
}

const ALLOWED_FROM: Record<'PROCESSING' | 'COMPLETED' | 'FAILED_RELEASED', InterpretationTargetState[]> = {
  PROCESSING: ['QUEUED'],
  COMPLETED: ['QUEUED', 'PROCESSING'],
  FAILED_RELEASED: ['QUEUED', 'PROCESSING'],
};

export function transitionInterpretationTarget(
  sql: SqlAccess,
  targetId: string,
  to: 'PROCESSING' | 'COMPLETED' | 'FAILED_RELEASED',
  now: Date,
): InterpretationTargetRecord {
  return sql.write(() => {
    const row = sql.stmt('SELECT * FROM interp_targets WHERE id = ?').get(targetId) as TargetRow | undefined;
    if (!row) throw new ScribedError('NOT_FOUND', `target ${targetId} does not exist`);
    const target = toTarget(row);
    if (!ALLOWED_FROM[to].includes(target.state)) {
      throw new ScribedError('VALIDATION_FAILED', `target ${targetId} is ${target.state}; it cannot move to ${to}`);
    }
    const nowIso = now.toISOString();
    let reserved = target.reservedCharacters;
    if (to === 'FAILED_RELEASED' && reserved > 0n) {
      // Release: the cycle's reservation goes back to the balance.
      const after = sql.readBalance(target.accountId) + reserved;
      sql.stmt('UPDATE accounts SET characters = ? WHERE id = ?').run(after, target.accountId);
      sql.ledger(target.accountId, reserved, after, 'interpretation_release', `${target.id}:${target.reservationCycle}`);
      reserved = 0n;
    }
    // COMPLETED consumes the reservation: it was already taken from the balance.
    if (to === 'COMPLETED') reserved = 0n;
    sql.stmt('UPDATE interp_targets SET state = ?, reserved_characters = ?, updated_at = ? WHERE id = ?').run(to, reserved, nowIso, targetId);
    return toTarget(sql.stmt('SELECT * FROM interp_targets WHERE id = ?').get(targetId) as TargetRow);
  });
}
