// Credential checks. Credentials are `<prefix>_<id>_<secret>`: the id finds the record,
// the secret's SHA-256 is compared in constant time. Wrong kind (an API token where an
// access key is expected) reads exactly like an unknown credential.
//
// Authentication runs in an onRequest hook of each route plugin (requireCredential), before
// Fastify reads a byte of the body: a client without a valid credential is answered and
// disconnected, whatever body it announces (src/server/connections.ts closes a connection
// answered before its body arrived, lingering so that a client still writing reads the 401). Routes read the account with accountOf(req).
import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { ScribedError } from '../core/errors.js';
import { parseCredential, secretMatches } from '../core/credentials.js';
import type { CredentialKind, Store } from '../store/store.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated account, set by requireCredential (null on routes without it). */
    accountId: string | null;
    /** The desk session that authorised this read (routes/desk-auth.ts), or null. */
    deskSessionId: string | null;
  }
}

const PREFIX: Record<CredentialKind, 'sk' | 'tok'> = { access_key: 'sk', api_token: 'tok' };

export async function authenticate(store: Store, kind: CredentialKind, value: string | undefined): Promise<string> {
  if (!value)
    throw new ScribedError(
      'UNAUTHORIZED',
      kind === 'access_key' ? 'the accessKey header is required' : 'Authorization: Token <token> is required',
    );
  const parsed = parseCredential(value.trim(), PREFIX[kind]);
  const record = parsed ? await store.findCredential(kind, parsed.id) : null;
  if (!parsed || !record || !secretMatches(record.secretHash, parsed.secretHash)) {
    throw new ScribedError('UNAUTHORIZED', 'the credential is not valid');
  }
  return record.accountId;
}

export function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** The token of `Authorization: Token <token>` (the dashboard's scheme); '' for another
 * scheme, so it is refused as not valid rather than as missing. */
function dashboardToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Token\s+(\S+)$/.exec(header.trim());
  return m ? m[1] : '';
}

/** The credential a request presents for `kind`: the accessKey header, or the dashboard's
 * Authorization header. */
export function presentedCredential(req: FastifyRequest, kind: CredentialKind): string | undefined {
  return kind === 'access_key' ? headerValue(req.headers.accesskey) : dashboardToken(headerValue(req.headers.authorization));
}

/** onRequest hook for a route plugin whose every route needs a credential of `kind`. */
export function requireCredential(store: Store, kind: CredentialKind): onRequestAsyncHookHandler {
  return async (req) => {
    // A desk session authorised this GET already: only listed reads get here (desk-auth.ts).
    if (req.deskSessionId) return;
    req.accountId = await authenticate(store, kind, presentedCredential(req, kind));
  };
}

/** The account requireCredential authenticated; a route served without the hook is a bug. */
export function accountOf(req: FastifyRequest): string {
  if (req.accountId === null) throw new ScribedError('INTERNAL', 'route served without its authentication hook');
  return req.accountId;
}
