// SQLite version 16: redacted recordings (docs/recordings.md); append-only once
// shipped (src/store/migrations.ts explains).
import type { SqliteMigration } from '../sql/sqlite-db.js';

export const SQLITE_V16_RECORDINGS: readonly SqliteMigration[] = [
  {
    // A live session's recording is written a segment at a time, after the segment's final and
    // with its redacted spans masked: each piece is a row (deflated 16-bit PCM) until the session
    // closes, so a session resumed on another node keeps adding to the same recording. At close
    // (or at a batch job's end) the pieces become one FLAC file, stored content-addressed as other
    // recordings are (data dir here, the blobs table on PostgreSQL) and named by
    // session_recordings; the pieces are then deleted.
    version: 16,
    sql: `
CREATE TABLE recording_pieces (
  transcription_id TEXT NOT NULL REFERENCES transcriptions(id),
  start_sample     INTEGER NOT NULL CHECK (start_sample >= 0),
  end_sample       INTEGER NOT NULL CHECK (end_sample > start_sample),
  sample_rate      INTEGER NOT NULL CHECK (sample_rate > 0),
  pcm_deflated     BLOB NOT NULL,
  created_at       TEXT NOT NULL,
  PRIMARY KEY (transcription_id, start_sample)
);

CREATE TABLE session_recordings (
  transcription_id TEXT PRIMARY KEY REFERENCES transcriptions(id),
  account_id       TEXT NOT NULL REFERENCES accounts(id),
  sha256           TEXT NOT NULL,
  format           TEXT NOT NULL,
  sample_rate      INTEGER NOT NULL CHECK (sample_rate > 0),
  channels         INTEGER NOT NULL CHECK (channels > 0),
  samples          INTEGER NOT NULL CHECK (samples >= 0),
  size_bytes       INTEGER NOT NULL CHECK (size_bytes >= 0),
  created_at       TEXT NOT NULL
);
CREATE INDEX session_recordings_sha256 ON session_recordings(sha256);
CREATE INDEX session_recordings_account_created ON session_recordings(account_id, created_at);
`,
  },
];
