// The desk's login links and browser sessions (areas/desk-sessions.ts, docs/desk.md). Secrets
// never reach the store in clear: callers pass the SHA-256 of the secret part and the store
// compares in constant time, as for tickets.

export interface DeskLoginLinkRecord {
  id: string;
  accountId: string;
  secretHash: Buffer;
  createdAt: string;
  expiresAt: string;
}

/** The session a redeemed link becomes (its account is the link's). */
export interface NewDeskSession {
  id: string;
  secretHash: Buffer;
  createdAt: string;
  /** Absolute end, whatever the activity. */
  expiresAt: string;
}

export type DeskLinkRedeemOutcome = { ok: true; accountId: string } | { ok: false; reason: 'unknown' | 'forged' | 'used' | 'expired' };

export interface DeskSessionRecord {
  id: string;
  accountId: string;
  createdAt: string;
  lastSeenAt: string;
  expiresAt: string;
}

export type DeskSessionOutcome =
  { ok: true; session: DeskSessionRecord } | { ok: false; reason: 'unknown' | 'forged' | 'ended' | 'expired' | 'idle' };

/** A live (not closed) real-time session of an account, as the desk lists it. */
export interface DeskLiveSession {
  sessionId: string;
  transcriptionId: string;
  title: string;
  state: 'RECORDING' | 'PAUSED';
  callId: string | null;
  speaker: string | null;
  createdAt: string;
}

export interface DeskSessionStore {
  /** Store a login link; links expired before `now` are swept in the same transaction. */
  insertDeskLoginLink(link: DeskLoginLinkRecord, now: Date): Promise<void>;
  /** Spend a link (exists, hash matches, unused, unexpired) and create the session it becomes,
   * in one transaction: of two redeems of one link exactly one succeeds. */
  redeemDeskLoginLink(linkId: string, secretHash: Buffer, session: NewDeskSession, now: Date): Promise<DeskLinkRedeemOutcome>;
  /** The session if its hash matches and it has not ended, passed its absolute end or been
   * idle `idleMs` or more; its last_seen_at moves to `now` when older than `touchAfterMs`. */
  useDeskSession(sessionId: string, secretHash: Buffer, now: Date, idleMs: number, touchAfterMs: number): Promise<DeskSessionOutcome>;
  /** Log out: the session is refused from now on. False when there was no such open session. */
  endDeskSession(sessionId: string, now: Date): Promise<boolean>;
  /** The operator's stop: every open desk session of the account ends and its unused login
   * links are spent, in one transaction. Counts what it ended. */
  endAccountDeskSessions(accountId: string, now: Date): Promise<{ sessions: number; links: number }>;
  /** Of these desk sessions, the ones that are over at `now`: ended (logout, desk-logout, a
   * revoked key), past their absolute end, idle `idleMs` or more, or gone. What a node's open
   * watch sockets and a ticket's consumer ask, so a session's end reaches every node. */
  closedDeskSessions(sessionIds: readonly string[], now: Date, idleMs: number): Promise<string[]>;
  /** An account's sessions a client streams to now, newest first, at most `limit`: RECORDING
   * and served by a node (claimed at the socket's attach; a lost socket pauses the session, a
   * session created and never streamed to has no owner). `leaseAfter` (a shared store, whose
   * serving nodes renew their leases): only leases running past it, so a dead node's are not. */
  listDeskLiveSessions(accountId: string, limit: number, leaseAfter?: Date): Promise<DeskLiveSession[]>;
}
