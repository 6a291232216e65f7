// PostgreSQL version 18 = SQLite version 23: why a real-time session ended, on its History
// row, and an index for the idle expiry's sweep over sessions by last change.
import type { PostgresMigration } from '../sql/postgres-db.js';

export const POSTGRES_V18_SESSION_EXPIRY: readonly PostgresMigration[] = [
  {
    version: 18,
    sql: `
ALTER TABLE transcriptions ADD COLUMN end_reason TEXT CHECK (end_reason IN ('session.closed', 'session.expired'));
CREATE INDEX rt_sessions_by_update ON rt_sessions(updated_at);
`,
  },
];
