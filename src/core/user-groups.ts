// Dashboard user groups: request validation and the group token.
//
// Token. Get User returns the group's token on every call, so the service must be able to
// produce it again; storing it in clear would put every dashboard token in the database.
// Instead each group stores a random nonce and the SHA-256 of its token; the token itself is
// HMAC-SHA256(server key, accountId:nonce), the server key being a file in the data dir
// (src/store/server-key.ts). A copy of the database alone reveals no token.
import { createHmac } from 'node:crypto';
import { ScribedError } from './errors.js';
import { codePoints } from './interpretation.js';
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

function invalid(detail: string): never {
  throw new ScribedError('VALIDATION_FAILED', detail);
}

function objectOrNull(v: unknown, field: string): Record<string, unknown> | null | undefined {
  if (v === undefined || v === null) return v as undefined | null;
  if (typeof v !== 'object' || Array.isArray(v)) invalid(`${field}: must be a JSON object or null`);
  return v as Record<string, unknown>;
}

/** Body of Get User and Update User. user_group_id identifies the group; when it is absent
 * the name does (documented); one of them is needed. */
export function validateUserGroupRequest(body: unknown): UserGroupRequest {
  if (body === undefined || body === null) body = {};
  if (typeof body !== 'object' || Array.isArray(body)) invalid('body must be a JSON object');
  const b = body as Record<string, unknown>;
  for (const k of Object.keys(b))
    if (!['name', 'user_group_id', 'mapping', 'properties', 'environment'].includes(k)) invalid(`${k}: unknown field`);
  for (const k of ['name', 'user_group_id'] as const) {
    const v = b[k];
    if (v !== undefined && v !== null && (typeof v !== 'string' || v.trim() === '' || codePoints(v) > MAX_GROUP_ID_CHARS)) {
      invalid(`${k}: 1 to ${MAX_GROUP_ID_CHARS} characters`);
    }
  }
  const providedId = (b.user_group_id ?? b.name) as string | undefined | null;
  if (!providedId) invalid('user_group_id (or name) is required to identify the group');
  const env = b.environment;
  if (env !== undefined && env !== null && !ENVIRONMENTS.includes(env as UserGroupEnvironment))
    invalid('environment: Customer, Testing or null');
  const fields: UserGroupFields = {};
  if (b.name !== undefined) fields.name = b.name as string | null;
  const mapping = objectOrNull(b.mapping, 'mapping');
  if (mapping !== undefined) fields.mapping = mapping;
  const properties = objectOrNull(b.properties, 'properties');
  if (properties !== undefined) fields.properties = properties;
  if (env !== undefined) fields.environment = env as UserGroupEnvironment | null;
  return { providedId, fields };
}

export function validateDeleteRequest(body: unknown): { providedId: string; currentToken: string } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) invalid('body must be a JSON object');
  const b = body as Record<string, unknown>;
  if (typeof b.user_group_id !== 'string' || b.user_group_id === '') invalid('user_group_id: required');
  if (typeof b.current_token !== 'string' || b.current_token === '') invalid('current_token: required');
  return { providedId: b.user_group_id, currentToken: b.current_token };
}

export function groupToken(serverKey: Buffer, accountId: string, nonce: string): string {
  return `ugt_${createHmac('sha256', serverKey).update(`${accountId}:${nonce}`).digest('base64url')}`;
}

/** SHA-256 of a presented token, for the constant-time compare; malformed tokens hash too
 * (they simply never match). */
export function tokenHash(token: string): Buffer {
  return hashSecret(TOKEN.test(token) ? token : `invalid:${token}`);
}
