// PostgreSQL version 11: redacted recordings (SQLite version 16; that file says why).
import type { PostgresMigration } from '../sql/postgres-db.js';

export const POSTGRES_V11_RECORDINGS: readonly PostgresMigration[] = [
  {
    version: 11,
    sql: `
CREATE TABLE recording_pieces (
  transcription_id TEXT NOT NULL REFERENCES transcriptions(id),
  start_sample     BIGINT NOT NULL CHECK (start_sample >= 0),
  end_sample       BIGINT NOT NULL CHECK (end_sample > start_sample),
  sample_rate      BIGINT NOT NULL CHECK (sample_rate > 0),
  pcm_deflated     BYTEA NOT NULL,
  created_at       TEXT NOT NULL,
  PRIMARY KEY (transcription_id, start_sample)
);

CREATE TABLE session_recordings (
  transcription_id TEXT PRIMARY KEY REFERENCES transcriptions(id),
  account_id       TEXT NOT NULL REFERENCES accounts(id),
  sha256           TEXT NOT NULL,
  format           TEXT NOT NULL,
  sample_rate      BIGINT NOT NULL CHECK (sample_rate > 0),
  channels         BIGINT NOT NULL CHECK (channels > 0),
  samples          BIGINT NOT NULL CHECK (samples >= 0),
  size_bytes       BIGINT NOT NULL CHECK (size_bytes >= 0),
  created_at       TEXT NOT NULL
);
CREATE INDEX session_recordings_sha256 ON session_recordings(sha256);
CREATE INDEX session_recordings_account_created ON session_recordings(account_id, created_at);
`,
  },
];
