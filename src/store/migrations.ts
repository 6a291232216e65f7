// Schema migrations for the embedded SQLite store, applied in ascending `version` order,
// each inside its own IMMEDIATE transaction together with its row in `schema_migrations`
// (see sql/sqlite-db.ts). The PostgreSQL schema is migrations-postgres.ts: a change to the
// schema is a new version in both lists (test/store/schema-parity.test.ts holds the two to one
// schema; docs/architecture.md, "Store", says why there are two). Migrations are append-only:
// never edit one that has shipped, add a new version instead.
//
// Conventions:
// - 64-bit counters (Characters, sample counts) are INTEGER and are read with
//   better-sqlite3's safeIntegers, so they arrive as bigint and never lose precision.
// - epochBases is a JSON array of decimal strings (bigints do not fit JSON numbers).
// - Timestamps are ISO-8601 text (UTC, `Date#toISOString`), so they sort as text.
// - transcriptions.session_id carries no foreign key: rt_sessions.transcription_id already
//   references transcriptions, and a cycle would force deferred constraints on every insert.

//
// The list is kept in files of a few versions each under migrations/ (one file grew past what
// one room should hold); a new version goes at the end of the newest file, or a new file.

import type { SqliteMigration } from './sql/sqlite-db.js';
import { SQLITE_V01_V09 } from './migrations/sqlite-v01-v09.js';
import { SQLITE_V10_V14 } from './migrations/sqlite-v10-v14.js';
import { SQLITE_V15_REDACTION_DEFAULT } from './migrations/sqlite-v15-redaction-default.js';
import { SQLITE_V16_RECORDINGS } from './migrations/sqlite-v16-recordings.js';
import { SQLITE_V17_RULES } from './migrations/sqlite-v17-rules.js';
import { SQLITE_V18_DESK } from './migrations/sqlite-v18-desk.js';
import { SQLITE_V19_SPOOL_ENCODING } from './migrations/sqlite-v19-spool-encoding.js';
import { SQLITE_V20_TICKET_SCOPE } from './migrations/sqlite-v20-ticket-scope.js';
import { SQLITE_V21_ANALYTICS } from './migrations/sqlite-v21-analytics.js';
import { SQLITE_V23_SESSION_EXPIRY } from './migrations/sqlite-v23-session-expiry.js';
import { SQLITE_V24_DEBIT_IDS } from './migrations/sqlite-v24-debit-ids.js';
import { SQLITE_V25_SPOTTING_ALERTS } from './migrations/sqlite-v25-spotting-alerts.js';

export const MIGRATIONS: readonly SqliteMigration[] = [
  ...SQLITE_V01_V09,
  ...SQLITE_V10_V14,
  ...SQLITE_V15_REDACTION_DEFAULT,
  ...SQLITE_V16_RECORDINGS,
  ...SQLITE_V17_RULES,
  ...SQLITE_V18_DESK,
  ...SQLITE_V19_SPOOL_ENCODING,
  ...SQLITE_V20_TICKET_SCOPE,
  ...SQLITE_V21_ANALYTICS,
  ...SQLITE_V23_SESSION_EXPIRY,
  ...SQLITE_V24_DEBIT_IDS,
  ...SQLITE_V25_SPOTTING_ALERTS,
];

/** Highest schema version this code knows; a database above it is refused. */
export const LATEST_SCHEMA_VERSION: number = MIGRATIONS.reduce((max, m) => Math.max(max, m.version), 0);
