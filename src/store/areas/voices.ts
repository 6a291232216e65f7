// The voice library (docs/api.md): voices and their recording rows, on either engine (sql/db.ts).
// The files themselves live in src/store/recordings.ts; rows carry the content hash.
//
// Locks (PostgreSQL runs READ COMMITTED): creating a voice locks the account, so a design
// saved twice at once yields one voice. Everything that changes an existing voice's
// recordings (append, undo of an append, delete) locks that voice's row first, so the file
// limit and the hashes found unreferenced hold until commit; the voice row rather than the
// account, because a missing or foreign voice (even of an unknown account) answers
// not_found/null as before, and the undo has no account to lock.
import type { NewRecording, NewVoice, VoiceRecord } from '../store.js';
import type { Db, Tx } from '../sql/db.js';
import { lockAccount } from './ledger.js';

interface Row {
  id: string;
  account_id: string;
  name: string;
  type: string;
  feature: string;
  channel: string;
  design_id: string | null;
  created_at: string;
  file_count: bigint;
  total_size: bigint;
}

// SUM of a BIGINT is numeric on PostgreSQL (a string in node-postgres): cast back to BIGINT.
// GROUP BY v.id covers v.* there because id is the primary key.
const SELECT = `SELECT v.*, COUNT(r.idx) AS file_count, CAST(COALESCE(SUM(r.size_bytes), 0) AS BIGINT) AS total_size
                  FROM voices v LEFT JOIN voice_recordings r ON r.voice_id = v.id`;

function toVoice(r: Row): VoiceRecord {
  return {
    id: r.id,
    accountId: r.account_id,
    name: r.name,
    type: r.type,
    feature: r.feature,
    channel: r.channel,
    designId: r.design_id,
    fileCount: Number(r.file_count),
    totalFileSize: Number(r.total_size),
    createdAt: r.created_at,
  };
}

async function read(tx: Tx, id: string, accountId: string): Promise<VoiceRecord | null> {
  const r = await tx.one<Row>(`${SELECT} WHERE v.id = ? AND v.account_id = ? GROUP BY v.id`, [id, accountId]);
  return r ? toVoice(r) : null;
}

/** Lock an owned voice's row until the transaction ends; false when missing or foreign. */
async function lockVoice(tx: Tx, id: string, accountId: string): Promise<boolean> {
  return (await tx.lockOne('SELECT id FROM voices WHERE id = ? AND account_id = ?', [id, accountId])) !== undefined;
}

async function insertRecordings(tx: Tx, voiceId: string, first: number, recs: NewRecording[], createdAt: string): Promise<void> {
  for (const [i, r] of recs.entries()) {
    await tx.run('INSERT INTO voice_recordings (voice_id, idx, sha256, format, size_bytes, created_at) VALUES (?, ?, ?, ?, ?, ?)', [
      voiceId,
      first + i,
      r.sha256,
      r.format,
      r.sizeBytes,
      createdAt,
    ]);
  }
}

/** Hashes among `shas` that no voice recording or design preview references any more. */
async function unreferenced(tx: Tx, shas: string[]): Promise<string[]> {
  const gone: string[] = [];
  for (const sha of new Set(shas)) {
    if (await tx.one('SELECT 1 FROM voice_recordings WHERE sha256 = ? LIMIT 1', [sha])) continue;
    if (await tx.one('SELECT 1 FROM voice_designs WHERE preview_sha256 = ? LIMIT 1', [sha])) continue;
    if (await tx.one('SELECT 1 FROM session_recordings WHERE sha256 = ? LIMIT 1', [sha])) continue;
    gone.push(sha);
  }
  return gone;
}

export async function createVoice(db: Db, input: NewVoice): Promise<{ kind: 'created' | 'exists'; voice: VoiceRecord }> {
  return db.tx(async (tx) => {
    // The account first: two saves of one design queue here, and the second finds the first's
    // voice instead of failing on design_id's unique constraint. NOT_FOUND for an unknown
    // account (the insert below failed on its foreign key before).
    await lockAccount(tx, input.accountId);
    if (input.designId !== null) {
      // Locked too, so a concurrent delete of that voice cannot remove it before it is read.
      const saved = await tx.lockOne<{ id: string }>('SELECT id FROM voices WHERE design_id = ? AND account_id = ?', [
        input.designId,
        input.accountId,
      ]);
      if (saved) return { kind: 'exists' as const, voice: (await read(tx, saved.id, input.accountId))! };
    }
    await tx.run(
      'INSERT INTO voices (id, account_id, name, type, feature, channel, design_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      [input.id, input.accountId, input.name, input.type, input.feature, input.channel, input.designId, input.createdAt],
    );
    await insertRecordings(tx, input.id, 0, input.recordings, input.createdAt);
    return { kind: 'created' as const, voice: (await read(tx, input.id, input.accountId))! };
  });
}

export async function getVoice(db: Db, id: string, accountId: string): Promise<VoiceRecord | null> {
  return read(db, id, accountId);
}

export async function listVoices(db: Db, accountId: string): Promise<VoiceRecord[]> {
  return (await db.all<Row>(`${SELECT} WHERE v.account_id = ? GROUP BY v.id ORDER BY v.created_at, v.id`, [accountId])).map(toVoice);
}

export async function addVoiceRecordings(
  db: Db,
  voiceId: string,
  accountId: string,
  recs: NewRecording[],
  maxFiles: number,
  now: Date,
): Promise<{ kind: 'ok'; voice: VoiceRecord; firstIndex: number } | { kind: 'not_found' } | { kind: 'limit'; current: number }> {
  return db.tx(async (tx) => {
    // The voice row first: concurrent uploads to one voice queue here, so the count below
    // stays true until these rows are in and no two of them take the same indexes.
    if (!(await lockVoice(tx, voiceId, accountId))) return { kind: 'not_found' as const };
    const v = (await read(tx, voiceId, accountId))!;
    if (v.fileCount + recs.length > maxFiles) return { kind: 'limit' as const, current: v.fileCount };
    const next = (await tx.one<{ n: bigint }>('SELECT COALESCE(MAX(idx) + 1, 0) AS n FROM voice_recordings WHERE voice_id = ?', [
      voiceId,
    ]))!;
    const first = Number(next.n);
    await insertRecordings(tx, voiceId, first, recs, now.toISOString());
    return { kind: 'ok' as const, voice: (await read(tx, voiceId, accountId))!, firstIndex: first };
  });
}

export async function dropVoiceRecordingsFrom(db: Db, voiceId: string, firstIndex: number): Promise<string[]> {
  return db.tx(async (tx) => {
    // Queue behind the voice's other writers (no account is known here). A voice deleted
    // meanwhile has no rows left (ON DELETE CASCADE): the statements below then find none.
    await tx.lockOne('SELECT id FROM voices WHERE id = ?', [voiceId]);
    const rows = await tx.all<{ sha256: string }>('SELECT sha256 FROM voice_recordings WHERE voice_id = ? AND idx >= ?', [
      voiceId,
      firstIndex,
    ]);
    await tx.run('DELETE FROM voice_recordings WHERE voice_id = ? AND idx >= ?', [voiceId, firstIndex]);
    return unreferenced(
      tx,
      rows.map((r) => r.sha256),
    );
  });
}

export async function deleteVoice(db: Db, voiceId: string, accountId: string): Promise<string[] | null> {
  return db.tx(async (tx) => {
    // Locked, so no upload adds rows to this voice between the read of its hashes and the
    // delete (their files would otherwise never be found unreferenced).
    if (!(await lockVoice(tx, voiceId, accountId))) return null;
    const rows = await tx.all<{ sha256: string }>('SELECT sha256 FROM voice_recordings WHERE voice_id = ?', [voiceId]);
    await tx.run('DELETE FROM voice_recordings WHERE voice_id = ?', [voiceId]);
    await tx.run('DELETE FROM voices WHERE id = ?', [voiceId]);
    return unreferenced(
      tx,
      rows.map((r) => r.sha256),
    );
  });
}
