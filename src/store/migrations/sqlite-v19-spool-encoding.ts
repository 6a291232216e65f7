// SQLite version 19 (mu-law chunks stored as sent, half the bytes of PCM): the shared spool's chunks say how their samples are stored.
// Audio that came in as 8 kHz mu-law (telephony) is kept as its mu-law bytes, one a sample,
// half the bytes (and the PostgreSQL WAL) of 16-bit PCM; anything else stays PCM. Existing
// rows are PCM.
import type { SqliteMigration } from '../sql/sqlite-db.js';

export const SQLITE_V19_SPOOL_ENCODING: readonly SqliteMigration[] = [
  {
    version: 19,
    sql: `
ALTER TABLE spool_chunks ADD COLUMN encoding TEXT NOT NULL DEFAULT 'pcm_s16le' CHECK (encoding IN ('pcm_s16le', 'mulaw'));
`,
  },
];
