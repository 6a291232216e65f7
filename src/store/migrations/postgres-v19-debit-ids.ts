// PostgreSQL version 19 = SQLite version 24: a group debit's id on its ledger row, unique, so a
// debit sent again after its transaction's outcome was lost (a connection that died during
// COMMIT, a primary that failed over then) is recognised as done and not charged twice
// (areas/debits.ts). Rows written before this version, and debits without an id, have none.
import type { PostgresMigration } from '../sql/postgres-db.js';

export const POSTGRES_V19_DEBIT_IDS: readonly PostgresMigration[] = [
  {
    version: 19,
    sql: `
ALTER TABLE characters_ledger ADD COLUMN debit_id TEXT;
CREATE UNIQUE INDEX characters_ledger_debit ON characters_ledger(debit_id) WHERE debit_id IS NOT NULL;
`,
  },
];
