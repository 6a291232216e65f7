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

/** An access key as an operator sees it: its public id and dates, never its secret or hash.
 * Both dates null is a key in force (docs/operations.md, "Access keys"). */
export interface AccessKeyInfo {
  id: string;
  createdAt: string;
  /** The end of a rotated key's grace: from then on it is refused. */
  expiresAt: string | null;
  /** When the key was revoked: refused from then on. */
  revokedAt: string | null;
}

export interface AccountListing extends Account {
  /** Oldest first. */
  accessKeys: AccessKeyInfo[];
}

/** The `redact` policies an account's sessions and batch jobs get whatever they ask for
 * (docs/redaction.md, "Account default"). */
export interface RedactionDefault {
  accountId: string;
  /** Policy names, in the order the operator gave them. */
  policies: string[];
  updatedAt: string;
}

export interface AccountStore {
  createAccount(input: NewAccount): Promise<Account>;
  getAccount(accountId: string): Promise<Account | null>;
  /** The credential of that kind and id while it is valid: null for an unknown one, a
   * revoked one and one whose grace (expiresAt) has ended by the store's clock. Read from the
   * database on every call, so a revocation holds from the next request of any process. */
  findCredential(kind: CredentialKind, id: string): Promise<CredentialRecord | null>;
  /** Every account, oldest first, with its access keys. */
  listAccounts(): Promise<AccountListing[]>;
  /** Add `newKey` as an access key of the account (created at `at`) and set every other
   * access key of it still in force to expire at `retireAt`, in one transaction; a key
   * already expiring earlier keeps its end, a revoked one stays revoked. Returns the
   * account's access keys after. NOT_FOUND for an unknown account. */
  rotateAccessKey(accountId: string, newKey: { id: string; secretHash: Buffer }, at: string, retireAt: string): Promise<AccessKeyInfo[]>;
  /** Revoke at `at` the account's access key `keyId`, or with null every access key of the
   * account not yet revoked. Returns the ids revoked by this call (a key already revoked
   * keeps its first revocation time). NOT_FOUND for an unknown account, or a keyId that is
   * not an access key of that account. */
  revokeAccessKeys(accountId: string, keyId: string | null, at: string): Promise<string[]>;
  /** Add (positive) Characters; records a ledger entry. Returns the new balance. */
  creditCharacters(accountId: string, amount: bigint, reason: string, ref: string | null): Promise<bigint>;
  /** Debit all of `amount` or nothing; records a ledger entry and, when sessionId is given,
   * raises that session's charactersCharged by the same amount in the same transaction.
   * Returns the new balance, or null when the balance is short. */
  debitCharacters(accountId: string, amount: bigint, reason: string, ref: string | null, sessionId?: string): Promise<bigint | null>;
  /** Set the account's default redaction policies (an empty list clears it). NOT_FOUND for
   * an unknown account. */
  setRedactionDefault(accountId: string, policies: readonly string[], now: Date): Promise<void>;
  /** The account's default redaction policies, or null when none is set. */
  getRedactionDefault(accountId: string): Promise<RedactionDefault | null>;
  /** Carry out many sessions' debits in one transaction (areas/debits.ts): each as
   * debitCharacters with its sessionId would, in the order given, each answered on its own
   * (a short balance refuses only the debits it cannot cover; an unknown account or session,
   * or an amount that is not a count of Characters, refuses only that debit). The accounts
   * are locked once each, in id order. Answers in the order of `debits`. */
  debitMany(debits: readonly SessionDebit[]): Promise<DebitOutcome[]>;
}

/** One session's debit for its audio (debitMany). */
export interface SessionDebit {
  accountId: string;
  sessionId: string;
  amount: bigint;
  reason: string;
  ref: string | null;
  /** Names the debit once for good (the session and the charge it brings the session to,
   * `chargedTo`): a debit whose id is already on a ledger row was carried out before (its
   * transaction committed though its answer was lost) and is answered `debited` with the
   * balance now, charging nothing. Kept on the ledger row. */
  id?: string;
  /** The session's charactersCharged once this debit is carried out, as the asking node
   * reckons it. When the stored charge is already past `chargedTo - amount` (a debit of the
   * session landed unseen: its answer was lost and the frame came again, perhaps cut
   * differently), only what the stored charge lacks of `chargedTo` is charged (nothing when
   * it is there already), so the session is charged up to its audio once. */
  chargedTo?: bigint;
}

/** A debit's answer: the balance after it, `short` (nothing written: the balance could not
 * cover it), or refused with the error debitCharacters would have thrown. */
export type DebitOutcome = { kind: 'debited'; balance: bigint } | { kind: 'short' } | { kind: 'refused'; error: Error };
