// Real-time sessions, their tickets and their progress (areas/sessions.ts). The fenced
// writes of a session served across nodes are in ownership.ts.
import type { SessionState, TranscriptionStatus } from '../../core/session-status.js';

export type { SessionState };

export interface SessionRecord {
  id: string; // rts_...
  accountId: string;
  transcriptionId: string; // stt_...
  title: string;
  languageHint: string | null;
  /** Resolved options (effectiveOptions) as stored at creation. */
  options: Record<string, unknown>;
  state: SessionState;
  epoch: number;
  /** Session-wide sample index at which each epoch began: epochBases[i] is epoch i+1. */
  epochBases: bigint[];
  capturedSamples: bigint;
  /** Characters already debited for this session's audio. */
  charactersCharged: bigint;
  /** Next segment index to assign (segments are numbered from 0 per session). */
  nextSegmentIndex: number;
  /** The call this session is a leg of, and its speaker there (both null outside a call). */
  callId: string | null;
  speaker: string | null;
  createdAt: string;
  updatedAt: string;
}

/** Which socket a ticket opens: `stream` (and watch: it is the stronger of the two) or
 * `watch` only. */
export type TicketScope = 'stream' | 'watch';

export interface TicketRecord {
  id: string; // tkt_...
  accountId: string;
  sessionId: string;
  secretHash: Buffer;
  expiresAt: string;
  usedAt: string | null;
  /** Absent: `stream`. */
  scope?: TicketScope;
  /** The desk session that asked for the ticket: the ticket is dead once that session ends. */
  deskSessionId?: string | null;
}

export type TicketConsumeOutcome = { ok: true; ticket: TicketRecord } | { ok: false; reason: 'unknown' | 'used' | 'expired' | 'forged' };

export interface CreateSessionInput {
  accountId: string;
  idempotencyKey: string;
  /** Hash of the normalised request (title, languageHint, options after validation), so a
   * replay that differs only in key order or omitted defaults still matches. */
  requestHash: string;
  session: Omit<
    SessionRecord,
    'state' | 'epoch' | 'epochBases' | 'capturedSamples' | 'charactersCharged' | 'nextSegmentIndex' | 'callId' | 'speaker' | 'updatedAt'
  >;
  sampleRateHz: number;
  /** Join this call as this speaker (areas/calls.ts): the call must be the account's
   * (NOT_FOUND otherwise), the speaker free in it (CALL_SPEAKER_TAKEN) and the call under
   * MAX_CALL_LEGS legs (CALL_LEG_LIMIT). Checked after the idempotency lookup, so a replay
   * answers with its session. */
  call?: { callId: string; speaker: string } | null;
}

export type CreateSessionOutcome =
  { kind: 'created'; session: SessionRecord } | { kind: 'replayed'; session: SessionRecord } | { kind: 'conflict' };

export interface SessionProgress {
  capturedSamples: bigint;
  /** Absolute value after the update; the store never lowers it. */
  charactersCharged?: bigint;
  nextSegmentIndex?: number;
}

export interface SessionStore {
  /** Idempotent create: inserts session, History row and idempotency record together, or
   * returns the session already stored under (accountId, idempotencyKey). */
  createSession(input: CreateSessionInput): Promise<CreateSessionOutcome>;
  getSession(sessionId: string, accountId: string): Promise<SessionRecord | null>;
  /** Sessions in a state, across accounts (start-up recovery). */
  listSessionsByState(state: SessionState): Promise<SessionRecord[]>;
  setSessionState(sessionId: string, state: SessionState, transcriptionStatus: TranscriptionStatus): Promise<void>;
  /** Open a new epoch beginning at the current capturedSamples; returns the updated session. */
  beginEpoch(sessionId: string): Promise<SessionRecord>;
  saveProgress(sessionId: string, progress: SessionProgress): Promise<void>;

  // tickets
  insertTicket(ticket: TicketRecord): Promise<void>;
  /** Atomically mark a ticket used if it exists, is unused, unexpired, and its hash matches
   * (constant-time). `now` is passed in so tests control time. */
  consumeTicket(ticketId: string, secretHash: Buffer, now: Date): Promise<TicketConsumeOutcome>;
}
