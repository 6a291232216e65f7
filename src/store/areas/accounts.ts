// Accounts and their credentials. Secrets never arrive here in clear: callers pass the
// SHA-256 of the secret part (src/core/credentials.ts) and compare in constant time.
//
// An access key is in force while both expires_at (set by a rotation: the end of its grace)
// and revoked_at are null; a rotated key is still valid until expires_at passes. Validity is
// decided in findCredential's query, on every request: nothing caches a credential, so a
// revocation written by the operator's CLI holds from the server's next request.
import type { AccessKeyInfo, Account, AccountListing, CredentialKind, CredentialRecord, NewAccount, RedactionDefault } from '../store.js';
import { int64, nowIso, type Db, type Tx } from '../sql/db.js';
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
    await tx.run('INSERT INTO accounts (id, name, characters, created_at) VALUES (?, ?, ?, ?)', [
      input.id,
      input.name,
      0n,
      input.createdAt,
    ]);
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
  const row = await db.one<CredentialRow>(
    'SELECT id, account_id, kind, secret_hash FROM credentials WHERE id = ? AND kind = ? AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)',
    [id, kind, nowIso()],
  );
  return row ? { id: row.id, accountId: row.account_id, kind: row.kind, secretHash: row.secret_hash } : null;
}

interface AccessKeyRow {
  id: string;
  account_id: string;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
}

const ACCESS_KEY_COLUMNS = 'id, account_id, created_at, expires_at, revoked_at';

function accessKeyInfo(r: AccessKeyRow): AccessKeyInfo {
  return { id: r.id, createdAt: r.created_at, expiresAt: r.expires_at, revokedAt: r.revoked_at };
}

async function accessKeysOf(tx: Tx, accountId: string): Promise<AccessKeyInfo[]> {
  const rows = await tx.all<AccessKeyRow>(
    `SELECT ${ACCESS_KEY_COLUMNS} FROM credentials WHERE account_id = ? AND kind = 'access_key' ORDER BY created_at, id`,
    [accountId],
  );
  return rows.map(accessKeyInfo);
}

export async function listAccounts(db: Db): Promise<AccountListing[]> {
  // One transaction, so the keys listed are those of the accounts listed.
  return db.tx(async (tx) => {
    const accounts = await tx.all<AccountRow>('SELECT * FROM accounts ORDER BY created_at, id');
    const keys = await tx.all<AccessKeyRow>(
      `SELECT ${ACCESS_KEY_COLUMNS} FROM credentials WHERE kind = 'access_key' ORDER BY created_at, id`,
    );
    const byAccount = new Map<string, AccessKeyInfo[]>();
    for (const k of keys) {
      const list = byAccount.get(k.account_id) ?? [];
      list.push(accessKeyInfo(k));
      byAccount.set(k.account_id, list);
    }
    return accounts.map((r) => ({
      id: r.id,
      name: r.name,
      characters: r.characters,
      createdAt: r.created_at,
      accessKeys: byAccount.get(r.id) ?? [],
    }));
  });
}

export async function rotateAccessKey(
  db: Db,
  accountId: string,
  newKey: { id: string; secretHash: Buffer },
  at: string,
  retireAt: string,
): Promise<AccessKeyInfo[]> {
  return db.tx(async (tx) => {
    // The account's row lock orders this against a concurrent rotation or revocation.
    await lockAccount(tx, accountId);
    await tx.run(
      "UPDATE credentials SET expires_at = ? WHERE account_id = ? AND kind = 'access_key' AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)",
      [retireAt, accountId, retireAt],
    );
    await tx.run('INSERT INTO credentials (id, account_id, kind, secret_hash, created_at) VALUES (?, ?, ?, ?, ?)', [
      newKey.id,
      accountId,
      'access_key',
      newKey.secretHash,
      at,
    ]);
    return accessKeysOf(tx, accountId);
  });
}

export async function revokeAccessKeys(db: Db, accountId: string, keyId: string | null, at: string): Promise<string[]> {
  return db.tx(async (tx) => {
    await lockAccount(tx, accountId);
    const keys = await accessKeysOf(tx, accountId);
    const named = keyId === null ? keys : keys.filter((k) => k.id === keyId);
    if (keyId !== null && named.length === 0)
      throw new ScribedError('NOT_FOUND', `access key ${keyId} is not a key of account ${accountId}`);
    const revoked = named.filter((k) => k.revokedAt === null).map((k) => k.id);
    for (const id of revoked) await tx.run('UPDATE credentials SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL', [at, id]);
    return revoked;
  });
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
    const row = await tx.one<{ characters_charged: bigint }>('SELECT characters_charged FROM rt_sessions WHERE id = ? AND account_id = ?', [
      sessionId,
      accountId,
    ]);
    if (!row) throw new ScribedError('NOT_FOUND', `session ${sessionId} does not exist for account ${accountId}`);
    const charged = int64(row.characters_charged + amount, 'charactersCharged');
    await tx.run('UPDATE rt_sessions SET characters_charged = ?, updated_at = ? WHERE id = ?', [
      charged,
      new Date().toISOString(),
      sessionId,
    ]);
    return next;
  });
}

/** An account's default redaction policies (contract/accounts.ts): one row per account, the
 * row removed when the list is emptied. */
export async function setRedactionDefault(db: Db, accountId: string, policies: readonly string[], now: Date): Promise<void> {
  await db.tx(async (tx) => {
    if (!(await tx.one('SELECT id FROM accounts WHERE id = ?', [accountId])))
      throw new ScribedError('NOT_FOUND', `account ${accountId} does not exist`);
    if (policies.length === 0) {
      await tx.run('DELETE FROM account_redaction_defaults WHERE account_id = ?', [accountId]);
      return;
    }
    await tx.run(
      `INSERT INTO account_redaction_defaults (account_id, policies_json, updated_at) VALUES (?, ?, ?)
       ON CONFLICT (account_id) DO UPDATE SET policies_json = excluded.policies_json, updated_at = excluded.updated_at`,
      [accountId, JSON.stringify(policies), now.toISOString()],
    );
  });
}

export async function getRedactionDefault(db: Tx, accountId: string): Promise<RedactionDefault | null> {
  const r = await db.one<{ policies_json: string; updated_at: string }>(
    'SELECT policies_json, updated_at FROM account_redaction_defaults WHERE account_id = ?',
    [accountId],
  );
  return r ? { accountId, policies: JSON.parse(r.policies_json) as string[], updatedAt: r.updated_at } : null;
}
