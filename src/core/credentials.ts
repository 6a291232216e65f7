// Credentials: `<prefix>_<id>_<secret>`.
//   prefix  `sk` (access key), `tok` (API token) or `tkt` (browser ticket): the kind is
//           visible, so a key pasted in the wrong place is refused before any lookup;
//   id      16 lowercase hex characters (64 random bits): the public lookup key;
//   secret  32 random bytes, base64url without padding (43 characters; may itself contain
//           `_` and `-`, so parsing anchors on the first two separators only).
// Only sha256(secret) is stored; a presented credential is checked by hashing its secret
// and comparing hashes in constant time.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export type CredentialPrefix = 'sk' | 'tok' | 'tkt';

export const CREDENTIAL_ID_CHARS = 16;
export const CREDENTIAL_SECRET_BYTES = 32;
const SECRET_CHARS = 43; // ceil(32 * 8 / 6) without padding
/** Longer values are refused before any regex or hashing work. */
export const MAX_CREDENTIAL_CHARS = 200;

const FORMAT = /^(sk|tok|tkt)_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

export interface GeneratedCredential {
  /** The full credential, shown to its owner once. */
  value: string;
  id: string;
  secretHash: Buffer;
}

export function hashSecret(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}

export function generateCredential(prefix: CredentialPrefix): GeneratedCredential {
  const id = randomBytes(CREDENTIAL_ID_CHARS / 2).toString('hex');
  const secret = randomBytes(CREDENTIAL_SECRET_BYTES).toString('base64url');
  return { value: `${prefix}_${id}_${secret}`, id, secretHash: hashSecret(secret) };
}

/** Strictly parse a credential of the expected kind; null for anything else (wrong kind,
 * wrong shape, over-long, non-canonical secret encoding). */
export function parseCredential(value: unknown, prefix: CredentialPrefix): { id: string; secretHash: Buffer } | null {
  if (typeof value !== 'string' || value.length > MAX_CREDENTIAL_CHARS) return null;
  const m = FORMAT.exec(value);
  if (!m || m[1] !== prefix) return null;
  const secret = m[3]!;
  // 43 base64url characters carry 258 bits; only the encoding of exactly 32 bytes (last
  // character's low bits zero) is one we issued, so refuse the three aliases of each secret.
  if (Buffer.from(secret, 'base64url').toString('base64url') !== secret || secret.length !== SECRET_CHARS) return null;
  return { id: m[2]!, secretHash: hashSecret(secret) };
}

/** Constant-time comparison of two secret hashes; different lengths never match. */
export function secretMatches(a: Buffer, b: Buffer): boolean {
  if (a.length !== b.length) return false;
  return timingSafeEqual(a, b);
}
