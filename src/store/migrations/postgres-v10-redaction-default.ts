// PostgreSQL version 10 (SQLite version 15): an account's default `redact` policies
// (docs/redaction.md, "Account default"); append-only once shipped.
import type { PostgresMigration } from '../sql/postgres-db.js';

export const POSTGRES_V10_REDACTION_DEFAULT: readonly PostgresMigration[] = [
  {
    version: 10,
    sql: `
CREATE TABLE account_redaction_defaults (
  account_id    TEXT PRIMARY KEY REFERENCES accounts(id),
  policies_json TEXT NOT NULL,
  updated_at    TEXT NOT NULL
);
`,
  },
];
