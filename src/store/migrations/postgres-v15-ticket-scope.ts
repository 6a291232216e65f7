// PostgreSQL version 15 = SQLite version 20: a ticket's scope (stream or watch) and the desk
// session that asked for it, if any.
import type { PostgresMigration } from '../sql/postgres-db.js';

export const POSTGRES_V15_TICKET_SCOPE: readonly PostgresMigration[] = [
  {
    version: 15,
    sql: `
ALTER TABLE tickets ADD COLUMN scope TEXT NOT NULL DEFAULT 'stream' CHECK (scope IN ('stream', 'watch'));
ALTER TABLE tickets ADD COLUMN desk_session_id TEXT;
`,
  },
];
