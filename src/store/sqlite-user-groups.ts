// SQLite table of dashboard user groups (issue 4).
import type { SqlAccess } from './sqlite-access.js';
import type { UserGroupEnvironment, UserGroupFields, UserGroupRecord } from './store.js';

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

function read(sql: SqlAccess, accountId: string, providedId: string): Row | undefined {
  return sql.stmt('SELECT * FROM user_groups WHERE account_id = ? AND provided_id = ?').get(accountId, providedId) as Row | undefined;
}

const enc = (v: Record<string, unknown> | null | undefined) => (v === null || v === undefined ? null : JSON.stringify(v));

export function upsertUserGroup(
  sql: SqlAccess,
  accountId: string,
  providedId: string,
  f: UserGroupFields,
  update: boolean,
  newToken: () => { nonce: string; hash: Buffer },
  now: Date,
): { group: UserGroupRecord; created: boolean } {
  return sql.write(() => {
    const existing = read(sql, accountId, providedId);
    const at = now.toISOString();
    if (existing) {
      if (update) {
        // Fields present in the request replace the stored ones (null clears); absent ones stay.
        sql
          .stmt(
            `UPDATE user_groups SET name = ?, mapping_json = ?, properties_json = ?, environment = ?, updated_at = ?
              WHERE team_id = ?`,
          )
          .run(
            f.name !== undefined ? f.name : existing.name,
            f.mapping !== undefined ? enc(f.mapping) : existing.mapping_json,
            f.properties !== undefined ? enc(f.properties) : existing.properties_json,
            f.environment !== undefined ? f.environment : existing.environment,
            at,
            existing.team_id,
          );
      }
      return { group: toGroup(read(sql, accountId, providedId)!), created: false };
    }
    const token = newToken();
    sql
      .stmt(
        `INSERT INTO user_groups (account_id, provided_id, name, mapping_json, properties_json, environment, token_nonce, token_hash, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(accountId, providedId, f.name ?? null, enc(f.mapping), enc(f.properties), f.environment ?? null, token.nonce, token.hash, at, at);
    return { group: toGroup(read(sql, accountId, providedId)!), created: true };
  });
}

export function deleteUserGroup(sql: SqlAccess, accountId: string, providedId: string, matches: (h: Buffer) => boolean): 'deleted' | 'not_found' | 'mismatch' {
  return sql.write(() => {
    const row = read(sql, accountId, providedId);
    if (!row) return 'not_found' as const;
    if (!matches(row.token_hash)) return 'mismatch' as const;
    sql.stmt('DELETE FROM user_groups WHERE team_id = ?').run(row.team_id);
    return 'deleted' as const;
  });
}
