// SQLite version 15: an account's default `redact` policies (docs/redaction.md, "Account
// default"); append-only once shipped (src/store/migrations.ts explains).
import type { SqliteMigration } from '../sql/sqlite-db.js';

export const SQLITE_V15_REDACTION_DEFAULT: readonly SqliteMigration[] = [
  {
    // The policies (a JSON array of names) every session and batch job of the account gets on
    // top of what its request asks for, set by the operator (scribed accounts set-redaction).
    version: 15,
    sql: `
CREATE TABLE account_redaction_defaults (
  account_id    TEXT PRIMARY KEY REFERENCES accounts(id),
  policies_json TEXT NOT NULL,
  updated_at    TEXT NOT NULL
);
`,
  },
];
