// Issuing a desk login link (`scribed accounts login-link`, docs/desk.md): a single-use token
// for one account, stored hashed, carried in the link's fragment so it never reaches a server
// log, a proxy or a Referer; the login page posts it.
import { newId } from '../core/ids.js';
import type { Store } from '../store/store.js';
import { DESK_LOGIN_PATH } from './policy.js';
import { generateDeskToken } from './tokens.js';

export interface IssuedLoginLink {
  accountId: string;
  linkId: string;
  url: string;
  expiresAt: string;
}

/** `baseUrl` is how the browser reaches scribed (`https://scribed.example`), http or https; the
 * desk is served at the root of that origin (its pages call /desk/api/ and the API's paths). */
export async function issueLoginLink(store: Store, accountId: string, baseUrl: string, ttlMs: number, now: Date): Promise<IssuedLoginLink> {
  let base: URL;
  try {
    base = new URL(baseUrl);
  } catch {
    throw new Error(`--base-url must be an http or https URL, got ${baseUrl}`);
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new Error(`--base-url must be an http or https URL, got ${baseUrl}`);
  if (!(await store.getAccount(accountId))) throw new Error(`NOT_FOUND: account ${accountId} does not exist`);
  const token = generateDeskToken('dl');
  const expiresAt = new Date(now.getTime() + ttlMs).toISOString();
  await store.insertDeskLoginLink({ id: token.id, accountId, secretHash: token.secretHash, createdAt: now.toISOString(), expiresAt }, now);
  return { accountId, linkId: token.id, url: `${base.origin}${DESK_LOGIN_PATH}#${token.value}`, expiresAt };
}

/** End every desk session of the account and void its unused links (`accounts desk-logout`,
 * and `accounts revoke-key`: whoever lost a key may have handed out desk access too), with an
 * audit event naming the account. Running servers close the sessions' watch sockets within a
 * second (src/server/ws/desk-watchers.ts). */
export async function endAccountDeskAccess(store: Store, accountId: string, now: Date): Promise<{ sessions: number; links: number }> {
  const ended = await store.endAccountDeskSessions(accountId, now);
  if (ended.sessions > 0 || ended.links > 0) {
    await store.recordAudit({
      id: newId('aud', now),
      accountId,
      credentialId: null,
      action: 'desk.sessions_ended',
      subjectId: accountId,
      createdAt: now.toISOString(),
    });
  }
  return ended;
}
