// Batch jobs: creation with the upload's debit, their states and segments (areas/batch.ts),
// and the same writes fenced by a job claim with the decoded audio kept in the store, for
// many nodes (areas/batch-audio.ts).
import type { SegmentRecord } from './history.js';

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
  { kind: 'created'; job: BatchJobRecord } | { kind: 'replayed'; job: BatchJobRecord } | { kind: 'conflict' } | { kind: 'insufficient' };

export interface BatchStore {
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
