// PostgreSQL version 14 = SQLite version 19 (mu-law chunks stored as sent): the shared spool's chunks say how their
// samples are stored (mu-law bytes for audio that came in as mu-law, else 16-bit PCM).
// toast_tuple_target: a chunk row stays in its page uncompressed up to about 8 KB (a window
// of a slow commit), so PostgreSQL never spends a compression attempt (pglz on audio gains
// nothing) or a TOAST row on it.
import type { PostgresMigration } from '../sql/postgres-db.js';

export const POSTGRES_V14_SPOOL_ENCODING: readonly PostgresMigration[] = [
  {
    version: 14,
    sql: `
ALTER TABLE spool_chunks ADD COLUMN encoding TEXT NOT NULL DEFAULT 'pcm_s16le' CHECK (encoding IN ('pcm_s16le', 'mulaw'));
ALTER TABLE spool_chunks SET (toast_tuple_target = 8160);
`,
  },
];
