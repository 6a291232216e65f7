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
  /** The call this session is a leg of, and its speaker there (both null outside a call). */
  callId: string | null;
  speaker: string | null;
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
  /** The call this row is a leg of, and its speaker there (both null outside a call). */
  callId: string | null;
  speaker: string | null;
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
  /** What ffprobe found in the upload (format, codec, rate, ...); null for jobs stored
   * before it was kept. */
  source: Record<string, unknown> | null;
  /** The recognizer's channel adaptation after the job's last stored segment
   * (RecognitionStream.channelState); null before the first, or when the engine has none. */
  channelState: number[] | null;
  createdAt: string;
  updatedAt: string;
}

export interface CreateBatchJobInput {
  job: Omit<BatchJobRecord, 'state' | 'error' | 'updatedAt' | 'channelState'>;
  title: string;
  languageHint: string | null;
  sampleRateHz: number;
  audioSamples: bigint;
  /** The upload's Idempotency-Key (per account) and the hash of what it stands for. */
  idempotency: { key: string; requestHash: string } | null;
}

/** A multichannel upload as a call (areas/batch.ts createBatchCall, docs/calls.md): the call
 * (externalId null) and one batch job per channel, in one transaction. */
export interface CreateBatchCallInput {
  /** `idempotencyKey`/`requestHash`: the call's own (the calls' namespace), not the upload's. */
  call: { id: string; accountId: string; title: string; idempotencyKey: string; requestHash: string; createdAt: string };
  /** In channel order; each leg's History row is titled `title` and labelled `speaker`. */
  legs: Array<{ job: CreateBatchJobInput['job']; speaker: string; title: string; audioSamples: bigint }>;
  languageHint: string | null;
  sampleRateHz: number;
  /** The upload's Idempotency-Key, held by the first leg's job. */
  idempotency: { key: string; requestHash: string } | null;
}

/** `replayed`: the key was used before with the same request (that job, nothing charged);
 * `conflict`: with another request; `insufficient`: the balance is short (nothing written). */
export type CreateBatchJobOutcome =
  | { kind: 'created'; job: BatchJobRecord }
  | { kind: 'replayed'; job: BatchJobRecord }
  | { kind: 'conflict' }
  | { kind: 'insufficient' };

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
  session: Omit<SessionRecord, 'state' | 'epoch' | 'epochBases' | 'capturedSamples' | 'charactersCharged' | 'nextSegmentIndex' | 'callId' | 'speaker' | 'updatedAt'>;
  sampleRateHz: number;
  /** Join this call as this speaker (areas/calls.ts): the call must be the account's
   * (NOT_FOUND otherwise), the speaker free in it (CALL_SPEAKER_TAKEN) and the call under
   * MAX_CALL_LEGS legs (CALL_LEG_LIMIT). Checked after the idempotency lookup, so a replay
   * answers with its session. */
  call?: { callId: string; speaker: string } | null;
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

export interface Store
  extends InterpretationStore,
    MusicStore,
    VoiceStore,
    UserGroupStore,
    VoiceDesignStore,
    SessionOwnershipStore,
    JobClaimStore,
    BatchWorkStore,
    SharedFileStore,
    CallStore {
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
  /** In one transaction: check the Idempotency-Key, debit job.charactersCharged, insert the
   * History row (kind batch, PROCESSING) and the QUEUED job. Anything but `created` changes
   * nothing. */
  createBatchJob(input: CreateBatchJobInput): Promise<CreateBatchJobOutcome>;
  /** A multichannel upload: its call and a job per channel; the outcome's job is the first leg's. */
  createBatchCall(input: CreateBatchCallInput): Promise<CreateBatchJobOutcome>;
  /** The job an account's batch Idempotency-Key stands for, with its request hash. */
  findBatchJobByIdempotencyKey(accountId: string, key: string): Promise<{ job: BatchJobRecord; requestHash: string } | null>;
  getBatchJob(transcriptionId: string): Promise<BatchJobRecord | null>;
  /** Jobs in any of the states, oldest first (start-up recovery and the queue). */
  listBatchJobs(states: BatchJobState[]): Promise<BatchJobRecord[]>;
  /** Move a job to a state; DONE and FAILED also set the History row's status. */
  setBatchJobState(transcriptionId: string, state: BatchJobState, error?: string): Promise<void>;
  /** In one transaction: a QUEUED or RUNNING job becomes FAILED with `reason` (its History row
   * too) and its charactersCharged are credited back (ledger reason `batch_refund`). True when
   * it did; false, changing nothing, for a job already DONE or FAILED (never refunded twice,
   * never a delivered job). */
  failBatchJob(transcriptionId: string, reason: string): Promise<boolean>;
  /** appendSegment for a batch job's segment, and in the same transaction the job's
   * channelState after it (unchanged when null), so a resumed job continues from the state
   * its last stored segment left. */
  appendBatchSegment(segment: SegmentRecord, channelState: number[] | null): Promise<void>;
}

// ---------------------------------------------------------------- issue 4: interpretation

export type InterpretationTargetState = 'QUEUED' | 'PROCESSING' | 'COMPLETED' | 'FAILED_RELEASED';

/** A failed target's offer for its next reservation cycle (GET .../retry-plan). */
export interface RetryPlan {
  nextReservationCycle: number;
  characters: bigint;
  rateVersion: string;
  expiresAt: string;
}

export type RetryPlanOutcome = { kind: 'plan'; target: InterpretationTargetRecord } | { kind: 'not_found' } | { kind: 'not_failed'; state: InterpretationTargetState };

export interface InterpretationTargetRecord {
  id: string; // it_...
  projectId: string; // ip_...
  accountId: string;
  language: string;
  generationId: string; // ia_...: the logical generation, kept across retries
  state: InterpretationTargetState;
  reservationCycle: number;
  reservedCharacters: bigint;
  /** Code points of the source the price is computed from. */
  sourceUnits: bigint;
  plan: RetryPlan | null;
  createdAt: string;
  updatedAt: string;
}

export interface InterpretationProjectRecord {
  id: string;
  accountId: string;
  title: string;
  sourceLanguage: string;
  source: { text: string } | null;
  createdAt: string;
  targets: InterpretationTargetRecord[];
}

export interface NewInterpretationProject {
  id: string;
  accountId: string;
  title: string;
  sourceLanguage: string;
  source: { text: string } | null;
  sourceUnits: bigint;
  createdAt: string;
  targets: { id: string; language: string; generationId: string; characters: bigint }[];
}

export interface InterpretationRetryInput {
  accountId: string;
  projectId: string;
  targetId: string;
  idempotencyKey: string;
  requestHash: string;
  request: { nextReservationCycle: number; characters: bigint; rateVersion: string };
  now: Date;
  /** Why a request does not confirm the current plan (core/interpretation.ts), or null. */
  refusal: (target: InterpretationTargetRecord) => string | null;
  /** The result body stored under the key and returned, built from the updated target. */
  result: (target: InterpretationTargetRecord) => Record<string, unknown>;
}

export type InterpretationRetryOutcome =
  | { kind: 'retried'; result: Record<string, unknown> }
  | { kind: 'replayed'; result: Record<string, unknown> }
  | { kind: 'key_mismatch' }
  | { kind: 'not_found' }
  | { kind: 'refused'; reason: string }
  | { kind: 'insufficient'; balance: bigint };

export interface InterpretationStore {
  /** Insert a project and its QUEUED targets, reserving each target's first cycle from the
   * balance in the same transaction; null (nothing written) when the balance is short. */
  createInterpretationProject(input: NewInterpretationProject): Promise<InterpretationProjectRecord | null>;
  getInterpretationProject(projectId: string, accountId: string): Promise<InterpretationProjectRecord | null>;
  /** Return the target's unexpired plan or issue a new one (computed by `plan`), for a
   * FAILED_RELEASED target of this project and account. */
  issueRetryPlan(
    projectId: string,
    targetId: string,
    accountId: string,
    now: Date,
    plan: (target: InterpretationTargetRecord) => RetryPlan,
    reusable: (plan: RetryPlan) => boolean,
  ): Promise<RetryPlanOutcome>;
  /** The whole retry in one transaction: key lookup, ownership, plan check, debit, state. */
  retryInterpretationTarget(input: InterpretationRetryInput): Promise<InterpretationRetryOutcome>;
  /** Operator/worker transitions. fail: QUEUED|PROCESSING -> FAILED_RELEASED, reservation
   * credited back; start: QUEUED -> PROCESSING; complete: PROCESSING|QUEUED -> COMPLETED,
   * reservation consumed. Throws NOT_FOUND / VALIDATION_FAILED. */
  transitionInterpretationTarget(targetId: string, to: 'PROCESSING' | 'COMPLETED' | 'FAILED_RELEASED', now: Date): Promise<InterpretationTargetRecord>;
}

// ---------------------------------------------------------------- issue 4: music projects

/** ARRANGEMENT_GENERATING -> ARRANGEMENT_READY (job done) -> GENERATION_QUEUED (generate). */
export type MusicProjectStatus = 'ARRANGEMENT_GENERATING' | 'ARRANGEMENT_READY' | 'GENERATION_QUEUED' | 'ARRANGEMENT_FAILED';

export interface MusicQuote {
  quoteId: string; // mq_...
  characters: string;
  arrangementVersion: number;
  expiresAt: string;
  createdAt: string;
}

export interface MusicProjectRecord {
  id: string; // mup_...
  accountId: string;
  status: MusicProjectStatus;
  brief: Record<string, unknown>;
  arrangementVersion: number;
  arrangement: Record<string, unknown> | null;
  activeQuote: MusicQuote | null;
  generation: Record<string, unknown> | null;
  createdAt: string;
  updatedAt: string;
}

export type MusicOutcome =
  | { kind: 'ok'; project: MusicProjectRecord }
  | { kind: 'not_found' }
  | { kind: 'busy'; status: MusicProjectStatus }
  | { kind: 'stale_quote' }
  | { kind: 'insufficient'; balance: bigint };

export interface MusicStore {
  createMusicProject(input: { id: string; accountId: string; brief: Record<string, unknown>; createdAt: string }): Promise<MusicProjectRecord>;
  getMusicProject(projectId: string, accountId: string): Promise<MusicProjectRecord | null>;
  /** Whole-brief replace (from ARRANGEMENT_READY or ARRANGEMENT_FAILED): version + 1, quote dropped. */
  replaceMusicBrief(projectId: string, accountId: string, brief: Record<string, unknown>, now: Date): Promise<MusicOutcome>;
  /** A new quote becomes the active one (ARRANGEMENT_READY only). */
  createMusicQuote(projectId: string, accountId: string, quote: (p: MusicProjectRecord) => MusicQuote, now: Date): Promise<MusicOutcome>;
  /** Debit the active quote and queue generation; any other quote id is stale. */
  startMusicGeneration(projectId: string, accountId: string, quoteId: string, now: Date, generation: (q: MusicQuote) => Record<string, unknown>): Promise<MusicOutcome>;
  /** Job end: store the plan if the project still waits for this arrangement version. */
  completeArrangement(projectId: string, arrangementVersion: number, plan: Record<string, unknown>, now: Date): Promise<boolean>;
  listMusicProjectsByStatus(status: MusicProjectStatus): Promise<MusicProjectRecord[]>;
  /** The job gave up: ARRANGEMENT_GENERATING -> ARRANGEMENT_FAILED if the project still waits
   * for this arrangement version. */
  failArrangement(projectId: string, arrangementVersion: number, now: Date): Promise<boolean>;
}

// ---------------------------------------------------------------- issue 4: voice library

export interface VoiceRecord {
  id: string; // vc_...
  accountId: string;
  name: string;
  type: string;
  feature: string;
  channel: string;
  designId: string | null;
  fileCount: number;
  totalFileSize: number;
  createdAt: string;
}

export interface NewRecording {
  sha256: string;
  format: string;
  sizeBytes: number;
}

/** A voice as created: its counts follow from `recordings`. */
export type NewVoice = Omit<VoiceRecord, 'fileCount' | 'totalFileSize'> & { recordings: NewRecording[] };

export interface VoiceStore {
  /** Insert a voice with its recordings. A design saved before returns its voice instead. */
  createVoice(input: NewVoice): Promise<{ kind: 'created' | 'exists'; voice: VoiceRecord }>;
  getVoice(voiceId: string, accountId: string): Promise<VoiceRecord | null>;
  listVoices(accountId: string): Promise<VoiceRecord[]>;
  /** Append recordings unless the voice would then hold more than maxFiles; the count is
   * checked inside the transaction, so concurrent uploads cannot pass the limit together. */
  addVoiceRecordings(
    voiceId: string,
    accountId: string,
    recordings: NewRecording[],
    maxFiles: number,
    now: Date,
  ): Promise<{ kind: 'ok'; voice: VoiceRecord; firstIndex: number } | { kind: 'not_found' } | { kind: 'limit'; current: number }>;
  /** Undo of addVoiceRecordings (used when publishing the files fails). */
  dropVoiceRecordingsFrom(voiceId: string, firstIndex: number): Promise<string[]>;
  /** Delete a custom voice and its recording rows; returns the content hashes no longer
   * referenced anywhere (their files can go), or null when the voice is missing/foreign. */
  deleteVoice(voiceId: string, accountId: string): Promise<string[] | null>;
}

// ---------------------------------------------------------------- issue 4: dashboard user groups

export type UserGroupEnvironment = 'Customer' | 'Testing';

export interface UserGroupRecord {
  teamId: number;
  accountId: string;
  providedId: string;
  name: string | null;
  mapping: Record<string, unknown> | null;
  properties: Record<string, unknown> | null;
  environment: UserGroupEnvironment | null;
  /** Random per group; the token is derived from it with the server key (never stored). */
  tokenNonce: string;
  tokenHash: Buffer;
  createdAt: string;
  updatedAt: string;
}

export interface UserGroupFields {
  name?: string | null;
  mapping?: Record<string, unknown> | null;
  properties?: Record<string, unknown> | null;
  environment?: UserGroupEnvironment | null;
}

export interface UserGroupStore {
  /** Find the group (accountId, providedId); with `update`, apply the given fields; create it
   * when missing (with a fresh token from `newToken`). One transaction. */
  upsertUserGroup(
    accountId: string,
    providedId: string,
    fields: UserGroupFields,
    update: boolean,
    newToken: () => { nonce: string; hash: Buffer },
    now: Date,
  ): Promise<{ group: UserGroupRecord; created: boolean }>;
  /** Delete when `matches(storedHash)` holds (constant-time compare by the caller). */
  deleteUserGroup(accountId: string, providedId: string, matches: (storedHash: Buffer) => boolean): Promise<'deleted' | 'not_found' | 'mismatch'>;
}

// ---------------------------------------------------------------- issue 4: voice design

export type VoiceDesignStatus = 'PENDING' | 'COMPLETED' | 'FAILED';
export type CallbackState = 'NONE' | 'PENDING' | 'DELIVERED' | 'FAILED';

export interface VoiceDesignRecord {
  id: string; // vd_...
  accountId: string;
  description: string;
  previewText: string;
  callbackUrl: string | null;
  status: VoiceDesignStatus;
  params: Record<string, unknown>;
  previewSha256: string | null;
  previewBytes: number | null;
  error: string | null;
  callback: { state: CallbackState; attempts: number; lastStatus: number | null; lastError: string | null; nextAt: string | null };
  createdAt: string;
  updatedAt: string;
}

export interface VoiceDesignStore {
  createVoiceDesign(input: Omit<VoiceDesignRecord, 'status' | 'previewSha256' | 'previewBytes' | 'error' | 'callback' | 'updatedAt'>): Promise<VoiceDesignRecord>;
  getVoiceDesign(designId: string, accountId: string | null): Promise<VoiceDesignRecord | null>;
  /** createVoiceDesign unless the account already holds `maxPending` PENDING designs (then
   * null); the count and the insert are one transaction. */
  createVoiceDesignIfRoom(
    input: Omit<VoiceDesignRecord, 'status' | 'previewSha256' | 'previewBytes' | 'error' | 'callback' | 'updatedAt'>,
    maxPending: number,
  ): Promise<VoiceDesignRecord | null>;
  /** PENDING -> COMPLETED (with the preview) or FAILED; the callback becomes PENDING when a
   * URL was given. No effect on a design that already left PENDING. With `node`, no effect
   * either unless that node holds the design's job claim (here and in the two below). */
  finishVoiceDesign(
    designId: string,
    outcome: { previewSha256: string; previewBytes: number } | { error: string },
    now: Date,
    node?: string,
  ): Promise<VoiceDesignRecord | null>;
  /** True when stored (false: the node does not hold the claim). */
  recordCallbackAttempt(designId: string, callback: VoiceDesignRecord['callback'], now: Date, node?: string): Promise<boolean>;
  /** Undo of a preview whose file could not be published after finishVoiceDesign committed
   * it: COMPLETED with that preview -> FAILED with `error`, preview cleared (the callback
   * state is kept, so the failure is what gets delivered). No effect otherwise. */
  failVoiceDesignPreview(designId: string, previewSha256: string, error: string, now: Date, node?: string): Promise<VoiceDesignRecord | null>;
  /** Designs whose synthesis or callback delivery is still to do (start-up resume). */
  listUnfinishedVoiceDesigns(): Promise<VoiceDesignRecord[]>;
}

// ---------------------------------------------------------------- live sessions across nodes (areas/ownership.ts)

/** What a node holds while it serves a session: writes naming it change nothing once the
 * session's epoch or owner moved on. */
export interface SessionFence {
  sessionId: string;
  epoch: number;
  node: string;
}

export interface SessionOwnership {
  session: SessionRecord;
  /** The channel state stored with the last final (null before one). */
  channelState: number[] | null;
}

export type ClaimOutcome = ({ kind: 'claimed'; previousOwner: string | null } & SessionOwnership) | { kind: 'busy'; owner: string } | { kind: 'not_found' };

export interface SpoolChunk {
  startSample: bigint;
  /** Sample counts of the frames in this chunk, in order (replay feeds them as they came). */
  frames: number[];
  pcm: Buffer;
}

export type SpoolOp =
  | { type: 'append'; chunk: SpoolChunk }
  | { type: 'keepFrom'; fromSample: bigint; channelState: readonly number[] | null }
  | { type: 'clear'; channelState: readonly number[] | null };


export interface SessionOwnershipStore {
  /** Take the session for `node` at its current epoch (busy while another node's lease on the
   * same epoch runs); the cursor is raised to the end of the spooled audio. */
  claimSession(sessionId: string, accountId: string | null, node: string, leaseMs: number, now: Date): Promise<ClaimOutcome>;
  /** Extend this node's leases; answers the ids it still owns. */
  renewLeases(node: string, sessionIds: readonly string[], leaseMs: number, now: Date): Promise<string[]>;
  releaseSession(fence: SessionFence): Promise<void>;
  /** A new epoch at everything the server holds; CAPTURE_CURSOR_MISMATCH below it. With
   * `keepFor` (the serving node's fence, still valid) that node keeps the session. */
  resumeSession(
    sessionId: string,
    accountId: string,
    opts: { clientCaptured?: bigint; heldSamples?: bigint; keepFor?: SessionFence; leaseMs: number; now: Date },
  ): Promise<SessionRecord | null>;
  sessionOwner(sessionId: string): Promise<{ node: string | null; ownerEpoch: number | null; epoch: number; state: string } | null>;
  /** Open sessions whose owner's lease ran out with spooled audio still held. */
  listOrphanedSessions(now: Date, limit: number): Promise<Array<{ id: string; accountId: string }>>;
  /** Spool operations in order, in one transaction; SESSION_MOVED when fenced. */
  writeSpool(fence: SessionFence, ops: readonly SpoolOp[], now: Date, leaseMs: number): Promise<void>;
  readSpool(sessionId: string): Promise<SpoolChunk[]>;
  deleteSpool(sessionId: string): Promise<void>;
  saveFencedProgress(fence: SessionFence, progress: SessionProgress): Promise<boolean>;
  appendFencedSegment(fence: SessionFence, segment: SegmentRecord): Promise<boolean>;
  setFencedSessionState(fence: SessionFence, state: SessionState, status: TranscriptionStatus): Promise<boolean>;
  clearOtherOwners(node: string): Promise<void>;
}

// ---------------------------------------------------------------- background work on any node (areas/job-claims.ts)

export type JobTable = 'batch_jobs' | 'music_projects' | 'voice_designs';

export interface JobClaim {
  table: JobTable;
  key: string;
  node: string;
}

export interface JobClaimStore {
  /** Claim the oldest row matching `pending` (a condition written in code) that no live node
   * holds; its key, or null. */
  claimNextJob(table: JobTable, pending: string, node: string, leaseMs: number, now: Date): Promise<string | null>;
  /** Claim one named row unless a live node holds it. */
  claimJob(claim: JobClaim, leaseMs: number, now: Date): Promise<boolean>;
  /** Extend this node's leases; answers the keys it still holds. */
  renewJobs(table: JobTable, node: string, keys: readonly string[], leaseMs: number, now: Date): Promise<string[]>;
  releaseJob(claim: JobClaim): Promise<void>;
}

// ---------------------------------------------------------------- batch jobs on any node (areas/batch.ts, areas/batch-audio.ts)

/** Batch work on many nodes (docs/scaling.md, "Background work"): job writes fenced by the
 * job's claim (areas/job-claims.ts), and the decoded audio of pending jobs kept in the store
 * so any node can read it (PostgreSQL mode; src/batch/audio-store.ts). */
export interface BatchWorkStore {
  /** QUEUED/RUNNING -> RUNNING or DONE (History COMPLETED) while `node` holds the job's claim;
   * false, changing nothing, otherwise. */
  setClaimedBatchJobState(transcriptionId: string, node: string, state: 'RUNNING' | 'DONE'): Promise<boolean>;
  /** failBatchJob (FAILED and the refund) while `node` holds the job's claim; false, changing
   * nothing, otherwise. */
  failClaimedBatchJob(transcriptionId: string, node: string, reason: string): Promise<boolean>;
  /** appendBatchSegment while `node` holds the job's claim; false, storing nothing, otherwise. */
  appendClaimedBatchSegment(node: string, segment: SegmentRecord, channelState: number[] | null): Promise<boolean>;
  /** Drop the batch claims of every other node (the embedded store's start-up). */
  clearOtherBatchClaims(node: string): Promise<number>;
  /** One chunk of a job's decoded audio (areas/batch-audio.ts: fixed-size chunks, seq 0..n). */
  putBatchAudioChunk(audioFile: string, seq: number, pcm: Buffer, now: Date): Promise<void>;
  /** The chunks fromSeq..toSeq that exist, in order. */
  readBatchAudioChunks(audioFile: string, fromSeq: number, toSeq: number): Promise<Array<{ seq: number; pcm: Buffer }>>;
  batchAudioSize(audioFile: string): Promise<{ chunks: number; bytes: number }>;
  deleteBatchAudio(audioFile: string): Promise<void>;
  /** Every audio file held, with when its last chunk was written. */
  listBatchAudio(): Promise<Array<{ audioFile: string; writtenAt: string }>>;
}

// ---------------------------------------------------------------- files every node reads (areas/shared-files.ts)

/** Blobs (recordings, design previews) and server keys in the store, for nodes sharing
 * PostgreSQL; the embedded store keeps them as files (src/store/recordings.ts, server-key.ts). */
export interface SharedFileStore {
  /** Insert the blob unless stored; `bytes` is called only when it is missing. True when inserted. */
  putBlob(sha256: string, sizeBytes: number, bytes: () => Promise<Buffer>, now: Date): Promise<boolean>;
  getBlob(sha256: string): Promise<Buffer | null>;
  /** Delete those of `shas` no voice recording or design preview references (checked under
   * the blob's row lock, in the delete's transaction); returns the hashes deleted. */
  deleteUnreferencedBlobs(shas: readonly string[]): Promise<string[]>;
  /** The key named `name`; `candidate` becomes it when none is stored (first writer wins). */
  loadServerKey(name: string, candidate: Buffer, now: Date): Promise<Buffer>;
  /** Void the voice design claims of every other node (embedded store: one node). */
  clearOtherVoiceDesignClaims(node: string): Promise<void>;
}


// ---------------------------------------------------------------- calls (areas/calls.ts, docs/calls.md)

/** One leg of a call: a History row labelled with its speaker (a real-time session's, or a
 * batch job's with sessionId null). */
export interface CallLegRecord {
  speaker: string;
  transcriptionId: string;
  sessionId: string | null;
  kind: 'realtime' | 'batch';
  status: TranscriptionStatus;
  sampleRateHz: number;
  audioSamples: bigint;
  createdAt: string;
  updatedAt: string;
}

export interface CallRecord {
  id: string; // call_...
  accountId: string;
  /** The PBX's own id of the call (Twilio CallSid, AudioSocket UUID, FreeSWITCH uuid). */
  externalId: string | null;
  title: string;
  /** In the order they joined ((createdAt, transcriptionId) ascending). */
  legs: CallLegRecord[];
  createdAt: string;
  updatedAt: string;
}

export interface CreateCallInput {
  call: { id: string; accountId: string; externalId: string | null; title: string; createdAt: string };
  /** The create's Idempotency-Key (per account, its own namespace) and its request hash. */
  idempotency: { key: string; requestHash: string };
}

export type CreateCallOutcome = { kind: 'created'; call: CallRecord } | { kind: 'replayed'; call: CallRecord } | { kind: 'conflict' };

export interface CallStore {
  /** Idempotent create: the call stored under (accountId, key) when the key was used with the
   * same request hash, `conflict` with another. */
  createCall(input: CreateCallInput): Promise<CreateCallOutcome>;
  getCall(callId: string, accountId: string): Promise<CallRecord | null>;
  /** An account's calls, newest first ((createdAt, id) descending), only those with
   * `externalId` when given, strictly after `after` when given. */
  listCalls(accountId: string, limit: number, opts?: { externalId?: string; after?: HistoryPosition }): Promise<CallRecord[]>;
}
