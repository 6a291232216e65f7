// Dashboard user groups (areas/user-groups.ts). The request's fields are the core's
// (src/core/user-groups.ts), re-exported here.
import type { UserGroupEnvironment, UserGroupFields } from '../../core/user-groups.js';

export type { UserGroupEnvironment, UserGroupFields };

export interface UserGroupRecord {
  teamId: number;
  accountId: string;
  providedId: string;
  name: string | null;
  mapping: Record<string, unknown> | null;
  properties: Record<string, unknown> | null;
  environment: UserGroupEnvironment | null;
  /** Random per group; the token is derived from it with the server key (never stored). */
  tokenNonce: string;
  tokenHash: Buffer;
  createdAt: string;
  updatedAt: string;
}

export interface UserGroupStore {
  /** Find the group (accountId, providedId); with `update`, apply the given fields; create it
   * when missing (with a fresh token from `newToken`). One transaction. */
  upsertUserGroup(
    accountId: string,
    providedId: string,
    fields: UserGroupFields,
    update: boolean,
    newToken: () => { nonce: string; hash: Buffer },
    now: Date,
  ): Promise<{ group: UserGroupRecord; created: boolean }>;
  /** Delete when `matches(storedHash)` holds (constant-time compare by the caller). */
  deleteUserGroup(
    accountId: string,
    providedId: string,
    matches: (storedHash: Buffer) => boolean,
  ): Promise<'deleted' | 'not_found' | 'mismatch'>;
}
