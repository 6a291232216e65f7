// PostgreSQL version 13 (SQLite version 18): the desk's login links and browser sessions.
import type { PostgresMigration } from '../sql/postgres-db.js';

export const POSTGRES_V13_DESK: readonly PostgresMigration[] = [
  {
    version: 13,
    sql: `
CREATE TABLE desk_login_links (
  id          TEXT PRIMARY KEY,
  account_id  TEXT NOT NULL REFERENCES accounts(id),
  secret_hash BYTEA NOT NULL,
  created_at  TEXT NOT NULL,
  expires_at  TEXT NOT NULL,
  used_at     TEXT
);
CREATE INDEX desk_login_links_expires ON desk_login_links(expires_at);

CREATE TABLE desk_sessions (
  id           TEXT PRIMARY KEY,
  account_id   TEXT NOT NULL REFERENCES accounts(id),
  secret_hash  BYTEA NOT NULL,
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
