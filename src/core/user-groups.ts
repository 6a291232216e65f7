// Dashboard user groups: the group token (requests are checked against their schemas,
// src/server/schemas/user-groups.ts).
//
// Token. Get User returns the group's token on every call, so the service must be able to
// produce it again; storing it in clear would put every dashboard token in the database.
// Instead each group stores a random nonce and the SHA-256 of its token; the token itself is
// HMAC-SHA256(server key, accountId:nonce), the server key being a file in the data dir
// (src/store/server-key.ts). A copy of the database alone reveals no token.
import { createHmac } from 'node:crypto';
import { hashSecret } from './credentials.js';

export type UserGroupEnvironment = 'Customer' | 'Testing';

/** The fields of a group a request may set (stored as given: src/store/contract/user-groups.ts). */
export interface UserGroupFields {
  name?: string | null;
  mapping?: Record<string, unknown> | null;
  properties?: Record<string, unknown> | null;
  environment?: UserGroupEnvironment | null;
}

export const MAX_GROUP_ID_CHARS = 200;
export const ENVIRONMENTS: readonly UserGroupEnvironment[] = ['Customer', 'Testing'];
const TOKEN = /^ugt_[A-Za-z0-9_-]{43}$/;

export interface UserGroupRequest {
  providedId: string;
  fields: UserGroupFields;
}

export function groupToken(serverKey: Buffer, accountId: string, nonce: string): string {
  return `ugt_${createHmac('sha256', serverKey).update(`${accountId}:${nonce}`).digest('base64url')}`;
}

/** SHA-256 of a presented token, for the constant-time compare; malformed tokens hash too
 * (they simply never match). */
export function tokenHash(token: string): Buffer {
  return hashSecret(TOKEN.test(token) ? token : `invalid:${token}`);
}
