// Access-key rotation, revocation and the operator's view of keys (docs/operations.md,
// "Access keys"). The new key's clear value exists only in rotateAccessKey's return value:
// the store keeps its id and the SHA-256 of its secret, and no view here carries either the
// secret or the hash.
import { generateCredential } from '../core/credentials.js';
import type { AccessKeyInfo, Store } from '../store/store.js';

/** Default time a rotated-out key stays valid: a day for every client to switch. */
export const DEFAULT_GRACE_SECONDS = 86_400;
/** Longer than this is not a grace but a second key; revoke the old one when done instead. */
export const MAX_GRACE_SECONDS = 365 * 86_400;

export type AccessKeyState = 'active' | 'expiring' | 'expired' | 'revoked';

export interface AccessKeyView {
  id: string;
  state: AccessKeyState;
  createdAt: string;
  /** For expiring and expired: the end of the grace; for revoked: the revocation. */
  at: string | null;
}

/** What a key is at `now`. Revocation wins over an expiry: it is the operator's last word. */
export function accessKeyState(key: AccessKeyInfo, now: Date): AccessKeyView {
  const t = now.toISOString();
  if (key.revokedAt !== null) return { id: key.id, state: 'revoked', createdAt: key.createdAt, at: key.revokedAt };
  if (key.expiresAt !== null)
    return { id: key.id, state: key.expiresAt > t ? 'expiring' : 'expired', createdAt: key.createdAt, at: key.expiresAt };
  return { id: key.id, state: 'active', createdAt: key.createdAt, at: null };
}

export interface AccountView {
  accountId: string;
  name: string;
  /** Decimal string: a balance may exceed what a JSON number holds exactly. */
  characters: string;
  createdAt: string;
  accessKeys: AccessKeyView[];
}

export async function listAccountViews(store: Store, now = new Date()): Promise<AccountView[]> {
  const accounts = await store.listAccounts();
  return accounts.map((a) => ({
    accountId: a.id,
    name: a.name,
    characters: a.characters.toString(),
    createdAt: a.createdAt,
    accessKeys: a.accessKeys.map((k) => accessKeyState(k, now)),
  }));
}

export interface RotatedKey {
  accountId: string;
  keyId: string;
  /** The new key in full; shown once. */
  accessKey: string;
  /** Every key of the account after the rotation (the new one active, the old ones expiring). */
  accessKeys: AccessKeyView[];
}

export function checkGraceSeconds(value: unknown): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > MAX_GRACE_SECONDS)
    throw new Error(`--grace-seconds must be an integer from 0 to ${MAX_GRACE_SECONDS}, got ${String(value)}`);
  return n;
}

export async function rotateAccessKey(store: Store, accountId: string, graceSeconds: number, now = new Date()): Promise<RotatedKey> {
  const key = generateCredential('sk');
  const retireAt = new Date(now.getTime() + checkGraceSeconds(graceSeconds) * 1000).toISOString();
  const keys = await store.rotateAccessKey(accountId, { id: key.id, secretHash: key.secretHash }, now.toISOString(), retireAt);
  return { accountId, keyId: key.id, accessKey: key.value, accessKeys: keys.map((k) => accessKeyState(k, now)) };
}

/** Revoke one key of the account, or every one with keyId null; the ids revoked now. */
export async function revokeAccessKeys(store: Store, accountId: string, keyId: string | null, now = new Date()): Promise<string[]> {
  return store.revokeAccessKeys(accountId, keyId, now.toISOString());
}
