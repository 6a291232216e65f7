// Accounts and their credentials. Secrets never arrive here in clear: callers pass the
// SHA-256 of the secret part (src/core/credentials.ts) and compare in constant time.
import type { Account, CredentialKind, CredentialRecord, NewAccount } from '../store.js';
import { int64, type Db, type Tx } from '../sql/db.js';
import { lockAccount, moveCharacters } from './ledger.js';
import { ScribedError } from '../../core/errors.js';

interface AccountRow {
  id: string;
  name: string;
  characters: bigint;
  created_at: string;
}

interface CredentialRow {
  id: string;
  account_id: string;
  kind: CredentialKind;
  secret_hash: Buffer;
}

export async function createAccount(db: Db, input: NewAccount): Promise<Account> {
  const characters = int64(input.characters, 'characters');
  return db.tx(async (tx) => {
    await tx.run('INSERT INTO accounts (id, name, characters, created_at) VALUES (?, ?, ?, ?)', [input.id, input.name, 0n, input.createdAt]);
    const cred = 'INSERT INTO credentials (id, account_id, kind, secret_hash, created_at) VALUES (?, ?, ?, ?, ?)';
    await tx.run(cred, [input.accessKey.id, input.id, 'access_key', input.accessKey.secretHash, input.createdAt]);
    await tx.run(cred, [input.apiToken.id, input.id, 'api_token', input.apiToken.secretHash, input.createdAt]);
    // The opening balance goes through the ledger too, so the ledger always sums to it.
    await moveCharacters(tx, { accountId: input.id, delta: characters, reason: 'account_created', ref: null });
    return { id: input.id, name: input.name, characters, createdAt: input.createdAt };
  });
}

export async function getAccount(db: Tx, accountId: string): Promise<Account | null> {
  const r = await db.one<AccountRow>('SELECT * FROM accounts WHERE id = ?', [accountId]);
  return r ? { id: r.id, name: r.name, characters: r.characters, createdAt: r.created_at } : null;
}

export async function findCredential(db: Tx, kind: CredentialKind, id: string): Promise<CredentialRecord | null> {
  const row = await db.one<CredentialRow>('SELECT id, account_id, kind, secret_hash FROM credentials WHERE id = ? AND kind = ?', [id, kind]);
  return row ? { id: row.id, accountId: row.account_id, kind: row.kind, secretHash: row.secret_hash } : null;
}

export async function creditCharacters(db: Db, accountId: string, amount: bigint, reason: string, ref: string | null): Promise<bigint> {
  int64(amount, 'amount');
  return db.tx(async (tx) => (await moveCharacters(tx, { accountId, delta: amount, reason, ref }))!);
}

/** Debit all of `amount` or nothing; with a session, its charactersCharged rises by the same
 * amount in the same transaction. Null when the balance is short. */
export async function debitCharacters(
  db: Db,
  accountId: string,
  amount: bigint,
  reason: string,
  ref: string | null,
  sessionId?: string,
): Promise<bigint | null> {
  int64(amount, 'amount');
  return db.tx(async (tx) => {
    if (amount === 0n) return lockAccount(tx, accountId);
    const next = await moveCharacters(tx, { accountId, delta: -amount, reason, ref, sessionId: sessionId ?? null });
    if (next === null || sessionId === undefined) return next;
    const row = await tx.one<{ characters_charged: bigint }>('SELECT characters_charged FROM rt_sessions WHERE id = ? AND account_id = ?', [sessionId, accountId]);
    if (!row) throw new ScribedError('NOT_FOUND', `session ${sessionId} does not exist for account ${accountId}`);
    const charged = int64(row.characters_charged + amount, 'charactersCharged');
    await tx.run('UPDATE rt_sessions SET characters_charged = ?, updated_at = ? WHERE id = ?', [charged, new Date().toISOString(), sessionId]);
    return next;
  });
}
