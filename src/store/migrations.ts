// Schema migrations for the embedded SQLite store, applied in ascending `version` order,
// each inside its own IMMEDIATE transaction together with its row in `schema_migrations`
// (see SqliteStore.migrate). Migrations are append-only: never edit one that has shipped,
// add a new version instead.
//
// Conventions:
// - 64-bit counters (Characters, sample counts) are INTEGER and are read with
//   better-sqlite3's safeIntegers, so they arrive as bigint and never lose precision.
// - epochBases is a JSON array of decimal strings (bigints do not fit JSON numbers).
// - Timestamps are ISO-8601 text (UTC, `Date#toISOString`), so they sort as text.
// - transcriptions.session_id carries no foreign key: rt_sessions.transcription_id already
//   references transcriptions, and a cycle would force deferred constraints on every insert.

export interface Migration {
  version: number;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    sql: `
CREATE TABLE accounts (
  id          TEXT PRIMARY KEY,
  name        TEXT NOT NULL,
  characters  INTEGER NOT NULL CHECK (characters >= 0),
  created_at  TEXT NOT NULL
);

CREATE TABLE credentials (
  id          TEXT PRIMARY KEY,
  account_id  TEXT NOT NULL REFERENCES accounts(id),
  kind        TEXT NOT NULL CHECK (kind IN ('access_key', 'api_token')),
  secret_hash BLOB NOT NULL,
  created_at  TEXT NOT NULL
);
CREATE INDEX credentials_account ON credentials(account_id);

CREATE TABLE characters_ledger (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  account_id    TEXT NOT NULL REFERENCES accounts(id),
  delta         INTEGER NOT NULL CHECK (delta <> 0),
  balance_after INTEGER NOT NULL CHECK (balance_after >= 0),
  reason        TEXT NOT NULL,
  ref           TEXT,
  session_id    TEXT,
  created_at    TEXT NOT NULL
);
CREATE INDEX characters_ledger_account ON characters_ledger(account_id, id);

CREATE TABLE transcriptions (
  id             TEXT PRIMARY KEY,
  account_id     TEXT NOT NULL REFERENCES accounts(id),
  kind           TEXT NOT NULL CHECK (kind IN ('realtime', 'batch')),
  session_id     TEXT,
  title          TEXT NOT NULL,
  status         TEXT NOT NULL CHECK (status IN ('RECORDING', 'PAUSED', 'PROCESSING', 'COMPLETED', 'FAILED')),
  language_hint  TEXT,
  sample_rate_hz INTEGER NOT NULL CHECK (sample_rate_hz > 0),
  audio_samples  INTEGER NOT NULL DEFAULT 0 CHECK (audio_samples >= 0),
  created_at     TEXT NOT NULL,
  updated_at     TEXT NOT NULL,
  completed_at   TEXT
);
CREATE INDEX transcriptions_account_newest ON transcriptions(account_id, created_at DESC, id DESC);

CREATE TABLE rt_sessions (
  id                 TEXT PRIMARY KEY,
  account_id         TEXT NOT NULL REFERENCES accounts(id),
  transcription_id   TEXT NOT NULL UNIQUE REFERENCES transcriptions(id),
  title              TEXT NOT NULL,
  language_hint      TEXT,
  options_json       TEXT NOT NULL,
  state              TEXT NOT NULL CHECK (state IN ('RECORDING', 'PAUSED', 'CLOSED')),
  epoch              INTEGER NOT NULL CHECK (epoch >= 1),
  epoch_bases        TEXT NOT NULL,
  captured_samples   INTEGER NOT NULL CHECK (captured_samples >= 0),
  characters_charged INTEGER NOT NULL CHECK (characters_charged >= 0),
  next_segment_index INTEGER NOT NULL CHECK (next_segment_index >= 0),
  created_at         TEXT NOT NULL,
  updated_at         TEXT NOT NULL
);
CREATE INDEX rt_sessions_state ON rt_sessions(state);
CREATE INDEX rt_sessions_account ON rt_sessions(account_id);

CREATE TABLE idempotency_keys (
  account_id   TEXT NOT NULL REFERENCES accounts(id),
  key          TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  session_id   TEXT NOT NULL REFERENCES rt_sessions(id),
  created_at   TEXT NOT NULL,
  PRIMARY KEY (account_id, key)
) WITHOUT ROWID;

CREATE TABLE segments (
  transcription_id TEXT NOT NULL REFERENCES transcriptions(id),
  idx              INTEGER NOT NULL CHECK (idx >= 0),
  start_sample     INTEGER NOT NULL CHECK (start_sample >= 0),
  end_sample       INTEGER NOT NULL CHECK (end_sample >= start_sample),
  text             TEXT NOT NULL,
  words_json       TEXT NOT NULL,
  created_at       TEXT NOT NULL,
  PRIMARY KEY (transcription_id, idx)
) WITHOUT ROWID;

CREATE TABLE tickets (
  id          TEXT PRIMARY KEY,
  secret_hash BLOB NOT NULL,
  account_id  TEXT NOT NULL REFERENCES accounts(id),
  session_id  TEXT NOT NULL REFERENCES rt_sessions(id),
  expires_at  TEXT NOT NULL,
  used_at     TEXT
);
CREATE INDEX tickets_expires ON tickets(expires_at);
`,
  },
  {
    // Batch transcription (issue 5): the job queue beside History rows, and per-segment
    // annotations from the text options (rawText, entities) for both kinds.
    version: 2,
    sql: `
ALTER TABLE segments ADD COLUMN annotations_json TEXT;

CREATE TABLE batch_jobs (
  transcription_id   TEXT PRIMARY KEY REFERENCES transcriptions(id),
  account_id         TEXT NOT NULL REFERENCES accounts(id),
  options_json       TEXT NOT NULL,
  notices_json       TEXT NOT NULL,
  audio_file         TEXT NOT NULL,
  state              TEXT NOT NULL CHECK (state IN ('QUEUED', 'RUNNING', 'DONE', 'FAILED')),
  characters_charged INTEGER NOT NULL CHECK (characters_charged >= 0),
  error              TEXT,
  created_at         TEXT NOT NULL,
  updated_at         TEXT NOT NULL
);
CREATE INDEX batch_jobs_state ON batch_jobs(state, created_at);
`,
  },
];

/** Highest schema version this code knows; a database above it is refused. */
export const LATEST_SCHEMA_VERSION: number = MIGRATIONS.reduce((max, m) => Math.max(max, m.version), 0);
