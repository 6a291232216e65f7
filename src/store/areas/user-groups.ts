// Dashboard user groups (docs/api.md), on either engine (sql/db.ts). team_id is assigned by the
// database (AUTOINCREMENT on SQLite, an identity column on PostgreSQL): rows are inserted
// without it and read back by (account_id, provided_id).
//
// Locks (PostgreSQL runs READ COMMITTED): find-or-create locks the account first, so two
// concurrent creates of one group queue and the second finds the first's row; it then locks
// the group row it found, which is the lock a delete takes (the group row, not the account,
// so an unknown account still answers not_found), so an update never races a delete.
import type { UserGroupEnvironment, UserGroupFields, UserGroupRecord } from '../store.js';
import type { Db, Tx } from '../sql/db.js';
import { lockAccount } from './ledger.js';

interface Row {
  team_id: bigint;
  account_id: string;
  provided_id: string;
  name: string | null;
  mapping_json: string | null;
  properties_json: string | null;
  environment: UserGroupEnvironment | null;
  token_nonce: string;
  token_hash: Buffer;
  created_at: string;
  updated_at: string;
}

const json = (s: string | null) => (s === null ? null : (JSON.parse(s) as Record<string, unknown>));

function toGroup(r: Row): UserGroupRecord {
  return {
    teamId: Number(r.team_id),
    accountId: r.account_id,
    providedId: r.provided_id,
    name: r.name,
    mapping: json(r.mapping_json),
    properties: json(r.properties_json),
    environment: r.environment,
    tokenNonce: r.token_nonce,
    tokenHash: r.token_hash,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

const BY_KEY = 'SELECT * FROM user_groups WHERE account_id = ? AND provided_id = ?';

function read(tx: Tx, accountId: string, providedId: string): Promise<Row | undefined> {
  return tx.one<Row>(BY_KEY, [accountId, providedId]);
}

const enc = (v: Record<string, unknown> | null | undefined) => (v === null || v === undefined ? null : JSON.stringify(v));

export async function upsertUserGroup(
  db: Db,
  accountId: string,
  providedId: string,
  f: UserGroupFields,
  update: boolean,
  newToken: () => { nonce: string; hash: Buffer },
  now: Date,
): Promise<{ group: UserGroupRecord; created: boolean }> {
  return db.tx(async (tx) => {
    // The account first: the missing-then-insert below must not run twice at once (the unique
    // (account_id, provided_id) would fail the second). NOT_FOUND for an unknown account (the
    // insert failed on its foreign key before).
    await lockAccount(tx, accountId);
    const existing = await tx.lockOne<Row>(BY_KEY, [accountId, providedId]);
    const at = now.toISOString();
    if (existing) {
      if (update) {
        // Fields present in the request replace the stored ones (null clears); absent ones stay.
        await tx.run(
          `UPDATE user_groups SET name = ?, mapping_json = ?, properties_json = ?, environment = ?, updated_at = ?
            WHERE team_id = ?`,
          [
            f.name !== undefined ? f.name : existing.name,
            f.mapping !== undefined ? enc(f.mapping) : existing.mapping_json,
            f.properties !== undefined ? enc(f.properties) : existing.properties_json,
            f.environment !== undefined ? f.environment : existing.environment,
            at,
            existing.team_id,
          ],
        );
      }
      return { group: toGroup((await read(tx, accountId, providedId))!), created: false };
    }
    const token = newToken();
    await tx.run(
      `INSERT INTO user_groups (account_id, provided_id, name, mapping_json, properties_json, environment, token_nonce, token_hash, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [accountId, providedId, f.name ?? null, enc(f.mapping), enc(f.properties), f.environment ?? null, token.nonce, token.hash, at, at],
    );
    return { group: toGroup((await read(tx, accountId, providedId))!), created: true };
  });
}

export async function deleteUserGroup(
  db: Db,
  accountId: string,
  providedId: string,
  matches: (h: Buffer) => boolean,
): Promise<'deleted' | 'not_found' | 'mismatch'> {
  return db.tx(async (tx) => {
    // The group row is locked (see the header): the token compared is the one deleted.
    const row = await tx.lockOne<Row>(BY_KEY, [accountId, providedId]);
    if (!row) return 'not_found' as const;
    if (!matches(row.token_hash)) return 'mismatch' as const;
    await tx.run('DELETE FROM user_groups WHERE team_id = ?', [row.team_id]);
    return 'deleted' as const;
  });
}
