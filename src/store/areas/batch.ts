// Batch jobs: the queue row beside each batch History row. The job is created with its
// debit and its History row in one transaction, and fails with its refund in one.
import { ScribedError } from '../../core/errors.js';
import type {
  BatchJobRecord,
  BatchJobState,
  CreateBatchCallInput,
  CreateBatchJobInput,
  CreateBatchJobOutcome,
  SegmentRecord,
} from '../store.js';
import { int64, nowIso, type Db, type Tx } from '../sql/db.js';
import { lockAccount, moveCharacters } from './ledger.js';
import { segmentInsert, updateTranscriptionStatus } from './history.js';

interface BatchJobRow {
  transcription_id: string;
  account_id: string;
  options_json: string;
  notices_json: string;
  audio_file: string;
  state: BatchJobState;
  characters_charged: bigint;
  error: string | null;
  idempotency_key: string | null;
  request_hash: string | null;
  source_json: string | null;
  channel_state_json: string | null;
  created_at: string;
  updated_at: string;
}

function toBatchJob(r: BatchJobRow): BatchJobRecord {
  return {
    transcriptionId: r.transcription_id,
    accountId: r.account_id,
    options: JSON.parse(r.options_json) as Record<string, unknown>,
    notices: JSON.parse(r.notices_json) as Array<{ code: string; message: string }>,
    audioFile: r.audio_file,
    state: r.state,
    charactersCharged: r.characters_charged,
    error: r.error,
    source: r.source_json === null ? null : (JSON.parse(r.source_json) as Record<string, unknown>),
    channelState: r.channel_state_json === null ? null : (JSON.parse(r.channel_state_json) as number[]),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

function jobByKey(db: Tx, accountId: string, key: string): Promise<BatchJobRow | undefined> {
  return db.one<BatchJobRow>('SELECT * FROM batch_jobs WHERE account_id = ? AND idempotency_key = ?', [accountId, key]);
}

/** Key check, debit, History row and QUEUED job in one transaction; the account row is
 * locked first, so parallel uploads with one Idempotency-Key (on any nodes) charge once. */
export async function createBatchJob(db: Db, input: CreateBatchJobInput): Promise<CreateBatchJobOutcome> {
  const j = input.job;
  const charge = int64(j.charactersCharged, 'charactersCharged');
  const idem = input.idempotency;
  return db.tx(async (tx): Promise<CreateBatchJobOutcome> => {
    const balance = await lockAccount(tx, j.accountId);
    if (idem) {
      const earlier = await jobByKey(tx, j.accountId, idem.key);
      if (earlier) return earlier.request_hash === idem.requestHash ? { kind: 'replayed', job: toBatchJob(earlier) } : { kind: 'conflict' };
    }
    if (balance < charge) return { kind: 'insufficient' };
    return { kind: 'created', job: await insertBatchLeg(tx, input, null) };
  });
}

/**
 * A multichannel upload (docs/calls.md): the call and one batch job per channel, each leg's
 * History row carrying callId and speaker, each leg debited for its own audio, in one
 * transaction (all or nothing: no call without its legs, no leg charged alone). The upload's
 * Idempotency-Key is held by the first leg's job, so a retry finds it as for one job; the call
 * itself is created under `call.idempotencyKey` in the calls' own namespace.
 */
export async function createBatchCall(db: Db, input: CreateBatchCallInput): Promise<CreateBatchJobOutcome> {
  const first = input.legs[0];
  if (!first) throw new RangeError('a batch call needs at least one leg');
  const c = input.call;
  const idem = input.idempotency;
  const total = input.legs.reduce((sum, l) => sum + int64(l.job.charactersCharged, 'charactersCharged'), 0n);
  return db.tx(async (tx): Promise<CreateBatchJobOutcome> => {
    const balance = await lockAccount(tx, c.accountId);
    if (idem) {
      const earlier = await jobByKey(tx, c.accountId, idem.key);
      if (earlier) return earlier.request_hash === idem.requestHash ? { kind: 'replayed', job: toBatchJob(earlier) } : { kind: 'conflict' };
    }
    if (balance < total) return { kind: 'insufficient' };
    await tx.run(
      `INSERT INTO calls (id, account_id, external_id, title, idempotency_key, request_hash, created_at, updated_at)
       VALUES (?, ?, NULL, ?, ?, ?, ?, ?)`,
      [c.id, c.accountId, c.title, c.idempotencyKey, c.requestHash, c.createdAt, c.createdAt],
    );
    let firstJob: BatchJobRecord | null = null;
    for (const [i, leg] of input.legs.entries()) {
      const job = await insertBatchLeg(
        tx,
        {
          job: leg.job,
          title: leg.title,
          languageHint: input.languageHint,
          sampleRateHz: input.sampleRateHz,
          audioSamples: leg.audioSamples,
          idempotency: i === 0 ? idem : null,
        },
        { callId: c.id, speaker: leg.speaker },
      );
      firstJob ??= job;
    }
    return { kind: 'created', job: firstJob! };
  });
}

/** History row, QUEUED job and debit of one batch job, inside the caller's transaction (which
 * holds the account's lock and has checked the key and the balance). */
async function insertBatchLeg(
  tx: Tx,
  input: CreateBatchJobInput,
  call: { callId: string; speaker: string } | null,
): Promise<BatchJobRecord> {
  const j = input.job;
  const charge = int64(j.charactersCharged, 'charactersCharged');
  const samples = int64(input.audioSamples, 'audioSamples');
  const idem = input.idempotency;
  await tx.run(
    `INSERT INTO transcriptions (id, account_id, kind, session_id, title, status, language_hint, sample_rate_hz,
                                 audio_samples, created_at, updated_at, completed_at, call_id, speaker)
     VALUES (?, ?, 'batch', NULL, ?, 'PROCESSING', ?, ?, ?, ?, ?, NULL, ?, ?)`,
    [
      j.transcriptionId,
      j.accountId,
      input.title,
      input.languageHint,
      input.sampleRateHz,
      samples,
      j.createdAt,
      j.createdAt,
      call?.callId ?? null,
      call?.speaker ?? null,
    ],
  );
  await tx.run(
    `INSERT INTO batch_jobs (transcription_id, account_id, options_json, notices_json, audio_file, state, characters_charged,
                             error, idempotency_key, request_hash, source_json, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, 'QUEUED', ?, NULL, ?, ?, ?, ?, ?)`,
    [
      j.transcriptionId,
      j.accountId,
      JSON.stringify(j.options),
      JSON.stringify(j.notices),
      j.audioFile,
      charge,
      idem?.key ?? null,
      idem?.requestHash ?? null,
      j.source === null ? null : JSON.stringify(j.source),
      j.createdAt,
      j.createdAt,
    ],
  );
  await moveCharacters(tx, { accountId: j.accountId, delta: -charge, reason: 'batch_audio', ref: j.transcriptionId });
  const row = await tx.one<BatchJobRow>('SELECT * FROM batch_jobs WHERE transcription_id = ?', [j.transcriptionId]);
  return toBatchJob(row!);
}

export async function findBatchJobByIdempotencyKey(
  db: Tx,
  accountId: string,
  key: string,
): Promise<{ job: BatchJobRecord; requestHash: string } | null> {
  const row = await jobByKey(db, accountId, key);
  return row ? { job: toBatchJob(row), requestHash: row.request_hash! } : null;
}

export async function getBatchJob(db: Tx, transcriptionId: string): Promise<BatchJobRecord | null> {
  const row = await db.one<BatchJobRow>('SELECT * FROM batch_jobs WHERE transcription_id = ?', [transcriptionId]);
  return row ? toBatchJob(row) : null;
}

export async function listBatchJobs(db: Tx, states: BatchJobState[]): Promise<BatchJobRecord[]> {
  if (states.length === 0) return [];
  const rows = await db.all<BatchJobRow>(
    `SELECT * FROM batch_jobs WHERE state IN (${states.map(() => '?').join(', ')}) ORDER BY created_at, transcription_id`,
    states,
  );
  return rows.map(toBatchJob);
}

export async function setBatchJobState(db: Db, transcriptionId: string, state: BatchJobState, error?: string): Promise<void> {
  await db.tx(async (tx) => {
    const now = nowIso();
    const changed = await tx.run('UPDATE batch_jobs SET state = ?, error = ?, updated_at = ? WHERE transcription_id = ?', [
      state,
      error ?? null,
      now,
      transcriptionId,
    ]);
    if (changed === 0) throw new ScribedError('NOT_FOUND', `batch job ${transcriptionId} does not exist`);
    if (state === 'DONE') await updateTranscriptionStatus(tx, transcriptionId, 'COMPLETED', undefined, now);
    if (state === 'FAILED') await updateTranscriptionStatus(tx, transcriptionId, 'FAILED', undefined, now);
  });
}

/** QUEUED/RUNNING -> FAILED with the refund, in one transaction. The conditional update is
 * the guard: of two nodes failing one job, one changes the row and refunds; the other
 * changes nothing. */
export async function failBatchJob(db: Db, transcriptionId: string, reason: string): Promise<boolean> {
  return db.tx(async (tx) => {
    const now = nowIso();
    const changed = await tx.run(
      "UPDATE batch_jobs SET state = 'FAILED', error = ?, updated_at = ? WHERE transcription_id = ? AND state IN ('QUEUED', 'RUNNING')",
      [reason, now, transcriptionId],
    );
    if (changed === 0) return false;
    await updateTranscriptionStatus(tx, transcriptionId, 'FAILED', undefined, now);
    const job = (await tx.one<{ account_id: string; characters_charged: bigint }>(
      'SELECT account_id, characters_charged FROM batch_jobs WHERE transcription_id = ?',
      [transcriptionId],
    ))!;
    await moveCharacters(tx, { accountId: job.account_id, delta: job.characters_charged, reason: 'batch_refund', ref: transcriptionId });
    return true;
  });
}

/** A batch segment and, in the same transaction, the job's channel state after it
 * (unchanged when null), so a resumed job continues from the state its last stored segment
 * left. */
export async function appendBatchSegment(db: Db, segment: SegmentRecord, channelState: number[] | null): Promise<void> {
  const insert = segmentInsert(segment);
  if (channelState !== null && !channelState.every(Number.isFinite)) throw new RangeError('channel state must be finite numbers');
  await db.tx(async (tx) => {
    await insert(tx);
    if (channelState === null) return;
    const changed = await tx.run('UPDATE batch_jobs SET channel_state_json = ?, updated_at = ? WHERE transcription_id = ?', [
      JSON.stringify(channelState),
      nowIso(),
      segment.transcriptionId,
    ]);
    if (changed === 0) throw new ScribedError('NOT_FOUND', `batch job ${segment.transcriptionId} does not exist`);
  });
}

// ---------------------------------------------------------------- fenced by the job's claim
//
// On many nodes (areas/job-claims.ts) the node working on a job holds its claim
// (batch_jobs.claimed_by). The writes below change nothing unless the row still names `node`,
// and lock the job row first, so they are ordered with a claim by another node: once another
// node has claimed the job (this node's lease ran out: it stalled, or lost the database for a
// while), this node can neither store a segment or a channel state, nor complete the job, nor
// fail and refund it. The new owner continues after the last segment stored before its claim.

/** The job row, locked, when `node` holds its claim. */
async function heldJob(tx: Tx, transcriptionId: string, node: string): Promise<{ state: BatchJobState } | null> {
  const row = await tx.lockOne<{ state: BatchJobState; claimed_by: string | null }>(
    'SELECT state, claimed_by FROM batch_jobs WHERE transcription_id = ?',
    [transcriptionId],
  );
  return row && row.claimed_by === node ? row : null;
}

/** QUEUED/RUNNING -> RUNNING or DONE (its History row COMPLETED) while `node` holds the job;
 * false, changing nothing, otherwise. */
export async function setClaimedBatchJobState(db: Db, transcriptionId: string, node: string, state: 'RUNNING' | 'DONE'): Promise<boolean> {
  return db.tx(async (tx) => {
    const job = await heldJob(tx, transcriptionId, node);
    if (!job || (job.state !== 'QUEUED' && job.state !== 'RUNNING')) return false;
    const now = nowIso();
    await tx.run('UPDATE batch_jobs SET state = ?, error = NULL, updated_at = ? WHERE transcription_id = ?', [state, now, transcriptionId]);
    if (state === 'DONE') await updateTranscriptionStatus(tx, transcriptionId, 'COMPLETED', undefined, now);
    return true;
  });
}

/** failBatchJob while `node` holds the job; false, changing nothing (no refund), otherwise. */
export async function failClaimedBatchJob(db: Db, transcriptionId: string, node: string, reason: string): Promise<boolean> {
  return db.tx(async (tx) => {
    const job = await heldJob(tx, transcriptionId, node);
    if (!job || (job.state !== 'QUEUED' && job.state !== 'RUNNING')) return false;
    const now = nowIso();
    await tx.run("UPDATE batch_jobs SET state = 'FAILED', error = ?, updated_at = ? WHERE transcription_id = ?", [
      reason,
      now,
      transcriptionId,
    ]);
    await updateTranscriptionStatus(tx, transcriptionId, 'FAILED', undefined, now);
    const charge = (await tx.one<{ account_id: string; characters_charged: bigint }>(
      'SELECT account_id, characters_charged FROM batch_jobs WHERE transcription_id = ?',
      [transcriptionId],
    ))!;
    await moveCharacters(tx, {
      accountId: charge.account_id,
      delta: charge.characters_charged,
      reason: 'batch_refund',
      ref: transcriptionId,
    });
    return true;
  });
}

/** appendBatchSegment while `node` holds the job (segments stay first-write-wins on their
 * index); false, storing nothing, otherwise. */
export async function appendClaimedBatchSegment(
  db: Db,
  node: string,
  segment: SegmentRecord,
  channelState: number[] | null,
): Promise<boolean> {
  const insert = segmentInsert(segment);
  if (channelState !== null && !channelState.every(Number.isFinite)) throw new RangeError('channel state must be finite numbers');
  return db.tx(async (tx) => {
    const job = await heldJob(tx, segment.transcriptionId, node);
    if (!job || (job.state !== 'QUEUED' && job.state !== 'RUNNING')) return false;
    await insert(tx);
    if (channelState !== null) {
      await tx.run('UPDATE batch_jobs SET channel_state_json = ?, updated_at = ? WHERE transcription_id = ?', [
        JSON.stringify(channelState),
        nowIso(),
        segment.transcriptionId,
      ]);
    }
    return true;
  });
}

/** Drop every batch claim not held by `node`: on the embedded store (one node, proved by the
 * data-dir lock) the claims of the process that ran before, so its jobs resume at once. */
export async function clearOtherBatchClaims(db: Db, node: string): Promise<number> {
  return db.run('UPDATE batch_jobs SET claimed_by = NULL, lease_until = NULL WHERE claimed_by IS NOT NULL AND claimed_by <> ?', [node]);
}
