// SQLite version 17: live rules (docs/rules.md). Append-only once shipped (src/store/migrations.ts).
import type { SqliteMigration } from '../sql/sqlite-db.js';

export const SQLITE_V17_RULES: readonly SqliteMigration[] = [
  {
    // An account's live rules. The condition is one JSON object (its kind and parameters: the
    // rule is read whole by the evaluator and never searched by its parameters).
    version: 17,
    sql: `
CREATE TABLE stt_rules (
  id             TEXT PRIMARY KEY,
  account_id     TEXT NOT NULL REFERENCES accounts(id),
  name           TEXT NOT NULL,
  condition_json TEXT NOT NULL,
  speaker        TEXT,
  partials       INTEGER NOT NULL CHECK (partials IN (0, 1)),
  enabled        INTEGER NOT NULL CHECK (enabled IN (0, 1)),
  created_at     TEXT NOT NULL,
  updated_at     TEXT NOT NULL
);
CREATE INDEX stt_rules_account ON stt_rules(account_id, created_at, id);
`,
  },
];
