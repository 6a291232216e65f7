// Characters move in one place: the account's balance and its ledger row change together,
// inside the caller's transaction, with the account row locked first (see sql/db.ts), so
// concurrent debits of one account queue instead of both passing a stale balance check.
import { ScribedError } from '../../core/errors.js';
import { INT64_MAX, nowIso, type Tx } from '../sql/db.js';

/** Lock the account row for the rest of the transaction and return its balance. Every
 * check-then-write transaction on an account's data starts here (NOT_FOUND when missing). */
export async function lockAccount(tx: Tx, accountId: string): Promise<bigint> {
  const row = await tx.lockOne<{ characters: bigint }>('SELECT characters FROM accounts WHERE id = ?', [accountId]);
  if (!row) throw new ScribedError('NOT_FOUND', `account ${accountId} does not exist`);
  return row.characters;
}

export interface Movement {
  accountId: string;
  /** Positive credits, negative debits; 0 changes nothing. */
  delta: bigint;
  reason: string;
  ref: string | null;
  sessionId?: string | null;
}

/**
 * Add `delta` to the balance and write the ledger row, all or nothing. Returns the new
 * balance, or null (nothing written) when a debit is larger than the balance. Balance
 * arithmetic is done on bigint here, never in SQL: SQLite turns an overflowing integer sum
 * into a REAL without a word.
 */
export async function moveCharacters(tx: Tx, m: Movement): Promise<bigint | null> {
  const balance = await lockAccount(tx, m.accountId);
  if (m.delta === 0n) return balance;
  const next = balance + m.delta;
  if (next < 0n) return null;
  if (next > INT64_MAX) throw new RangeError(`crediting ${m.delta} would overflow account ${m.accountId}'s balance`);
  await tx.run('UPDATE accounts SET characters = ? WHERE id = ?', [next, m.accountId]);
  await tx.run(
    `INSERT INTO characters_ledger (account_id, delta, balance_after, reason, ref, session_id, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
    [m.accountId, m.delta, next, m.reason, m.ref, m.sessionId ?? null, nowIso()],
  );
  return next;
}
