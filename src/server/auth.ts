// Credential checks. Credentials are `<prefix>_<id>_<secret>`: the id finds the record,
// the secret's SHA-256 is compared in constant time. Wrong kind (an API token where an
// access key is expected) reads exactly like an unknown credential.
import { ScribedError } from '../core/errors.js';
import { parseCredential, secretMatches } from '../core/credentials.js';
import type { CredentialKind, Store } from '../store/store.js';

const PREFIX: Record<CredentialKind, 'sk' | 'tok'> = { access_key: 'sk', api_token: 'tok' };

export async function authenticate(store: Store, kind: CredentialKind, value: string | undefined): Promise<string> {
  if (!value) throw new ScribedError('UNAUTHORIZED', kind === 'access_key' ? 'the accessKey header is required' : 'Authorization: Token <token> is required');
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
