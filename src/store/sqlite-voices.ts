// SQLite tables of the voice library (issue 4): voices and their recording rows. The files
// themselves live in src/store/recordings.ts; rows carry the content hash.
import type { SqlAccess } from './sqlite-access.js';
import type { NewRecording, NewVoice, VoiceRecord } from './store.js';

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

const SELECT = `SELECT v.*, COUNT(r.idx) AS file_count, COALESCE(SUM(r.size_bytes), 0) AS total_size
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

function read(sql: SqlAccess, id: string, accountId: string): VoiceRecord | null {
  const r = sql.stmt(`${SELECT} WHERE v.id = ? AND v.account_id = ? GROUP BY v.id`).get(id, accountId) as Row | undefined;
  return r ? toVoice(r) : null;
}

function insertRecordings(sql: SqlAccess, voiceId: string, first: number, recs: NewRecording[], createdAt: string): void {
  const ins = sql.stmt('INSERT INTO voice_recordings (voice_id, idx, sha256, format, size_bytes, created_at) VALUES (?, ?, ?, ?, ?, ?)');
  recs.forEach((r, i) => ins.run(voiceId, first + i, r.sha256, r.format, r.sizeBytes, createdAt));
}

/** Hashes among `shas` that no voice recording or design preview references any more. */
function unreferenced(sql: SqlAccess, shas: string[]): string[] {
  return [...new Set(shas)].filter(
    (sha) =>
      !sql.stmt('SELECT 1 FROM voice_recordings WHERE sha256 = ? LIMIT 1').get(sha) &&
      !sql.stmt('SELECT 1 FROM voice_designs WHERE preview_sha256 = ? LIMIT 1').get(sha),
  );
}

export function createVoice(sql: SqlAccess, input: NewVoice): { kind: 'created' | 'exists'; voice: VoiceRecord } {
  return sql.write(() => {
    if (input.designId !== null) {
      const saved = sql.stmt('SELECT id FROM voices WHERE design_id = ? AND account_id = ?').get(input.designId, input.accountId) as { id: string } | undefined;
      if (saved) return { kind: 'exists' as const, voice: read(sql, saved.id, input.accountId)! };
    }
    sql
      .stmt('INSERT INTO voices (id, account_id, name, type, feature, channel, design_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
      .run(input.id, input.accountId, input.name, input.type, input.feature, input.channel, input.designId, input.createdAt);
    insertRecordings(sql, input.id, 0, input.recordings, input.createdAt);
    return { kind: 'created' as const, voice: read(sql, input.id, input.accountId)! };
  });
}

export function getVoice(sql: SqlAccess, id: string, accountId: string): VoiceRecord | null {
  return read(sql, id, accountId);
}

export function listVoices(sql: SqlAccess, accountId: string): VoiceRecord[] {
  return (sql.stmt(`${SELECT} WHERE v.account_id = ? GROUP BY v.id ORDER BY v.created_at, v.id`).all(accountId) as Row[]).map(toVoice);
}

export function addVoiceRecordings(
  sql: SqlAccess,
  voiceId: string,
  accountId: string,
  recs: NewRecording[],
  maxFiles: number,
  now: Date,
): { kind: 'ok'; voice: VoiceRecord; firstIndex: number } | { kind: 'not_found' } | { kind: 'limit'; current: number } {
  return sql.write(() => {
    const v = read(sql, voiceId, accountId);
    if (!v) return { kind: 'not_found' as const };
    if (v.fileCount + recs.length > maxFiles) return { kind: 'limit' as const, current: v.fileCount };
    const next = sql.stmt('SELECT COALESCE(MAX(idx) + 1, 0) AS n FROM voice_recordings WHERE voice_id = ?').get(voiceId) as { n: bigint };
    const first = Number(next.n);
    insertRecordings(sql, voiceId, first, recs, now.toISOString());
    return { kind: 'ok' as const, voice: read(sql, voiceId, accountId)!, firstIndex: first };
  });
}

export function dropVoiceRecordingsFrom(sql: SqlAccess, voiceId: string, firstIndex: number): string[] {
  return sql.write(() => {
    const shas = (sql.stmt('SELECT sha256 FROM voice_recordings WHERE voice_id = ? AND idx >= ?').all(voiceId, firstIndex) as { sha256: string }[]).map((r) => r.sha256);
    sql.stmt('DELETE FROM voice_recordings WHERE voice_id = ? AND idx >= ?').run(voiceId, firstIndex);
    return unreferenced(sql, shas);
  });
}

export function deleteVoice(sql: SqlAccess, voiceId: string, accountId: string): string[] | null {
  return sql.write(() => {
    const v = sql.stmt('SELECT id FROM voices WHERE id = ? AND account_id = ?').get(voiceId, accountId);
    if (!v) return null;
    const shas = (sql.stmt('SELECT sha256 FROM voice_recordings WHERE voice_id = ?').all(voiceId) as { sha256: string }[]).map((r) => r.sha256);
    sql.stmt('DELETE FROM voice_recordings WHERE voice_id = ?').run(voiceId);
    sql.stmt('DELETE FROM voices WHERE id = ?').run(voiceId);
    return unreferenced(sql, shas);
  });
}
