// SQLite versions 10-14 (webhooks, access keys, search, retention, Deepgram callbacks);
// append-only once shipped (src/store/migrations.ts explains).
import type { SqliteMigration } from '../sql/sqlite-db.js';

export const SQLITE_V10_V14: readonly SqliteMigration[] = [
  {
    // Webhooks (docs/webhooks.md): an account's endpoints (their signing secrets are
    // derived from a server key and the secret's generation, never stored); the deliveries table is
    // the transactional outbox (a row is written in the transaction that changes the state it
    // reports, one per subscribed endpoint, and claimed with a lease by any node, as job rows
    // are); each attempt is logged. A delivery's id is its webhook-id on every attempt.
    version: 10,
    sql: `
CREATE TABLE webhook_endpoints (
  id                 TEXT PRIMARY KEY,
  account_id         TEXT NOT NULL REFERENCES accounts(id),
  url                TEXT NOT NULL,
  description        TEXT,
  events_json        TEXT NOT NULL,
  include_transcript INTEGER NOT NULL CHECK (include_transcript IN (0, 1)),
  secret_generation  INTEGER NOT NULL CHECK (secret_generation >= 1),
  previous_until     TEXT,
  enabled            INTEGER NOT NULL CHECK (enabled IN (0, 1)),
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
  attempts         INTEGER NOT NULL CHECK (attempts >= 0),
  schedule_base    INTEGER NOT NULL CHECK (schedule_base >= 0),
  next_attempt_at  TEXT,
  last_status_code INTEGER,
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
  attempt      INTEGER NOT NULL CHECK (attempt >= 1),
  node         TEXT NOT NULL,
  started_at   TEXT NOT NULL,
  duration_ms  INTEGER NOT NULL CHECK (duration_ms >= 0),
  status_code  INTEGER,
  error        TEXT,
  PRIMARY KEY (delivery_id, attempt)
) WITHOUT ROWID;
`,
  },
  {
    // Access-key rotation and revocation (docs/operations.md "Access keys"): a
    // rotated key stays valid until expires_at (its grace), a revoked one is refused from
    // revoked_at on. Both NULL, as every key created before this version has them, is a key in
    // force, so existing keys keep working.
    version: 11,
    sql: `
ALTER TABLE credentials ADD COLUMN expires_at TEXT;
ALTER TABLE credentials ADD COLUMN revoked_at TEXT;
`,
  },
  {
    // Full-text search over final segments (docs/search.md): SQLite's own FTS5.
    // segments is WITHOUT ROWID and FTS5 keys its rows by an integer, so segments_fts_rows
    // gives each segment one; triggers keep both in the segment's own statement (so its
    // transaction) on insert, on a text change (redaction) and on delete (erasure). The
    // tokenizer keeps diacritics, as PostgreSQL's `simple` configuration does. Existing
    // segments are indexed here.
    version: 12,
    sql: `
CREATE TABLE segments_fts_rows (
  id               INTEGER PRIMARY KEY,
  transcription_id TEXT NOT NULL,
  idx              INTEGER NOT NULL,
  UNIQUE (transcription_id, idx)
);
CREATE VIRTUAL TABLE segments_fts USING fts5(text, tokenize = 'unicode61 remove_diacritics 0');

CREATE TRIGGER segments_fts_insert AFTER INSERT ON segments BEGIN
  INSERT INTO segments_fts_rows (transcription_id, idx) VALUES (new.transcription_id, new.idx);
  INSERT INTO segments_fts (rowid, text) VALUES (last_insert_rowid(), new.text);
END;
CREATE TRIGGER segments_fts_update AFTER UPDATE OF text ON segments BEGIN
  UPDATE segments_fts SET text = new.text
   WHERE rowid = (SELECT id FROM segments_fts_rows WHERE transcription_id = old.transcription_id AND idx = old.idx);
END;
CREATE TRIGGER segments_fts_delete AFTER DELETE ON segments BEGIN
  DELETE FROM segments_fts
   WHERE rowid = (SELECT id FROM segments_fts_rows WHERE transcription_id = old.transcription_id AND idx = old.idx);
  DELETE FROM segments_fts_rows WHERE transcription_id = old.transcription_id AND idx = old.idx;
END;

INSERT INTO segments_fts_rows (transcription_id, idx) SELECT transcription_id, idx FROM segments ORDER BY created_at, transcription_id, idx;
INSERT INTO segments_fts (rowid, text)
  SELECT r.id, s.text FROM segments_fts_rows r JOIN segments s ON s.transcription_id = r.transcription_id AND s.idx = r.idx;
`,
  },
  {
    // Erasure, retention and the audit trail (docs/redaction.md): an account's
    // retention in days (null: kept until deleted), set by the operator (scribed accounts
    // retention); and who downloaded or deleted which transcript, by ids only (no content, no
    // foreign key to the subject: it outlives what it names).
    version: 13,
    sql: `
CREATE TABLE retention_policies (
  account_id       TEXT PRIMARY KEY REFERENCES accounts(id),
  transcripts_days INTEGER CHECK (transcripts_days > 0),
  recordings_days  INTEGER CHECK (recordings_days > 0),
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
    // Deepgram's pre-recorded `callback` (docs/compat.md, docs/webhooks.md "Deepgram
    // callbacks"): a one-off destination delivered through the webhook outbox. Each account
    // gets one hidden endpoint of kind 'callback' (never listed, subscribed to no event) that
    // its callback deliveries hang on, so the claim, lease and per-endpoint limit apply
    // unchanged; the delivery carries its own URL. Existing rows are endpoints without one.
    version: 14,
    sql: `
ALTER TABLE webhook_endpoints ADD COLUMN kind TEXT NOT NULL DEFAULT 'endpoint' CHECK (kind IN ('endpoint', 'callback'));
ALTER TABLE webhook_deliveries ADD COLUMN callback_url TEXT;
`,
  },
];
