// Accounts, their credentials and Character balances (areas/accounts.ts, areas/ledger.ts).
//
// Secrets (access keys, API tokens) never reach the store in clear: callers pass the SHA-256
// of the secret part (see src/core/credentials.ts) and compare in constant time.

export type CredentialKind = 'access_key' | 'api_token';

export interface Account {
  id: string; // acc_...
  name: string;
  characters: bigint;
  createdAt: string; // ISO 8601
}

export interface CredentialRecord {
  id: string; // the public id part of the credential
  accountId: string;
  kind: CredentialKind;
  secretHash: Buffer; // sha256 of the secret part
}

export interface NewAccount {
  id: string;
  name: string;
  characters: bigint;
  accessKey: { id: string; secretHash: Buffer };
  apiToken: { id: string; secretHash: Buffer };
  createdAt: string;
}

export interface AccountStore {
  createAccount(input: NewAccount): Promise<Account>;
  getAccount(accountId: string): Promise<Account | null>;
  findCredential(kind: CredentialKind, id: string): Promise<CredentialRecord | null>;
  /** Add (positive) Characters; records a ledger entry. Returns the new balance. */
  creditCharacters(accountId: string, amount: bigint, reason: string, ref: string | null): Promise<bigint>;
  /** Debit all of `amount` or nothing; records a ledger entry and, when sessionId is given,
   * raises that session's charactersCharged by the same amount in the same transaction.
   * Returns the new balance, or null when the balance is short. */
  debitCharacters(accountId: string, amount: bigint, reason: string, ref: string | null, sessionId?: string): Promise<bigint | null>;
}
