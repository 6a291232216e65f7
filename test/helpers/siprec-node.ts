// A node with the SIPREC recording server on (the settings the test gives) and the account its
// recorded calls belong to, for test/server/siprec*.test.ts: the service, the account's access
// key, and reads of the native API as that account.
import { generateCredential } from '../../src/core/credentials.js';
import type { LocalServiceOptions, TestService } from './local-service.js';
import { startService } from './service.js';

const API = '/sound_clone/api/v1';

export interface SiprecNode {
  svc: TestService;
  accessKey: string;
  /** GET of a native API path as the account, its JSON body. */
  native(path: string): Promise<any>;
  /** The account's characters left. */
  balance(): Promise<bigint>;
}

/** An account id unique to this run, `acc_` + 20 characters led by `letter` (a file's own). */
export function siprecAccountId(letter: string): string {
  return `acc_${letter.repeat(8)}${Date.now().toString(36).padStart(12, '0').slice(-12)}`;
}

/** Starts the node (`options.siprec` names the account) and creates that account with 10,000
 * characters. */
export async function startSiprecNode(options: LocalServiceOptions & { siprec: { accountId: string } }, name: string): Promise<SiprecNode> {
  const svc = await startService(options);
  const key = generateCredential('sk');
  const token = generateCredential('tok');
  await svc.service.store.createAccount({
    id: options.siprec.accountId,
    name,
    characters: 10_000n,
    accessKey: { id: key.id, secretHash: key.secretHash },
    apiToken: { id: token.id, secretHash: token.secretHash },
    createdAt: new Date().toISOString(),
  });
  const accessKey = key.value;
  const native = async (path: string): Promise<any> => (await fetch(`${svc.baseUrl}${path}`, { headers: { accessKey } })).json();
  return { svc, accessKey, native, balance: async () => BigInt((await native(`${API}/account`)).data.characters) };
}
