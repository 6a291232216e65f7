// SQLite versions 1-9 (shipped: append-only, never edit; src/store/migrations.ts explains).
import type { SqliteMigration } from '../sql/sqlite-db.js';

export const SQLITE_V01_V09: readonly SqliteMigration[] = [
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
    // The rest of the API (docs/api.md): interpretation targets and retries, music projects, voice library, voice
    // designs, dashboard user groups. Characters amounts are INTEGER (bigint on read).
    version: 2,
    sql: `
CREATE TABLE interp_projects (
  id              TEXT PRIMARY KEY,
  account_id      TEXT NOT NULL REFERENCES accounts(id),
  title           TEXT NOT NULL,
  source_language TEXT NOT NULL,
  source_json     TEXT,
  created_at      TEXT NOT NULL
);
CREATE INDEX interp_projects_account ON interp_projects(account_id);

CREATE TABLE interp_targets (
  id                  TEXT PRIMARY KEY,
  project_id          TEXT NOT NULL REFERENCES interp_projects(id),
  account_id          TEXT NOT NULL REFERENCES accounts(id),
  language            TEXT NOT NULL,
  generation_id       TEXT NOT NULL,
  state               TEXT NOT NULL CHECK (state IN ('QUEUED', 'PROCESSING', 'COMPLETED', 'FAILED_RELEASED')),
  reservation_cycle   INTEGER NOT NULL CHECK (reservation_cycle >= 1),
  reserved_characters INTEGER NOT NULL CHECK (reserved_characters >= 0),
  source_units        INTEGER NOT NULL CHECK (source_units >= 0),
  plan_cycle          INTEGER,
  plan_characters     INTEGER,
  plan_rate_version   TEXT,
  plan_expires_at     TEXT,
  created_at          TEXT NOT NULL,
  updated_at          TEXT NOT NULL
);
CREATE INDEX interp_targets_project ON interp_targets(project_id);

CREATE TABLE interp_retry_keys (
  account_id   TEXT NOT NULL REFERENCES accounts(id),
  key          TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  result_json  TEXT NOT NULL,
  created_at   TEXT NOT NULL,
  PRIMARY KEY (account_id, key)
) WITHOUT ROWID;

CREATE TABLE music_projects (
  id                  TEXT PRIMARY KEY,
  account_id          TEXT NOT NULL REFERENCES accounts(id),
  status              TEXT NOT NULL,
  brief_json          TEXT NOT NULL,
  arrangement_version INTEGER NOT NULL CHECK (arrangement_version >= 1),
  arrangement_json    TEXT,
  active_quote_json   TEXT,
  generation_json     TEXT,
  created_at          TEXT NOT NULL,
  updated_at          TEXT NOT NULL
);
CREATE INDEX music_projects_account ON music_projects(account_id);
CREATE INDEX music_projects_status ON music_projects(status);

CREATE TABLE voices (
  id         TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  name       TEXT NOT NULL,
  type       TEXT NOT NULL,
  feature    TEXT NOT NULL,
  channel    TEXT NOT NULL,
  design_id  TEXT UNIQUE,
  created_at TEXT NOT NULL
);
CREATE INDEX voices_account ON voices(account_id);

CREATE TABLE voice_recordings (
  voice_id   TEXT NOT NULL REFERENCES voices(id) ON DELETE CASCADE,
  idx        INTEGER NOT NULL,
  sha256     TEXT NOT NULL,
  format     TEXT NOT NULL,
  size_bytes INTEGER NOT NULL CHECK (size_bytes > 0),
  created_at TEXT NOT NULL,
  PRIMARY KEY (voice_id, idx)
) WITHOUT ROWID;
CREATE INDEX voice_recordings_sha ON voice_recordings(sha256);

CREATE TABLE voice_designs (
  id               TEXT PRIMARY KEY,
  account_id       TEXT NOT NULL REFERENCES accounts(id),
  description      TEXT NOT NULL,
  preview_text     TEXT NOT NULL,
  callback_url     TEXT,
  status           TEXT NOT NULL CHECK (status IN ('PENDING', 'COMPLETED', 'FAILED')),
  params_json      TEXT NOT NULL,
  preview_sha256   TEXT,
  preview_bytes    INTEGER,
  error            TEXT,
  callback_state   TEXT NOT NULL CHECK (callback_state IN ('NONE', 'PENDING', 'DELIVERED', 'FAILED')),
  callback_attempts INTEGER NOT NULL DEFAULT 0,
  callback_last_status INTEGER,
  callback_last_error TEXT,
  callback_next_at TEXT,
  created_at       TEXT NOT NULL,
  updated_at       TEXT NOT NULL
);
CREATE INDEX voice_designs_status ON voice_designs(status);

CREATE TABLE user_groups (
  team_id         INTEGER PRIMARY KEY AUTOINCREMENT,
  account_id      TEXT NOT NULL REFERENCES accounts(id),
  provided_id     TEXT NOT NULL,
  name            TEXT,
  mapping_json    TEXT,
  properties_json TEXT,
  environment     TEXT CHECK (environment IS NULL OR environment IN ('Customer', 'Testing')),
  token_nonce     TEXT NOT NULL,
  token_hash      BLOB NOT NULL,
  created_at      TEXT NOT NULL,
  updated_at      TEXT NOT NULL,
  UNIQUE (account_id, provided_id)
);
`,
  },
  {
    // Batch transcription (docs/api.md): the job queue beside History rows, and per-segment
    // annotations from the text options (rawText, entities) for both kinds.
    version: 3,
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
  {
    // Batch uploads take an optional Idempotency-Key (a retried upload replays the first
    // job instead of charging again), and keep what ffprobe found so a replay answers
    // with the same body.
    version: 4,
    sql: `
ALTER TABLE batch_jobs ADD COLUMN idempotency_key TEXT;
ALTER TABLE batch_jobs ADD COLUMN request_hash TEXT;
ALTER TABLE batch_jobs ADD COLUMN source_json TEXT;
CREATE UNIQUE INDEX batch_jobs_idempotency ON batch_jobs(account_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
`,
  },
  {
    // A batch job carries the recognizer's channel adaptation (RecognitionStream.channelState,
    // a JSON array of numbers) from one segment to the next, saved with each segment, so a
    // job resumed after a restart continues with it instead of the initial state.
    version: 5,
    sql: `
ALTER TABLE batch_jobs ADD COLUMN channel_state_json TEXT;
`,
  },
  {
    // Targets were listed in rowid order, which PostgreSQL has no equivalent of: their place
    // in the request becomes a column (rowid order within a project is that place).
    version: 6,
    sql: `
ALTER TABLE interp_targets ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
UPDATE interp_targets SET seq = rowid;
`,
  },
  {
    // Live sessions across nodes (docs/scaling.md): the node serving a session, the epoch it
    // serves and its lease; the recognizer's channel state after the last final; and the
    // shared spool of acknowledged audio (used on PostgreSQL; the embedded store keeps its
    // spool in files, but the schema is the same on both engines).
    version: 7,
    sql: `
ALTER TABLE rt_sessions ADD COLUMN owner_node TEXT;
ALTER TABLE rt_sessions ADD COLUMN owner_epoch INTEGER;
ALTER TABLE rt_sessions ADD COLUMN lease_until TEXT;
ALTER TABLE rt_sessions ADD COLUMN channel_state_json TEXT;

CREATE TABLE spool_chunks (
  session_id   TEXT NOT NULL REFERENCES rt_sessions(id),
  start_sample INTEGER NOT NULL CHECK (start_sample >= 0),
  end_sample   INTEGER NOT NULL CHECK (end_sample > start_sample),
  frames_json  TEXT NOT NULL,
  pcm          BLOB NOT NULL,
  PRIMARY KEY (session_id, start_sample)
) WITHOUT ROWID;
`,
  },
  {
    // Background work on any node (docs/scaling.md): a job row names the node working on it
    // and a lease it renews, so a job whose node died is taken up by another. What other nodes
    // must read moves into the store on PostgreSQL: decoded batch audio (in chunks), content-
    // addressed blobs (voice recordings, design previews) and the server keys. The embedded
    // store keeps these as files in the data dir; the tables exist on both engines alike.
    version: 8,
    sql: `
ALTER TABLE batch_jobs ADD COLUMN claimed_by TEXT;
ALTER TABLE batch_jobs ADD COLUMN lease_until TEXT;
ALTER TABLE music_projects ADD COLUMN claimed_by TEXT;
ALTER TABLE music_projects ADD COLUMN lease_until TEXT;
ALTER TABLE voice_designs ADD COLUMN claimed_by TEXT;
ALTER TABLE voice_designs ADD COLUMN lease_until TEXT;

CREATE TABLE batch_audio (
  audio_file TEXT NOT NULL,
  seq        INTEGER NOT NULL CHECK (seq >= 0),
  pcm        BLOB NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (audio_file, seq)
) WITHOUT ROWID;

CREATE TABLE blobs (
  sha256     TEXT PRIMARY KEY,
  bytes      BLOB NOT NULL,
  size_bytes INTEGER NOT NULL CHECK (size_bytes >= 0),
  created_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE server_keys (
  name       TEXT PRIMARY KEY,
  key        BLOB NOT NULL,
  created_at TEXT NOT NULL
) WITHOUT ROWID;
`,
  },
  {
    // Calls (docs/calls.md): a call groups legs, one per party or channel; a leg is
    // a History row (and, for a real-time leg, its session) carrying the call id and the
    // speaker's label, unique within the call. The call's own Idempotency-Key lives on its
    // row. Both columns are set at creation and never change; rt_sessions repeats them so the
    // session view needs no join.
    version: 9,
    sql: `
CREATE TABLE calls (
  id              TEXT PRIMARY KEY,
  account_id      TEXT NOT NULL REFERENCES accounts(id),
  external_id     TEXT,
  title           TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  request_hash    TEXT NOT NULL,
  created_at      TEXT NOT NULL,
  updated_at      TEXT NOT NULL,
  UNIQUE (account_id, idempotency_key)
);
CREATE INDEX calls_account_newest ON calls(account_id, created_at, id);
CREATE INDEX calls_account_external ON calls(account_id, external_id, created_at, id) WHERE external_id IS NOT NULL;

ALTER TABLE transcriptions ADD COLUMN call_id TEXT REFERENCES calls(id);
ALTER TABLE transcriptions ADD COLUMN speaker TEXT;
CREATE UNIQUE INDEX transcriptions_call_speaker ON transcriptions(call_id, speaker) WHERE call_id IS NOT NULL;
ALTER TABLE rt_sessions ADD COLUMN call_id TEXT;
ALTER TABLE rt_sessions ADD COLUMN speaker TEXT;
`,
  },
];
