// Opens the service's store: PostgreSQL when a database URL is given (many nodes share it),
// otherwise the embedded SQLite file `<dataDir>/scribed.db`. The server and the operator CLI
// both come through here and may have the same store open at once.
import fs from 'node:fs';
import path from 'node:path';
import { SqlStore } from './sql-store.js';
import { POSTGRES_DEFAULTS, type FailoverEvent } from './sql/postgres-db.js';

export type { FailoverEvent } from './sql/postgres-db.js';

export const DATABASE_FILE = 'scribed.db';

export interface StoreSettings {
  dataDir: string;
  /** postgres://... : the shared PostgreSQL store; absent: SQLite in dataDir. */
  databaseUrl?: string;
  /** PostgreSQL pool: connections per process, wait for a free one, statement bound. */
  databasePoolSize?: number;
  databaseConnectTimeoutMs?: number;
  databaseStatementTimeoutMs?: number;
  databaseFailoverTimeoutMs?: number;
  onIdleError?: (err: Error) => void;
  /** What the PostgreSQL host selection did (several hosts in the URL): for logs and metrics. */
  onFailover?: (e: FailoverEvent) => void;
}

export async function openStore(settings: StoreSettings | string): Promise<SqlStore> {
  const s = typeof settings === 'string' ? { dataDir: settings } : settings;
  let store: SqlStore;
  if (s.databaseUrl) {
    store = new SqlStore({
      kind: 'postgres',
      url: s.databaseUrl,
      poolSize: s.databasePoolSize ?? POSTGRES_DEFAULTS.poolSize,
      connectTimeoutMs: s.databaseConnectTimeoutMs ?? POSTGRES_DEFAULTS.connectTimeoutMs,
      statementTimeoutMs: s.databaseStatementTimeoutMs ?? POSTGRES_DEFAULTS.statementTimeoutMs,
      failoverTimeoutMs: s.databaseFailoverTimeoutMs ?? POSTGRES_DEFAULTS.failoverTimeoutMs,
      onIdleError: s.onIdleError,
      onFailover: s.onFailover,
    });
  } else {
    // Owner-only: the database holds credential hashes and transcripts. The mode applies to
    // directories created here; an existing directory's mode is the operator's choice.
    fs.mkdirSync(s.dataDir, { recursive: true, mode: 0o700 });
    store = new SqlStore({ kind: 'sqlite', path: path.join(s.dataDir, DATABASE_FILE) });
  }
  await store.open();
  return store;
}
