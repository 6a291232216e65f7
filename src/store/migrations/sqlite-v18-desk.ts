// SQLite version 18: the desk's login links and browser sessions (docs/desk.md).
// Append-only once shipped (src/store/migrations.ts explains).
import type { SqliteMigration } from '../sql/sqlite-db.js';

export const SQLITE_V18_DESK: readonly SqliteMigration[] = [
  {
    // A login link is single-use and short-lived; it becomes a desk session, which reads one
    // account. Only the SHA-256 of each secret is stored (src/desk/tokens.ts). link_id names
    // the link a session came from (no foreign key: expired links are swept, sessions stay
    // until they expire).
    version: 18,
    sql: `
CREATE TABLE desk_login_links (
  id          TEXT PRIMARY KEY,
  account_id  TEXT NOT NULL REFERENCES accounts(id),
  secret_hash BLOB NOT NULL,
  created_at  TEXT NOT NULL,
  expires_at  TEXT NOT NULL,
  used_at     TEXT
);
CREATE INDEX desk_login_links_expires ON desk_login_links(expires_at);

CREATE TABLE desk_sessions (
  id           TEXT PRIMARY KEY,
  account_id   TEXT NOT NULL REFERENCES accounts(id),
  secret_hash  BLOB  NOT NULL,
  link_id      TEXT NOT NULL,
  created_at   TEXT NOT NULL,
  last_seen_at TEXT NOT NULL,
  expires_at   TEXT NOT NULL,
  ended_at     TEXT
);
CREATE INDEX desk_sessions_expires ON desk_sessions(expires_at);
`,
  },
];
