// SQLite version 20: a ticket says which socket it opens (stream or watch), and a ticket a
// desk session asked for names that session, so it dies with it (docs/desk.md, "Sessions";
// docs/security.md). Existing tickets are stream tickets, as they were.
import type { SqliteMigration } from '../sql/sqlite-db.js';

export const SQLITE_V20_TICKET_SCOPE: readonly SqliteMigration[] = [
  {
    version: 20,
    sql: `
ALTER TABLE tickets ADD COLUMN scope TEXT NOT NULL DEFAULT 'stream' CHECK (scope IN ('stream', 'watch'));
ALTER TABLE tickets ADD COLUMN desk_session_id TEXT;
`,
  },
];
