// Redacted recordings (contract/session-recordings.ts, docs/recordings.md): the pieces a live
// session writes at each final, and the row naming a finished recording's content. The
// content is stored by src/store/recordings.ts (content-addressed) around these writes.
import type { RecordingPiece, SessionRecordingRecord } from '../store.js';
import type { Db, Tx } from '../sql/db.js';

/** Hashes among `shas` nothing references (recordings share the content-addressed store with
 * voice recordings and design previews). */
export async function unreferencedContent(tx: Tx, shas: readonly string[]): Promise<string[]> {
  const gone: string[] = [];
  for (const sha of new Set(shas)) {
    if (await tx.one('SELECT 1 FROM session_recordings WHERE sha256 = ? LIMIT 1', [sha])) continue;
    if (await tx.one('SELECT 1 FROM voice_recordings WHERE sha256 = ? LIMIT 1', [sha])) continue;
    if (await tx.one('SELECT 1 FROM voice_designs WHERE preview_sha256 = ? LIMIT 1', [sha])) continue;
    gone.push(sha);
  }
  return gone;
}

export async function putRecordingPiece(db: Db, p: RecordingPiece): Promise<void> {
  await db.run(
    `INSERT INTO recording_pieces (transcription_id, start_sample, end_sample, sample_rate, pcm_deflated, created_at) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (transcription_id, start_sample) DO UPDATE SET end_sample = excluded.end_sample, sample_rate = excluded.sample_rate, pcm_deflated = excluded.pcm_deflated, created_at = excluded.created_at`,
    [p.transcriptionId, p.startSample, p.endSample, BigInt(p.sampleRate), p.pcmDeflated, p.createdAt],
  );
}

export async function hasRecordingPieces(db: Db, transcriptionId: string): Promise<boolean> {
  return (await db.one('SELECT 1 FROM recording_pieces WHERE transcription_id = ? LIMIT 1', [transcriptionId])) !== undefined;
}

export async function listRecordingPieces(db: Db, transcriptionId: string): Promise<RecordingPiece[]> {
  const rows = await db.all<{ start_sample: bigint; end_sample: bigint; sample_rate: bigint; pcm_deflated: Buffer; created_at: string }>(
    'SELECT start_sample, end_sample, sample_rate, pcm_deflated, created_at FROM recording_pieces WHERE transcription_id = ? ORDER BY start_sample',
    [transcriptionId],
  );
  return rows.map((r) => ({
    transcriptionId,
    startSample: BigInt(r.start_sample),
    endSample: BigInt(r.end_sample),
    sampleRate: Number(r.sample_rate),
    pcmDeflated: Buffer.from(r.pcm_deflated),
    createdAt: r.created_at,
  }));
}

export async function saveSessionRecording(db: Db, r: SessionRecordingRecord): Promise<string[]> {
  return db.tx(async (tx) => {
    const before = await tx.lockOne<{ sha256: string }>('SELECT sha256 FROM session_recordings WHERE transcription_id = ?', [
      r.transcriptionId,
    ]);
    await tx.run('DELETE FROM session_recordings WHERE transcription_id = ?', [r.transcriptionId]);
    await tx.run(
      'INSERT INTO session_recordings (transcription_id, account_id, sha256, format, sample_rate, channels, samples, size_bytes, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
      [
        r.transcriptionId,
        r.accountId,
        r.sha256,
        r.format,
        BigInt(r.sampleRate),
        BigInt(r.channels),
        r.samples,
        BigInt(r.sizeBytes),
        r.createdAt,
      ],
    );
    await tx.run('DELETE FROM recording_pieces WHERE transcription_id = ?', [r.transcriptionId]);
    return before && before.sha256 !== r.sha256 ? unreferencedContent(tx, [before.sha256]) : [];
  });
}

interface RecordingRow {
  transcription_id: string;
  account_id: string;
  sha256: string;
  format: 'flac';
  sample_rate: bigint;
  channels: bigint;
  samples: bigint;
  size_bytes: bigint;
  created_at: string;
}

export async function getSessionRecording(db: Db, transcriptionId: string, accountId: string): Promise<SessionRecordingRecord | null> {
  const r = await db.one<RecordingRow>('SELECT * FROM session_recordings WHERE transcription_id = ? AND account_id = ?', [
    transcriptionId,
    accountId,
  ]);
  if (!r) return null;
  return {
    transcriptionId: r.transcription_id,
    accountId: r.account_id,
    sha256: r.sha256,
    format: r.format,
    sampleRate: Number(r.sample_rate),
    channels: Number(r.channels),
    samples: BigInt(r.samples),
    sizeBytes: Number(r.size_bytes),
    createdAt: r.created_at,
  };
}

/** Per account with a recordings retention, its recordings made before now minus that many
 * days (ISO timestamps compare as text). */
export async function listExpiredRecordings(
  db: Db,
  now: Date,
  limit: number,
): Promise<Array<{ transcriptionId: string; accountId: string }>> {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError('limit must be a positive integer');
  const policies = await db.all<{ account_id: string; recordings_days: bigint }>(
    'SELECT account_id, recordings_days FROM retention_policies WHERE recordings_days IS NOT NULL ORDER BY account_id',
  );
  const out: Array<{ transcriptionId: string; accountId: string }> = [];
  for (const p of policies) {
    if (out.length >= limit) break;
    const cutoff = new Date(now.getTime() - Number(p.recordings_days) * 86_400_000).toISOString();
    const rows = await db.all<{ transcription_id: string }>(
      'SELECT transcription_id FROM session_recordings WHERE account_id = ? AND created_at < ? ORDER BY created_at, transcription_id LIMIT ?',
      [p.account_id, cutoff, limit - out.length],
    );
    out.push(...rows.map((r) => ({ transcriptionId: r.transcription_id, accountId: p.account_id })));
  }
  return out;
}

/** Inside an erasure's transaction: the row's recording and pieces go; the hashes they held. */
export async function deleteRecordingRows(tx: Tx, transcriptionId: string): Promise<string[]> {
  const rows = await tx.all<{ sha256: string }>('SELECT sha256 FROM session_recordings WHERE transcription_id = ?', [transcriptionId]);
  await tx.run('DELETE FROM session_recordings WHERE transcription_id = ?', [transcriptionId]);
  await tx.run('DELETE FROM recording_pieces WHERE transcription_id = ?', [transcriptionId]);
  return rows.map((r) => r.sha256);
}

export async function eraseSessionRecording(db: Db, transcriptionId: string, accountId: string): Promise<string[]> {
  return db.tx(async (tx) => {
    const own = await tx.lockOne<{ id: string }>('SELECT id FROM transcriptions WHERE id = ? AND account_id = ?', [
      transcriptionId,
      accountId,
    ]);
    if (!own) return [];
    return unreferencedContent(tx, await deleteRecordingRows(tx, transcriptionId));
  });
}
