// A real scribed service for integration tests: real store, real engine, listening on an
// ephemeral loopback port (test/helpers/local-service.ts, which the benches use without
// vitest). The store is SQLite in the temp data dir, or, when the run sets
// SCRIBED_TEST_STORE=postgres (the vitest project "postgres"), a database of its own on the
// run's PostgreSQL cluster, the same one for every service started on that data dir.
import { Writable } from 'node:stream';
import type { Logger } from 'pino';
import { inject } from 'vitest';
import { openStore, type StoreSettings } from '../../src/store/index.js';
import type { SqlStore } from '../../src/store/sql-store.js';
import { freshDatabase } from './postgres-cluster.js';
import { createLogger } from '../../src/obs/log.js';
import { startLocalService, tempDir, type LocalServiceOptions, type TestService } from './local-service.js';

export { tempDir, type TestService } from './local-service.js';

const databases = new Map<string, string>();

export const testStore = (): 'sqlite' | 'postgres' => (process.env.SCRIBED_TEST_STORE === 'postgres' ? 'postgres' : 'sqlite');

/** The store of a test data dir: SQLite in it, or its PostgreSQL database (made on first use). */
export async function storeSettingsFor(dataDir: string): Promise<StoreSettings> {
  if (testStore() !== 'postgres') return { dataDir };
  let url = databases.get(dataDir);
  if (!url) {
    url = (await freshDatabase(inject('postgresUrl'))).url;
    databases.set(dataDir, url);
  }
  return { dataDir, databaseUrl: url, databasePoolSize: 4 };
}

/** The operator CLI's flags for the store of a test data dir. */
export async function storeArgsFor(dataDir: string): Promise<string[]> {
  const s = await storeSettingsFor(dataDir);
  return ['--data-dir', dataDir, ...(s.databaseUrl ? ['--database-url', s.databaseUrl] : [])];
}

/** `logger`: the service's logger (default: silent, or SCRIBED_TEST_LOG's level); tests that
 * look at log lines pass one built by createLogger (src/obs/log.ts) on a capturing stream. */
export async function startService(opts: LocalServiceOptions = {}): Promise<TestService> {
  const dataDir = opts.dataDir ?? tempDir();
  const storeSettings = await storeSettingsFor(dataDir);
  const svc = await startLocalService({
    databaseUrl: storeSettings.databaseUrl,
    databasePoolSize: storeSettings.databasePoolSize,
    ...opts,
    dataDir,
  });
  return { ...svc, storeSettings };
}

/** Another connection to a test service's store (as an operator's or another node's), for
 * tests that look at or tamper with what is stored. Close it when done. */
export async function secondConnection(svc: TestService): Promise<SqlStore> {
  return openStore(svc.storeSettings);
}

/** Every row of every table of the service's store, as text (Buffers as UTF-8), for tests
 * that a secret is stored nowhere. */
export async function storeDump(svc: TestService): Promise<string> {
  const store = await secondConnection(svc);
  try {
    const tables =
      store.engine === 'sqlite'
        ? await store.db.all<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'")
        : await store.db.all<{ name: string }>("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public'");
    const parts: string[] = [];
    for (const { name } of tables) {
      for (const row of await store.db.all<Record<string, unknown>>(`SELECT * FROM "${name}"`)) {
        parts.push(
          Object.values(row)
            .map((v) => (Buffer.isBuffer(v) ? v.toString('utf8') : String(v)))
            .join('\t'),
        );
      }
    }
    return parts.join('\n');
  } finally {
    await store.close();
  }
}

/** The service's own logger (src/obs/log.ts, redaction included) writing into `lines`, one
 * entry per log line: for tests that check what reaches the log. */
export function capturedLogger(level: string, lines: string[]): Logger {
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(
        ...chunk
          .toString('utf8')
          .split('\n')
          .filter((l) => l !== ''),
      );
      done();
    },
  });
  return createLogger({ level, destination: sink });
}
