// Schema of the PostgreSQL store, applied under an advisory lock (sql/postgres-db.ts).
// Version 1 is the SQLite schema as of its version 6 (migrations.ts), in PostgreSQL's
// words; later versions are added to both lists. Append-only, as there. The schema both
// lists produce is compared by test/store/schema-parity.test.ts.
//
// Same conventions as SQLite, so the area modules run unchanged on both: every integer is
// BIGINT (read as bigint), timestamps are ISO-8601 TEXT (they sort as text), JSON is TEXT,
// hashes are BYTEA.
import type { PostgresMigration } from './sql/postgres-db.js';
import { POSTGRES_V10_REDACTION_DEFAULT } from './migrations/postgres-v10-redaction-default.js';
import { POSTGRES_V11_RECORDINGS } from './migrations/postgres-v11-recordings.js';
import { POSTGRES_V12_RULES } from './migrations/postgres-v12-rules.js';
import { POSTGRES_V13_DESK } from './migrations/postgres-v13-desk.js';
import { POSTGRES_V14_SPOOL_ENCODING } from './migrations/postgres-v14-spool-encoding.js';
import { POSTGRES_V15_TICKET_SCOPE } from './migrations/postgres-v15-ticket-scope.js';
import { POSTGRES_V16_ANALYTICS } from './migrations/postgres-v16-analytics.js';
import { POSTGRES_V18_SESSION_EXPIRY } from './migrations/postgres-v18-session-expiry.js';
import { POSTGRES_V19_DEBIT_IDS } from './migrations/postgres-v19-debit-ids.js';
import { POSTGRES_V20_SPOTTING_ALERTS } from './migrations/postgres-v20-spotting-alerts.js';

export const POSTGRES_MIGRATIONS: readonly PostgresMigration[] = [
  {
    version: 1,
    sql: `
CREATE TABLE accounts (
  id          TEXT PRIMARY KEY,
  name        TEXT NOT NULL,
  characters  BIGINT NOT NULL CHECK (characters >= 0),
  created_at  TEXT NOT NULL
);

CREATE TABLE credentials (
  id          TEXT PRIMARY KEY,
  account_id  TEXT NOT NULL REFERENCES accounts(id),
  kind        TEXT NOT NULL CHECK (kind IN ('access_key', 'api_token')),
  secret_hash BYTEA NOT NULL,
  created_at  TEXT NOT NULL
);
CREATE INDEX credentials_account ON credentials(account_id);

CREATE TABLE characters_ledger (
  id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account_id    TEXT NOT NULL REFERENCES accounts(id),
  delta         BIGINT NOT NULL CHECK (delta <> 0),
  balance_after BIGINT NOT NULL CHECK (balance_after >= 0),
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
  sample_rate_hz BIGINT NOT NULL CHECK (sample_rate_hz > 0),
  audio_samples  BIGINT NOT NULL DEFAULT 0 CHECK (audio_samples >= 0),
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
  epoch              BIGINT NOT NULL CHECK (epoch >= 1),
  epoch_bases        TEXT NOT NULL,
  captured_samples   BIGINT NOT NULL CHECK (captured_samples >= 0),
  characters_charged BIGINT NOT NULL CHECK (characters_charged >= 0),
  next_segment_index BIGINT NOT NULL CHECK (next_segment_index >= 0),
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
);

CREATE TABLE segments (
  transcription_id TEXT NOT NULL REFERENCES transcriptions(id),
  idx              BIGINT NOT NULL CHECK (idx >= 0),
  start_sample     BIGINT NOT NULL CHECK (start_sample >= 0),
  end_sample       BIGINT NOT NULL CHECK (end_sample >= start_sample),
  text             TEXT NOT NULL,
  words_json       TEXT NOT NULL,
  annotations_json TEXT,
  created_at       TEXT NOT NULL,
  PRIMARY KEY (transcription_id, idx)
);

CREATE TABLE tickets (
  id          TEXT PRIMARY KEY,
  secret_hash BYTEA NOT NULL,
  account_id  TEXT NOT NULL REFERENCES accounts(id),
  session_id  TEXT NOT NULL REFERENCES rt_sessions(id),
  expires_at  TEXT NOT NULL,
  used_at     TEXT
);
CREATE INDEX tickets_expires ON tickets(expires_at);

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
  reservation_cycle   BIGINT NOT NULL CHECK (reservation_cycle >= 1),
  reserved_characters BIGINT NOT NULL CHECK (reserved_characters >= 0),
  source_units        BIGINT NOT NULL CHECK (source_units >= 0),
  plan_cycle          BIGINT,
  plan_characters     BIGINT,
  plan_rate_version   TEXT,
  plan_expires_at     TEXT,
  created_at          TEXT NOT NULL,
  updated_at          TEXT NOT NULL,
  seq                 BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX interp_targets_project ON interp_targets(project_id);

CREATE TABLE interp_retry_keys (
  account_id   TEXT NOT NULL REFERENCES accounts(id),
  key          TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  result_json  TEXT NOT NULL,
  created_at   TEXT NOT NULL,
  PRIMARY KEY (account_id, key)
);

CREATE TABLE music_projects (
  id                  TEXT PRIMARY KEY,
  account_id          TEXT NOT NULL REFERENCES accounts(id),
  status              TEXT NOT NULL,
  brief_json          TEXT NOT NULL,
  arrangement_version BIGINT NOT NULL CHECK (arrangement_version >= 1),
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
  idx        BIGINT NOT NULL,
  sha256     TEXT NOT NULL,
  format     TEXT NOT NULL,
  size_bytes BIGINT NOT NULL CHECK (size_bytes > 0),
  created_at TEXT NOT NULL,
  PRIMARY KEY (voice_id, idx)
);
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
  preview_bytes    BIGINT,
  error            TEXT,
  callback_state   TEXT NOT NULL CHECK (callback_state IN ('NONE', 'PENDING', 'DELIVERED', 'FAILED')),
  callback_attempts BIGINT NOT NULL DEFAULT 0,
  callback_last_status BIGINT,
  callback_last_error TEXT,
  callback_next_at TEXT,
  created_at       TEXT NOT NULL,
  updated_at       TEXT NOT NULL
);
CREATE INDEX voice_designs_status ON voice_designs(status);

CREATE TABLE user_groups (
  team_id         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  account_id      TEXT NOT NULL REFERENCES accounts(id),
  provided_id     TEXT NOT NULL,
  name            TEXT,
  mapping_json    TEXT,
  properties_json TEXT,
  environment     TEXT CHECK (environment IS NULL OR environment IN ('Customer', 'Testing')),
  token_nonce     TEXT NOT NULL,
  token_hash      BYTEA NOT NULL,
  created_at      TEXT NOT NULL,
  updated_at      TEXT NOT NULL,
  UNIQUE (account_id, provided_id)
);

CREATE TABLE batch_jobs (
  transcription_id   TEXT PRIMARY KEY REFERENCES transcriptions(id),
  account_id         TEXT NOT NULL REFERENCES accounts(id),
  options_json       TEXT NOT NULL,
  notices_json       TEXT NOT NULL,
  audio_file         TEXT NOT NULL,
  state              TEXT NOT NULL CHECK (state IN ('QUEUED', 'RUNNING', 'DONE', 'FAILED')),
  characters_charged BIGINT NOT NULL CHECK (characters_charged >= 0),
  error              TEXT,
  created_at         TEXT NOT NULL,
  updated_at         TEXT NOT NULL,
  idempotency_key    TEXT,
  request_hash       TEXT,
  source_json        TEXT,
  channel_state_json TEXT
);
CREATE INDEX batch_jobs_state ON batch_jobs(state, created_at);
CREATE UNIQUE INDEX batch_jobs_idempotency ON batch_jobs(account_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
`,
  },
  {
    // SQLite version 7: session ownership, channel state and the shared spool.
    version: 2,
    sql: `
ALTER TABLE rt_sessions ADD COLUMN owner_node TEXT;
ALTER TABLE rt_sessions ADD COLUMN owner_epoch BIGINT;
ALTER TABLE rt_sessions ADD COLUMN lease_until TEXT;
ALTER TABLE rt_sessions ADD COLUMN channel_state_json TEXT;
CREATE INDEX rt_sessions_owner ON rt_sessions(owner_node) WHERE owner_node IS NOT NULL;

CREATE TABLE spool_chunks (
  session_id   TEXT NOT NULL REFERENCES rt_sessions(id),
  start_sample BIGINT NOT NULL CHECK (start_sample >= 0),
  end_sample   BIGINT NOT NULL CHECK (end_sample > start_sample),
  frames_json  TEXT NOT NULL,
  pcm          BYTEA NOT NULL,
  PRIMARY KEY (session_id, start_sample)
);
`,
  },
  {
    // SQLite version 8: job claims with leases; batch audio, blobs and server keys shared.
    version: 3,
    sql: `
ALTER TABLE batch_jobs ADD COLUMN claimed_by TEXT;
ALTER TABLE batch_jobs ADD COLUMN lease_until TEXT;
ALTER TABLE music_projects ADD COLUMN claimed_by TEXT;
ALTER TABLE music_projects ADD COLUMN lease_until TEXT;
ALTER TABLE voice_designs ADD COLUMN claimed_by TEXT;
ALTER TABLE voice_designs ADD COLUMN lease_until TEXT;

CREATE TABLE batch_audio (
  audio_file TEXT NOT NULL,
  seq        BIGINT NOT NULL CHECK (seq >= 0),
  pcm        BYTEA NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (audio_file, seq)
);

CREATE TABLE blobs (
  sha256     TEXT PRIMARY KEY,
  bytes      BYTEA NOT NULL,
  size_bytes BIGINT NOT NULL CHECK (size_bytes >= 0),
  created_at TEXT NOT NULL
);

CREATE TABLE server_keys (
  name       TEXT PRIMARY KEY,
  key        BYTEA NOT NULL,
  created_at TEXT NOT NULL
);
`,
  },
  {
    // SQLite version 9: calls and their legs (docs/calls.md).
    version: 4,
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
  {
    // SQLite version 10: webhook endpoints, the delivery outbox and its attempts.
    version: 5,
    sql: `
CREATE TABLE webhook_endpoints (
  id                 TEXT PRIMARY KEY,
  account_id         TEXT NOT NULL REFERENCES accounts(id),
  url                TEXT NOT NULL,
  description        TEXT,
  events_json        TEXT NOT NULL,
  include_transcript BIGINT NOT NULL CHECK (include_transcript IN (0, 1)),
  secret_generation  BIGINT NOT NULL CHECK (secret_generation >= 1),
  previous_until     TEXT,
  enabled            BIGINT NOT NULL CHECK (enabled IN (0, 1)),
  disabled_reason    TEXT,
  failing_since      TEXT,
  created_at         TEXT NOT NULL,
  updated_at         TEXT NOT NULL
);
CREATE INDEX webhook_endpoints_account ON webhook_endpoints(account_id, created_at, id);

CREATE TABLE webhook_deliveries (
  id               TEXT PRIMARY KEY,
  endpoint_id      TEXT NOT NULL REFERENCES webhook_endpoints(id),
  account_id       TEXT NOT NULL,
  event_type       TEXT NOT NULL,
  payload_json     TEXT NOT NULL,
  status           TEXT NOT NULL CHECK (status IN ('PENDING', 'DELIVERED', 'FAILED')),
  attempts         BIGINT NOT NULL CHECK (attempts >= 0),
  schedule_base    BIGINT NOT NULL CHECK (schedule_base >= 0),
  next_attempt_at  TEXT,
  last_status_code BIGINT,
  last_error       TEXT,
  last_response    TEXT,
  claimed_by       TEXT,
  lease_until      TEXT,
  created_at       TEXT NOT NULL,
  updated_at       TEXT NOT NULL,
  delivered_at     TEXT
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(status, next_attempt_at, id);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries(endpoint_id, created_at, id);

CREATE TABLE webhook_attempts (
  delivery_id  TEXT NOT NULL REFERENCES webhook_deliveries(id),
  attempt      BIGINT NOT NULL CHECK (attempt >= 1),
  node         TEXT NOT NULL,
  started_at   TEXT NOT NULL,
  duration_ms  BIGINT NOT NULL CHECK (duration_ms >= 0),
  status_code  BIGINT,
  error        TEXT,
  PRIMARY KEY (delivery_id, attempt)
);
`,
  },
  {
    // SQLite version 11: access-key rotation and revocation.
    version: 6,
    sql: `
ALTER TABLE credentials ADD COLUMN expires_at TEXT;
ALTER TABLE credentials ADD COLUMN revoked_at TEXT;
`,
  },
  {
    // SQLite version 12: full-text search over final segments (docs/search.md). PostgreSQL's
    // own: the text's tsvector (the `simple` configuration: no stemming, as FTS5's unicode61
    // has none) in a generated column, so it follows the row on insert, update and delete in
    // the row's transaction, and is computed once a write rather than once a row a search
    // reads; a GIN index on it. segments_newest serves the hits' order: a word in many
    // segments is found walking it newest first and stopping at a page, rather than sorting
    // every match. Adding the column computes it for the existing segments.
    version: 7,
    sql: `
ALTER TABLE segments ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED;
CREATE INDEX segments_search ON segments USING GIN (search_vector);
CREATE INDEX segments_newest ON segments (created_at, transcription_id, idx);
`,
  },
  {
    // SQLite version 13: retention policies and the audit trail (docs/redaction.md).
    version: 8,
    sql: `
CREATE TABLE retention_policies (
  account_id       TEXT PRIMARY KEY REFERENCES accounts(id),
  transcripts_days BIGINT CHECK (transcripts_days > 0),
  recordings_days  BIGINT CHECK (recordings_days > 0),
  updated_at       TEXT NOT NULL
);

CREATE TABLE audit_events (
  id            TEXT PRIMARY KEY,
  account_id    TEXT NOT NULL REFERENCES accounts(id),
  credential_id TEXT,
  action        TEXT NOT NULL,
  subject_id    TEXT NOT NULL,
  created_at    TEXT NOT NULL
);
CREATE INDEX audit_events_account_newest ON audit_events(account_id, created_at, id);
`,
  },
  {
    // SQLite version 14: Deepgram callbacks through the webhook outbox.
    version: 9,
    sql: `
ALTER TABLE webhook_endpoints ADD COLUMN kind TEXT NOT NULL DEFAULT 'endpoint' CHECK (kind IN ('endpoint', 'callback'));
ALTER TABLE webhook_deliveries ADD COLUMN callback_url TEXT;
`,
  },
  ...POSTGRES_V10_REDACTION_DEFAULT,
  ...POSTGRES_V11_RECORDINGS,
  ...POSTGRES_V12_RULES,
  ...POSTGRES_V13_DESK,
  ...POSTGRES_V14_SPOOL_ENCODING,
  ...POSTGRES_V15_TICKET_SCOPE,
  ...POSTGRES_V16_ANALYTICS,
  ...POSTGRES_V18_SESSION_EXPIRY,
  ...POSTGRES_V19_DEBIT_IDS,
  ...POSTGRES_V20_SPOTTING_ALERTS,
];
