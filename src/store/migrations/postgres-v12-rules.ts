// PostgreSQL version 12 (SQLite version 17): live rules (docs/rules.md). Append-only once shipped.
import type { PostgresMigration } from '../sql/postgres-db.js';

export const POSTGRES_V12_RULES: readonly PostgresMigration[] = [
  {
    version: 12,
    sql: `
CREATE TABLE stt_rules (
  id             TEXT PRIMARY KEY,
  account_id     TEXT NOT NULL REFERENCES accounts(id),
  name           TEXT NOT NULL,
  condition_json TEXT NOT NULL,
  speaker        TEXT,
  partials       BIGINT NOT NULL CHECK (partials IN (0, 1)),
  enabled        BIGINT NOT NULL CHECK (enabled IN (0, 1)),
  created_at     TEXT NOT NULL,
  updated_at     TEXT NOT NULL
);
CREATE INDEX stt_rules_account ON stt_rules(account_id, created_at, id);
`,
  },
];
