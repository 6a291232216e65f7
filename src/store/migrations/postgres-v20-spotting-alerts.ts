// PostgreSQL version 20 = SQLite version 25: phrases spotted in a leg's audio, and the live rules' alerts kept with
// their session and call (docs/analytics.md). Append-only once shipped (src/store/migrations-postgres.ts).
import type { PostgresMigration } from '../sql/postgres-db.js';

export const POSTGRES_V20_SPOTTING_ALERTS: readonly PostgresMigration[] = [
  {
    // - leg_spots: the phrases a leg's keyphrase search detected (JSON list with times, session
    //   ms), written when the session closes or stops on a node, read when its call ends.
    // - rule_alerts: each alert a live rule raised, with the History row (and call) it was
    //   raised in, for the call's analytics and the desk's timeline.
    version: 20,
    sql: `
CREATE TABLE leg_spots (
  transcription_id TEXT PRIMARY KEY,
  spots_json       TEXT NOT NULL,
  updated_at       TEXT NOT NULL
);
CREATE TABLE rule_alerts (
  id               TEXT PRIMARY KEY,
  account_id       TEXT NOT NULL,
  transcription_id TEXT NOT NULL,
  call_id          TEXT,
  rule_id          TEXT NOT NULL,
  rule_name        TEXT NOT NULL,
  condition        TEXT NOT NULL,
  source           TEXT NOT NULL CHECK (source IN ('transcript', 'spotted')),
  speaker          TEXT,
  start_ms         BIGINT NOT NULL,
  end_ms           BIGINT NOT NULL,
  text             TEXT NOT NULL,
  created_at       TEXT NOT NULL
);
CREATE INDEX rule_alerts_transcription ON rule_alerts(transcription_id, start_ms);
CREATE INDEX rule_alerts_call ON rule_alerts(call_id, start_ms);
`,
  },
];
