// Decoded batch audio in the store (PostgreSQL mode, src/batch/audio-store.ts): a pending
// job's raw s16le PCM as rows of batch_audio, (audio_file, seq) -> pcm, each row one fixed-size
// chunk (BATCH_AUDIO_CHUNK_BYTES) except the last, so a sample range maps to the few rows
// that hold it and any node reads the job's audio without holding all of it. Written by the
// upload route before the job row exists, deleted when the job ends; rows no pending job
// names are swept by the runner (BatchRunner.start).
import type { Db, Tx } from '../sql/db.js';

/** Bytes of PCM per row (the last row of a file holds the rest). Part of the stored format:
 * readers map sample positions to rows with it. */
export const BATCH_AUDIO_CHUNK_BYTES = 1024 * 1024;

/** Store chunk `seq` of `audioFile`. */
export async function putBatchAudioChunk(db: Db, audioFile: string, seq: number, pcm: Buffer, now: Date): Promise<void> {
  if (!Number.isSafeInteger(seq) || seq < 0) throw new RangeError('seq must be a non-negative integer');
  if (pcm.length === 0 || pcm.length > BATCH_AUDIO_CHUNK_BYTES)
    throw new RangeError(`a batch audio chunk holds 1..${BATCH_AUDIO_CHUNK_BYTES} bytes`);
  await db.run('INSERT INTO batch_audio (audio_file, seq, pcm, created_at) VALUES (?, ?, ?, ?)', [
    audioFile,
    BigInt(seq),
    pcm,
    now.toISOString(),
  ]);
}

/** Chunks fromSeq..toSeq (inclusive) of `audioFile` that exist, in order. */
export async function readBatchAudioChunks(
  db: Tx,
  audioFile: string,
  fromSeq: number,
  toSeq: number,
): Promise<Array<{ seq: number; pcm: Buffer }>> {
  const rows = await db.all<{ seq: bigint; pcm: Buffer }>(
    'SELECT seq, pcm FROM batch_audio WHERE audio_file = ? AND seq >= ? AND seq <= ? ORDER BY seq',
    [audioFile, BigInt(fromSeq), BigInt(toSeq)],
  );
  return rows.map((r) => ({ seq: Number(r.seq), pcm: r.pcm }));
}

/** How many chunks `audioFile` has and their bytes in all (0 and 0 when none). */
export async function batchAudioSize(db: Tx, audioFile: string): Promise<{ chunks: number; bytes: number }> {
  // length() of a BLOB/BYTEA is its size in bytes on both engines (PostgreSQL reads it from
  // the TOAST header without fetching the value).
  const row = await db.one<{ chunks: bigint | string | null; bytes: bigint | string | null }>(
    'SELECT COUNT(*) AS chunks, SUM(length(pcm)) AS bytes FROM batch_audio WHERE audio_file = ?',
    [audioFile],
  );
  return { chunks: Number(row?.chunks ?? 0), bytes: Number(row?.bytes ?? 0) };
}

export async function deleteBatchAudio(db: Db, audioFile: string): Promise<void> {
  await db.run('DELETE FROM batch_audio WHERE audio_file = ?', [audioFile]);
}

/** Every file held, with when its last chunk was written. */
export async function listBatchAudio(db: Tx): Promise<Array<{ audioFile: string; writtenAt: string }>> {
  const rows = await db.all<{ audio_file: string; written_at: string }>(
    'SELECT audio_file, MAX(created_at) AS written_at FROM batch_audio GROUP BY audio_file ORDER BY audio_file',
  );
  return rows.map((r) => ({ audioFile: r.audio_file, writtenAt: r.written_at }));
}
