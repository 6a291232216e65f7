// Account provisioning: one account with a fresh access key and API token. The clear
// credentials exist only in the return value; the store keeps their hashes.
import { generateCredential } from '../core/credentials.js';
import { newId } from '../core/ids.js';
import type { Store } from '../store/store.js';

export interface ProvisionedAccount {
  accountId: string;
  accessKey: string;
  apiToken: string;
}

export async function provisionAccount(store: Store, name: string, characters: bigint, now = new Date()): Promise<ProvisionedAccount> {
  const accessKey = generateCredential('sk');
  const apiToken = generateCredential('tok');
  const account = await store.createAccount({
    id: newId('acc', now),
    name,
    characters,
    accessKey: { id: accessKey.id, secretHash: accessKey.secretHash },
    apiToken: { id: apiToken.id, secretHash: apiToken.secretHash },
    createdAt: now.toISOString(),
  });
  return { accountId: account.id, accessKey: accessKey.value, apiToken: apiToken.value };
}
