// Opens a fresh store of either engine for the store contract tests: SQLite in a temp dir,
// or a new database on the test run's PostgreSQL cluster (test/helpers/postgres-global-setup.ts).
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { inject } from 'vitest';
import { openStore, type StoreSettings } from '../../src/store/index.js';
import type { SqlStore } from '../../src/store/sql-store.js';
import type { Store } from '../../src/store/store.js';
import { freshDatabase } from '../helpers/postgres-cluster.js';

export type Engine = 'sqlite' | 'postgres';
export const ENGINES: Engine[] = ['sqlite', 'postgres'];

export interface StoreHarness {
  readonly engine: Engine;
  /** Where the test's database is: every open() of one harness opens the same one. */
  readonly settings: StoreSettings;
  /** Another connection (another process's view, as the operator CLI has) to the test's database. */
  open(): Promise<SqlStore>;
  /** Close every store opened and remove the database. */
  dispose(): Promise<void>;
}

export async function createHarness(engine: Engine): Promise<StoreHarness> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `scribed-store-${engine}-`));
  const pg = engine === 'postgres' ? await freshDatabase(inject('postgresUrl')) : null;
  const settings: StoreSettings = { dataDir: dir, ...(pg ? { databaseUrl: pg.url, databasePoolSize: 4 } : {}) };
  const opened: SqlStore[] = [];
  return {
    engine,
    settings,
    async open() {
      const store = await openStore(settings);
      opened.push(store);
      return store;
    },
    async dispose() {
      for (const s of opened.splice(0)) await s.close();
      await pg?.drop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const T0 = '2025-01-01T00:00:00.000Z';
export const sha = (s: string): Buffer => crypto.createHash('sha256').update(s).digest();

/** An account with its two credentials (sk_<id>, tok_<id>) and an opening balance. */
export async function addAccount(store: Store, id: string, characters = 0n): Promise<void> {
  await store.createAccount({
    id,
    name: `name of ${id}`,
    characters,
    accessKey: { id: `sk_${id}`, secretHash: sha(`sk-secret-${id}`) },
    apiToken: { id: `tok_${id}`, secretHash: sha(`tok-secret-${id}`) },
    createdAt: T0,
  });
}
