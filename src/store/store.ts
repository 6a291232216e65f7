// The store interface: everything the service persists. The embedded implementation is
// SQLite (sqlite.ts); the interface is async so a PostgreSQL implementation can join later
// without touching callers. Each method is one transaction: callers never compose
// multi-statement transactions from outside.
//
// Secrets (access keys, API tokens, tickets) never reach the store in clear: callers pass
// the SHA-256 of the secret part (see src/core/credentials.ts) and compare in constant time.

export type SessionState = 'RECORDING' | 'PAUSED' | 'CLOSED';
export type TranscriptionStatus = 'RECORDING' | 'PAUSED' | 'PROCESSING' | 'COMPLETED' | 'FAILED';
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
  createdAt: string;
  updatedAt: string;
}

export interface TranscriptionRecord {
  id: string; // stt_...
  accountId: string;
  kind: 'realtime' | 'batch';
  sessionId: string | null;
  title: string;
  status: TranscriptionStatus;
  languageHint: string | null;
  /** Input sample rate of the audio, so segment sample positions convert to time. */
  sampleRateHz: number;
  audioSamples: bigint;
  createdAt: string;
  updatedAt: string;
  completedAt: string | null;
}

export interface SegmentWord {
  word: string;
  startSample: string; // session-wide, decimal
  endSample: string;
  confidence: number | null;
}

export interface SegmentRecord {
  transcriptionId: string;
  index: number;
  /** Session-wide sample positions, input rate. */
  startSample: bigint;
  endSample: bigint;
  text: string;
  words: SegmentWord[];
  /** Text-option results (rawText, entities); absent when no text option was set. */
  annotations?: Record<string, unknown>;
  createdAt: string;
}

export type BatchJobState = 'QUEUED' | 'RUNNING' | 'DONE' | 'FAILED';

export interface BatchJobRecord {
  transcriptionId: string; // stt_...
  accountId: string;
  /** Effective options of the job (same shape as a session's, see src/batch/request.ts). */
  options: Record<string, unknown>;
  notices: Array<{ code: string; message: string }>;
  /** File name of the decoded audio (raw s16le mono at the History row's rate) in the
   * batch directory. */
  audioFile: string;
  state: BatchJobState;
  charactersCharged: bigint;
  error: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface CreateBatchJobInput {
  job: Omit<BatchJobRecord, 'state' | 'error' | 'updatedAt'>;
  title: string;
  languageHint: string | null;
  sampleRateHz: number;
  audioSamples: bigint;
}

/** Keyset position in the History list: the last row of the previous page. */
export interface HistoryPosition {
  createdAt: string;
  id: string;
}

export interface TicketRecord {
  id: string; // tkt_...
  accountId: string;
  sessionId: string;
  secretHash: Buffer;
  expiresAt: string;
  usedAt: string | null;
}

export type TicketConsumeOutcome =
  | { ok: true; ticket: TicketRecord }
  | { ok: false; reason: 'unknown' | 'used' | 'expired' | 'forged' };

export interface CreateSessionInput {
  accountId: string;
  idempotencyKey: string;
  /** Hash of the normalised request (title, languageHint, options after validation), so a
   * replay that differs only in key order or omitted defaults still matches. */
  requestHash: string;
  session: Omit<SessionRecord, 'state' | 'epoch' | 'epochBases' | 'capturedSamples' | 'charactersCharged' | 'nextSegmentIndex' | 'updatedAt'>;
  sampleRateHz: number;
}

export type CreateSessionOutcome =
  | { kind: 'created'; session: SessionRecord }
  | { kind: 'replayed'; session: SessionRecord }
  | { kind: 'conflict' };

export interface SessionProgress {
  capturedSamples: bigint;
  /** Absolute value after the update; the store never lowers it. */
  charactersCharged?: bigint;
  nextSegmentIndex?: number;
}

export interface Store {
  /** Open the database and apply migrations. */
  open(): Promise<void>;
  close(): Promise<void>;
  isOpen(): boolean;

  // accounts and credentials
  createAccount(input: NewAccount): Promise<Account>;
  getAccount(accountId: string): Promise<Account | null>;
  findCredential(kind: CredentialKind, id: string): Promise<CredentialRecord | null>;
  /** Add (positive) Characters; records a ledger entry. Returns the new balance. */
  creditCharacters(accountId: string, amount: bigint, reason: string, ref: string | null): Promise<bigint>;
  /** Debit all of `amount` or nothing; records a ledger entry and, when sessionId is given,
   * raises that session's charactersCharged by the same amount in the same transaction.
   * Returns the new balance, or null when the balance is short. */
  debitCharacters(accountId: string, amount: bigint, reason: string, ref: string | null, sessionId?: string): Promise<bigint | null>;

  // real-time sessions
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

  // History and transcripts
  getTranscription(transcriptionId: string, accountId: string): Promise<TranscriptionRecord | null>;
  setTranscriptionStatus(transcriptionId: string, status: TranscriptionStatus, audioSamples?: bigint): Promise<void>;
  /** Insert a final segment (idempotent on (transcriptionId, index)). */
  appendSegment(segment: SegmentRecord): Promise<void>;
  listSegments(transcriptionId: string): Promise<SegmentRecord[]>;
  /** An account's History rows of both kinds, newest first ((createdAt, id) descending),
   * strictly after `after` when given. */
  listTranscriptions(accountId: string, limit: number, after?: HistoryPosition): Promise<TranscriptionRecord[]>;

  // batch jobs
  /** In one transaction: debit job.charactersCharged, insert the History row (kind batch,
   * PROCESSING) and the QUEUED job. Returns null, changing nothing, when the balance is short. */
  createBatchJob(input: CreateBatchJobInput): Promise<BatchJobRecord | null>;
  getBatchJob(transcriptionId: string): Promise<BatchJobRecord | null>;
  /** Jobs in any of the states, oldest first (start-up recovery and the queue). */
  listBatchJobs(states: BatchJobState[]): Promise<BatchJobRecord[]>;
  /** Move a job to a state; DONE and FAILED also set the History row's status. */
  setBatchJobState(transcriptionId: string, state: BatchJobState, error?: string): Promise<void>;
}
