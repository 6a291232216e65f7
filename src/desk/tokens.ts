// The desk's two secrets (docs/desk.md): a login link's token and a desk session's cookie.
// Each is `<prefix>_<id>_<secret>`, as the API's credentials (src/core/credentials.ts): the id
// finds the row, only sha256(secret) is stored and compared in constant time. The page's CSRF
// token is derived from the session's secret (an HMAC), so it needs no row of its own and
// changes with the session; a page on another origin can neither read it nor the cookie.
import { createHmac, randomBytes } from 'node:crypto';
import { CREDENTIAL_ID_CHARS, CREDENTIAL_SECRET_BYTES, hashSecret, secretMatches } from '../core/credentials.js';

/** `dl`: a login link's token (in the link's fragment); `ds`: a desk session (the cookie). */
export type DeskTokenKind = 'dl' | 'ds';

export interface DeskToken {
  /** The whole token, shown once (the link) or set once (the cookie). */
  value: string;
  /** The row's id: `<kind>_<16 hex>`, never secret. */
  id: string;
  secretHash: Buffer;
}

const FORMAT = /^(dl|ds)_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

export function generateDeskToken(kind: DeskTokenKind): DeskToken {
  const id = randomBytes(CREDENTIAL_ID_CHARS / 2).toString('hex');
  const secret = randomBytes(CREDENTIAL_SECRET_BYTES).toString('base64url');
  return { value: `${kind}_${id}_${secret}`, id: `${kind}_${id}`, secretHash: hashSecret(secret) };
}

/** Strictly parse a token of `kind`; null for anything else (another kind, another shape, a
 * non-canonical secret). */
export function parseDeskToken(value: unknown, kind: DeskTokenKind): (DeskToken & { secret: string }) | null {
  if (typeof value !== 'string' || value.length > 100) return null;
  const m = FORMAT.exec(value);
  if (!m || m[1] !== kind) return null;
  const secret = m[3]!;
  if (Buffer.from(secret, 'base64url').toString('base64url') !== secret) return null;
  return { value, id: `${kind}_${m[2]!}`, secretHash: hashSecret(secret), secret };
}

/** The CSRF token of the session whose cookie is `sessionToken` (parsed). */
export function csrfTokenFor(sessionSecret: string): string {
  return createHmac('sha256', sessionSecret).update('scribed desk csrf').digest('base64url');
}

/** Constant-time check of a presented CSRF token against the session's. */
export function csrfMatches(sessionSecret: string, presented: unknown): boolean {
  if (typeof presented !== 'string' || presented.length > 100) return false;
  return secretMatches(Buffer.from(csrfTokenFor(sessionSecret)), Buffer.from(presented));
}
