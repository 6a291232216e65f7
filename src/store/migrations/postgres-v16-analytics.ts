// PostgreSQL version 16 (SQLite version 21): conversation analytics (docs/analytics.md). Append-only once shipped
// (src/store/migrations.ts).
import type { PostgresMigration } from '../sql/postgres-db.js';

export const POSTGRES_V16_ANALYTICS: readonly PostgresMigration[] = [
  {
    // - analytics_categories: an account's post-call categories; the conditions are one JSON
    //   list, read whole by the evaluator and never searched by their parameters.
    // - leg_levels: a leg's per-second loudness, written by the session when it closes (or
    //   stops on a node), read when its call ends.
    // - conversation_analytics: one row per finished call (subject call_...) or lone
    //   transcription (subject stt_...), its full figures and matches as JSON and the figures a
    //   search filters by in columns of their own.
    // - category_matches: which categories a subject matched, for the search filter, the
    //   agent view's hit rates and the export.
    // - calls.agent_id: the agent on the call, from the create body or the gateway.
    version: 16,
    sql: `
CREATE TABLE analytics_categories (
  id              TEXT PRIMARY KEY,
  account_id      TEXT NOT NULL REFERENCES accounts(id),
  name            TEXT NOT NULL,
  conditions_json TEXT NOT NULL,
  enabled         BIGINT NOT NULL CHECK (enabled IN (0, 1)),
  created_at      TEXT NOT NULL,
  updated_at      TEXT NOT NULL
);
CREATE INDEX analytics_categories_account ON analytics_categories(account_id, created_at, id);
CREATE TABLE leg_levels (
  transcription_id TEXT PRIMARY KEY,
  frame_ms         BIGINT NOT NULL,
  levels_json      TEXT NOT NULL,
  updated_at       TEXT NOT NULL
);
CREATE TABLE conversation_analytics (
  subject_id         TEXT PRIMARY KEY,
  account_id         TEXT NOT NULL REFERENCES accounts(id),
  call_id            TEXT,
  transcription_id   TEXT,
  agent_id           TEXT,
  duration_ms        BIGINT NOT NULL,
  talk_ms            BIGINT NOT NULL,
  non_talk_ms        BIGINT NOT NULL,
  longest_silence_ms BIGINT NOT NULL,
  overtalk_ms        BIGINT NOT NULL,
  interruptions      BIGINT NOT NULL,
  figures_json       TEXT NOT NULL,
  categories_json    TEXT NOT NULL,
  completed_at       TEXT NOT NULL
);
CREATE INDEX conversation_analytics_account ON conversation_analytics(account_id, completed_at, subject_id);
CREATE TABLE category_matches (
  subject_id   TEXT NOT NULL,
  category_id  TEXT NOT NULL,
  account_id   TEXT NOT NULL REFERENCES accounts(id),
  completed_at TEXT NOT NULL,
  PRIMARY KEY (subject_id, category_id)
);
CREATE INDEX category_matches_category ON category_matches(account_id, category_id, completed_at);
ALTER TABLE calls ADD COLUMN agent_id TEXT;
`,
  },
];
