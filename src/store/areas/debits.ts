// A node's debits of one short window in one transaction (the debit batcher,
// src/session/debit-batcher.ts; docs/scaling.md, "Group debit"). Every live session pays for
// its audio once per started second, before the audio is accepted; a call center is one
// account, so its calls' debits, each a transaction of its own, took turns on one account row.
// Here each account of the batch is locked once, in account-id order (two nodes locking the
// same accounts cannot deadlock), and the debits are applied in the order asked, each answered
// on its own: the same balance arithmetic, ledger rows and characters_charged as
// debitCharacters, so a batch has the effect of those debits one after another.
//
// A debit may carry an id, kept on its ledger row (unique), and the charge it brings its
// session to: a transaction whose connection died during COMMIT has an unknown outcome, its
// debits fail and are asked again; one whose id is already recorded committed then, and is
// answered with the balance as it is, charging nothing; one asked again for a frame cut
// differently has another id but finds the session's stored charge past where it reckoned,
// and is charged only what the charge lacks of its target. (The account's row lock orders
// these reads after that commit.)
import { ScribedError } from '../../core/errors.js';
import type { DebitOutcome, SessionDebit } from '../store.js';
import { int64, nowIso, type Db, type SqlValue, type Tx } from '../sql/db.js';

/** Rows per multi-row statement: well inside both engines' bound-parameter limits. */
const ROWS_PER_STATEMENT = 200;

export async function debitMany(db: Db, debits: readonly SessionDebit[]): Promise<DebitOutcome[]> {
  const out: Array<DebitOutcome | undefined> = debits.map((d) => refusedUpFront(d));
  const live = debits.map((d, i) => ({ d, i })).filter(({ i }) => out[i] === undefined);
  if (live.length === 0) return out as DebitOutcome[];
  return db.tx(async (tx) => {
    const balances = await lockAccounts(tx, [...new Set(live.map(({ d }) => d.accountId))].sort());
    const charged = await sessionsCharged(tx, [...new Set(live.map(({ d }) => d.sessionId))]);
    const done = await recordedDebits(
      tx,
      live.flatMap(({ d }) => (d.id === undefined ? [] : [d.id])),
    );
    const ledger: SqlValue[][] = [];
    const touchedAccounts = new Set<string>();
    const touchedSessions = new Set<string>();
    const at = nowIso();
    for (const { d, i } of live) {
      const balance = balances.get(d.accountId);
      const session = charged.get(d.sessionId);
      if (balance === undefined) {
        out[i] = { kind: 'refused', error: new ScribedError('NOT_FOUND', `account ${d.accountId} does not exist`) };
      } else if (d.amount === 0n) {
        out[i] = { kind: 'debited', balance };
      } else if (d.id !== undefined && done.has(d.id)) {
        // Carried out by an earlier transaction whose answer was lost (or earlier in this batch).
        out[i] = { kind: 'debited', balance };
      } else if (!session || session.accountId !== d.accountId) {
        out[i] = {
          kind: 'refused',
          error: new ScribedError('NOT_FOUND', `session ${d.sessionId} does not exist for account ${d.accountId}`),
        };
      } else if (d.chargedTo !== undefined && session.charged >= d.chargedTo) {
        // A debit of the session landed unseen and already covers this one.
        out[i] = { kind: 'debited', balance };
      } else if (balance < owed(d, session.charged)) {
        out[i] = { kind: 'short' };
      } else {
        const amount = owed(d, session.charged);
        const next = balance - amount;
        balances.set(d.accountId, next);
        session.charged = int64(session.charged + amount, 'charactersCharged');
        touchedAccounts.add(d.accountId);
        touchedSessions.add(d.sessionId);
        ledger.push([d.accountId, -amount, next, d.reason, d.ref, d.sessionId, at, d.id ?? null]);
        if (d.id !== undefined) done.add(d.id);
        out[i] = { kind: 'debited', balance: next };
      }
    }
    for (const id of [...touchedAccounts].sort()) await tx.run('UPDATE accounts SET characters = ? WHERE id = ?', [balances.get(id)!, id]);
    for (let k = 0; k < ledger.length; k += ROWS_PER_STATEMENT) {
      const rows = ledger.slice(k, k + ROWS_PER_STATEMENT);
      await tx.run(
        `INSERT INTO characters_ledger (account_id, delta, balance_after, reason, ref, session_id, created_at, debit_id)
         VALUES ${rows.map(() => '(?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
        rows.flat(),
      );
    }
    for (const id of [...touchedSessions].sort()) {
      await tx.run('UPDATE rt_sessions SET characters_charged = ?, updated_at = ? WHERE id = ?', [charged.get(id)!.charged, at, id]);
    }
    return out as DebitOutcome[];
  });
}

/** What a debit charges: its amount, or less when the session's stored charge is already past
 * where the asking node reckoned it (`chargedTo - amount`): only what it lacks of `chargedTo`. */
function owed(d: SessionDebit, stored: bigint): bigint {
  if (d.chargedTo === undefined) return d.amount;
  const lack = d.chargedTo - stored;
  return lack < d.amount ? lack : d.amount;
}

/** A debit no transaction could carry out (not a count of Characters): answered without one. */
function refusedUpFront(d: SessionDebit): DebitOutcome | undefined {
  try {
    int64(d.amount, 'amount');
  } catch (err) {
    return { kind: 'refused', error: err as Error };
  }
  if (d.amount < 0n) return { kind: 'refused', error: new RangeError(`a debit of ${d.amount} Characters is negative`) };
  return undefined;
}

/** Lock each account row (ids already in order) and read its balance; a missing one is absent. */
async function lockAccounts(tx: Tx, ids: readonly string[]): Promise<Map<string, bigint>> {
  const balances = new Map<string, bigint>();
  for (const id of ids) {
    const row = await tx.lockOne<{ characters: bigint }>('SELECT characters FROM accounts WHERE id = ?', [id]);
    if (row) balances.set(id, row.characters);
  }
  return balances;
}

/** Which of these debit ids are on a ledger row already. */
async function recordedDebits(tx: Tx, ids: readonly string[]): Promise<Set<string>> {
  const found = new Set<string>();
  const unique = [...new Set(ids)];
  for (let k = 0; k < unique.length; k += ROWS_PER_STATEMENT) {
    const part = unique.slice(k, k + ROWS_PER_STATEMENT);
    const rows = await tx.all<{ debit_id: string }>(
      `SELECT debit_id FROM characters_ledger WHERE debit_id IN (${part.map(() => '?').join(', ')})`,
      part,
    );
    for (const r of rows) found.add(r.debit_id);
  }
  return found;
}

async function sessionsCharged(tx: Tx, ids: readonly string[]): Promise<Map<string, { accountId: string; charged: bigint }>> {
  const found = new Map<string, { accountId: string; charged: bigint }>();
  for (let k = 0; k < ids.length; k += ROWS_PER_STATEMENT) {
    const part = ids.slice(k, k + ROWS_PER_STATEMENT);
    const rows = await tx.all<{ id: string; account_id: string; characters_charged: bigint }>(
      `SELECT id, account_id, characters_charged FROM rt_sessions WHERE id IN (${part.map(() => '?').join(', ')})`,
      part,
    );
    for (const r of rows) found.set(r.id, { accountId: r.account_id, charged: r.characters_charged });
  }
  return found;
}
