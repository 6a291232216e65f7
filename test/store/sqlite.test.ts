// What only the embedded SQLite store has: its file, the file's permissions and journal
// mode, and its migrations. Everything the store does is in store-contract.test.ts, run on
// both engines.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';
import { LATEST_SCHEMA_VERSION, MIGRATIONS } from '../../src/store/migrations.js';
import { SqlStore } from '../../src/store/sql-store.js';
import type { Store } from '../../src/store/store.js';

const T0 = '2025-01-01T00:00:00.000Z';

const sha = (s: string): Buffer => crypto.createHash('sha256').update(s).digest();

let dir: string;
let dbPath: string;
const opened: Store[] = [];

async function openAt(p = dbPath): Promise<SqlStore> {
  const store = new SqlStore({ kind: 'sqlite', path: p });
  await store.open();
  opened.push(store);
  return store;
}

async function addAccount(store: Store, id: string, characters = 0n): Promise<void> {
  await store.createAccount({
    id,
    name: `name of ${id}`,
    characters,
    accessKey: { id: `sk_${id}`, secretHash: sha(`sk-secret-${id}`) },
    apiToken: { id: `tok_${id}`, secretHash: sha(`tok-secret-${id}`) },
    createdAt: T0,
  });
}

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-store-'));
  dbPath = path.join(dir, 'scribed.db');
});

afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('SqliteStore: opening and migrations', () => {
  it('applies migrations once, records the version, and is idempotent on reopen', async () => {
    const a = await openAt();
    await addAccount(a, 'acc_1', 5n);
    await a.close();
    const b = await openAt();
    expect(await b.getAccount('acc_1')).not.toBeNull();
    await b.close();

    const db = new Database(dbPath, { readonly: true });
    const versions = db.prepare('SELECT version FROM schema_migrations ORDER BY version').all() as Array<{ version: number }>;
    const pragmas = { journal: db.pragma('journal_mode', { simple: true }) };
    db.close();
    // Every version the code knows, each once (branches are given version numbers ahead, so the
    // list may have a gap until the branch that holds the missing one is merged).
    expect(versions.map((v) => v.version)).toEqual([...MIGRATIONS.map((m) => m.version)].sort((a, b) => a - b));
    expect(versions.at(-1)!.version).toBe(LATEST_SCHEMA_VERSION);
    expect(pragmas.journal).toBe('wal');
  });

  it('refuses a database with a newer schema than the code knows', async () => {
    const a = await openAt();
    await a.close();
    const db = new Database(dbPath);
    db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(LATEST_SCHEMA_VERSION + 1, T0);
    db.close();
    const b = new SqlStore({ kind: 'sqlite', path: dbPath });
    await expect(b.open()).rejects.toThrow(/newer than this build/);
    expect(b.isOpen()).toBe(false);
  });

  it('openStore creates the data directory owner-only and opens scribed.db', async () => {
    const dataDir = path.join(dir, 'nested', 'data');
    const store = await openStore(dataDir);
    opened.push(store);
    expect(store.isOpen()).toBe(true);
    expect(fs.statSync(dataDir).mode & 0o777).toBe(0o700);
    expect(fs.existsSync(path.join(dataDir, 'scribed.db'))).toBe(true);
    expect(fs.statSync(path.join(dataDir, 'scribed.db')).mode & 0o077).toBe(0);
    await store.close();
    expect(store.isOpen()).toBe(false);
  });
});
