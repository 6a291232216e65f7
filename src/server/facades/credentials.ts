// The access key as the facades' clients present it: `Authorization: Bearer <key>` (OpenAI's
// SDK; Deepgram's for temporary tokens) or `Authorization: Token <key>` (Deepgram's SDK). The
// key is the account's native access key (`sk_...`), checked by the same code as the native
// `accessKey` header (src/server/auth.ts). Never read from the URL.
import type { FastifyRequest } from 'fastify';
import { authenticate, headerValue } from '../auth.js';
import type { Store } from '../../store/store.js';

export type AuthScheme = 'Bearer' | 'Token';

/** The credential after one of `schemes` in the Authorization header; '' for another scheme or
 * a malformed header (refused as not valid), undefined when there is no header. */
export function authorizationCredential(header: string | undefined, schemes: readonly AuthScheme[]): string | undefined {
  if (header === undefined || header.trim() === '') return undefined;
  const m = /^(\S+)\s+(\S+)$/.exec(header.trim());
  if (!m) return '';
  const scheme = schemes.find((s) => s.toLowerCase() === m[1]!.toLowerCase());
  return scheme === undefined ? '' : m[2]!;
}

/** The account of a facade request; throws the table's UNAUTHORIZED, which each facade's
 * error helper renders in its API's shape. */
export async function facadeAccount(store: Store, req: FastifyRequest, schemes: readonly AuthScheme[]): Promise<string> {
  return authenticate(store, 'access_key', authorizationCredential(headerValue(req.headers.authorization), schemes));
}

/** The account of a request whose Authorization header is the bare key, with no scheme
 * (AssemblyAI's SDK sends `Authorization: <key>`); throws the table's UNAUTHORIZED. */
export async function facadeAccountByBareKey(store: Store, req: FastifyRequest): Promise<string> {
  const header = headerValue(req.headers.authorization);
  return authenticate(store, 'access_key', header === undefined || header.trim() === '' ? undefined : header.trim());
}
