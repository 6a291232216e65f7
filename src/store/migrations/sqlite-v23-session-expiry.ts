// SQLite version 23: why a real-time session ended, on its History row (`session.closed`: a
// client's or a request's close; `session.expired`: the idle expiry, docs/protocol.md "Idle
// sessions expire"), and an index for the expiry's sweep over sessions by last change.
// Rows ended before this version, and batch rows, have none (NULL).
import type { SqliteMigration } from '../sql/sqlite-db.js';

export const SQLITE_V23_SESSION_EXPIRY: readonly SqliteMigration[] = [
  {
    version: 23,
    sql: `
ALTER TABLE transcriptions ADD COLUMN end_reason TEXT CHECK (end_reason IN ('session.closed', 'session.expired'));
CREATE INDEX rt_sessions_by_update ON rt_sessions(updated_at);
`,
  },
];
