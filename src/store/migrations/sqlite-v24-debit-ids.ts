// SQLite version 24 = PostgreSQL version 19: a group debit's id on its ledger row, unique, so a
// debit sent again after its transaction's outcome was lost is not charged twice
// (areas/debits.ts). Rows written before this version, and debits without an id, have none.
import type { SqliteMigration } from '../sql/sqlite-db.js';

export const SQLITE_V24_DEBIT_IDS: readonly SqliteMigration[] = [
  {
    version: 24,
    sql: `
ALTER TABLE characters_ledger ADD COLUMN debit_id TEXT;
CREATE UNIQUE INDEX characters_ledger_debit ON characters_ledger(debit_id) WHERE debit_id IS NOT NULL;
`,
  },
];
