// History rows (real-time and batch transcriptions) and their final segments.
import { ScribedError } from '../../core/errors.js';
import type { HistoryPosition, SegmentRecord, SegmentWord, SessionEndReason, TranscriptionRecord, TranscriptionStatus } from '../store.js';
import { greatest, int64, nowIso, type Db, type Tx } from '../sql/db.js';
import { callCompletedEvent, callEnded, transcriptionEvent, transcriptionEventType } from '../../core/webhook-events.js';
import { enqueueWebhookEvent } from './webhooks.js';
import { analyseFinished } from './analytics.js';

export interface TranscriptionRow {
  id: string;
  account_id: string;
  kind: 'realtime' | 'batch';
  session_id: string | null;
  title: string;
  status: TranscriptionStatus;
  language_hint: string | null;
  sample_rate_hz: bigint;
  audio_samples: bigint;
  call_id: string | null;
  speaker: string | null;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
  end_reason: SessionEndReason | null;
}

interface SegmentRow {
  transcription_id: string;
  idx: bigint;
  start_sample: bigint;
  end_sample: bigint;
  text: string;
  words_json: string;
  annotations_json: string | null;
  created_at: string;
}

function toTranscription(r: TranscriptionRow): TranscriptionRecord {
  return {
    id: r.id,
    accountId: r.account_id,
    kind: r.kind,
    sessionId: r.session_id,
    title: r.title,
    status: r.status,
    languageHint: r.language_hint,
    sampleRateHz: Number(r.sample_rate_hz),
    audioSamples: r.audio_samples,
    callId: r.call_id,
    speaker: r.speaker,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    completedAt: r.completed_at,
    endReason: r.end_reason ?? null,
  };
}

function toSegment(r: SegmentRow): SegmentRecord {
  return {
    transcriptionId: r.transcription_id,
    index: Number(r.idx),
    startSample: r.start_sample,
    endSample: r.end_sample,
    text: r.text,
    words: JSON.parse(r.words_json) as SegmentWord[],
    ...(r.annotations_json === null ? {} : { annotations: JSON.parse(r.annotations_json) as Record<string, unknown> }),
    createdAt: r.created_at,
  };
}

export async function getTranscription(db: Tx, transcriptionId: string, accountId: string): Promise<TranscriptionRecord | null> {
  const row = await db.one<TranscriptionRow>('SELECT * FROM transcriptions WHERE id = ? AND account_id = ?', [transcriptionId, accountId]);
  return row ? toTranscription(row) : null;
}

/** completed_at is stamped the first time status becomes COMPLETED; audio_samples never
 * goes down. A change of status that raises a webhook event (core/webhook-events.ts) writes
 * it to the outbox in the same transaction: callers pass their tx. */
export async function updateTranscriptionStatus(
  tx: Tx,
  transcriptionId: string,
  status: TranscriptionStatus,
  audioSamples: bigint | undefined,
  now: string,
  endReason: SessionEndReason | null = null,
): Promise<void> {
  const samples = audioSamples === undefined ? null : int64(audioSamples, 'audioSamples');
  // Locked: two writers of one row's status take turns, so only one sees the change and raises its event.
  const before = await tx.lockOne<{ status: TranscriptionStatus }>('SELECT status FROM transcriptions WHERE id = ?', [transcriptionId]);
  if (!before) throw new ScribedError('NOT_FOUND', `transcription ${transcriptionId} does not exist`);
  const after = await tx.one<TranscriptionRow>(
    `UPDATE transcriptions
        SET status        = ?,
            audio_samples = ${greatest(tx, 'audio_samples', 'COALESCE(?, audio_samples)')},
            completed_at  = CASE WHEN CAST(? AS TEXT) = 'COMPLETED' THEN COALESCE(completed_at, ?) ELSE completed_at END,
            updated_at    = ?,
            end_reason    = COALESCE(end_reason, ?)
      WHERE id = ?
      RETURNING *`,
    [status, samples, status, now, now, endReason, transcriptionId],
  );
  if (!after) throw new ScribedError('NOT_FOUND', `transcription ${transcriptionId} does not exist`);
  await raiseStatusEvents(tx, before.status, toTranscription(after), now);
}

/** The outbox rows a status change raises: its own event, and call.completed when it ended
 * the last open leg of a call. */
async function raiseStatusEvents(tx: Tx, before: TranscriptionStatus, t: TranscriptionRecord, now: string): Promise<void> {
  const type = transcriptionEventType(before, t.status, t.kind);
  if (type === null) return;
  // A lone transcription's analytics (docs/analytics.md) ride on its completion event.
  const lone =
    type === 'transcription.completed' && t.callId === null
      ? await analyseFinished(
          tx,
          t.accountId,
          { callId: null, transcriptionId: t.id },
          [{ id: t.id, speaker: null, sample_rate_hz: BigInt(t.sampleRateHz), audio_samples: t.audioSamples }],
          now,
        )
      : undefined;
  await enqueueWebhookEvent(tx, t.accountId, transcriptionEvent(type, t, now, lone));
  // An idle session's expiry is an event of its own besides the completion (docs/webhooks.md).
  if (type === 'transcription.completed' && t.endReason === 'session.expired')
    await enqueueWebhookEvent(tx, t.accountId, transcriptionEvent('session.expired', t, now));
  if (t.callId === null || type === 'session.paused') return;
  const call = await tx.one<{ id: string; external_id: string | null; title: string }>(
    'SELECT id, external_id, title FROM calls WHERE id = ?',
    [t.callId],
  );
  if (!call) return;
  const legs = await tx.all<TranscriptionRow>('SELECT * FROM transcriptions WHERE call_id = ? ORDER BY created_at, id', [t.callId]);
  const facts = {
    id: call.id,
    externalId: call.external_id,
    title: call.title,
    legs: legs.map((l) => ({
      speaker: l.speaker ?? '',
      transcriptionId: l.id,
      sessionId: l.session_id,
      status: l.status,
      sampleRateHz: Number(l.sample_rate_hz),
      audioSamples: l.audio_samples,
    })),
  };
  if (!callEnded(facts.legs)) return;
  const analytics = await analyseFinished(tx, t.accountId, { callId: call.id, transcriptionId: null }, legs, now);
  await enqueueWebhookEvent(tx, t.accountId, callCompletedEvent(facts, now, analytics));
}

export async function setTranscriptionStatus(
  db: Db,
  transcriptionId: string,
  status: TranscriptionStatus,
  audioSamples?: bigint,
  endReason?: SessionEndReason,
): Promise<void> {
  await updateTranscriptionStatus(db, transcriptionId, status, audioSamples, nowIso(), endReason ?? null);
}

/** The checked insert of a final segment, inside the caller's transaction (or alone).
 * First write wins: the stored final is the one already sent to the client, so a re-sent
 * final with the same index is dropped rather than allowed to rewrite it. ON CONFLICT DO
 * NOTHING only swallows the key clash, not CHECK or NOT NULL violations. */
export function segmentInsert(segment: SegmentRecord): (tx: Tx) => Promise<void> {
  if (!Number.isSafeInteger(segment.index) || segment.index < 0) throw new RangeError(`segment index must be a non-negative integer`);
  const start = int64(segment.startSample, 'startSample');
  const end = int64(segment.endSample, 'endSample');
  return async (tx) => {
    await tx.run(
      `INSERT INTO segments (transcription_id, idx, start_sample, end_sample, text, words_json, annotations_json, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (transcription_id, idx) DO NOTHING`,
      [
        segment.transcriptionId,
        BigInt(segment.index),
        start,
        end,
        segment.text,
        JSON.stringify(segment.words),
        segment.annotations === undefined ? null : JSON.stringify(segment.annotations),
        segment.createdAt,
      ],
    );
  };
}

export async function appendSegment(db: Db, segment: SegmentRecord): Promise<void> {
  await segmentInsert(segment)(db);
}

export async function listSegments(db: Tx, transcriptionId: string): Promise<SegmentRecord[]> {
  // Named columns: PostgreSQL's segments also hold the search tsvector, which no reader wants.
  return (
    await db.all<SegmentRow>(
      'SELECT transcription_id, idx, start_sample, end_sample, text, words_json, annotations_json, created_at FROM segments WHERE transcription_id = ? ORDER BY idx',
      [transcriptionId],
    )
  ).map(toSegment);
}

/** An account's History rows, newest first. Keyset pagination on (created_at, id), served by
 * transcriptions_account_newest: rows inserted while a client pages never shift or repeat
 * the pages after its cursor. */
export async function listTranscriptions(
  db: Tx,
  accountId: string,
  limit: number,
  after?: HistoryPosition,
): Promise<TranscriptionRecord[]> {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError(`limit must be a positive integer`);
  const rows =
    after === undefined
      ? await db.all<TranscriptionRow>('SELECT * FROM transcriptions WHERE account_id = ? ORDER BY created_at DESC, id DESC LIMIT ?', [
          accountId,
          limit,
        ])
      : await db.all<TranscriptionRow>(
          `SELECT * FROM transcriptions
            WHERE account_id = ? AND (created_at < ? OR (created_at = ? AND id < ?))
            ORDER BY created_at DESC, id DESC LIMIT ?`,
          [accountId, after.createdAt, after.createdAt, after.id, limit],
        );
  return rows.map(toTranscription);
}
