// The SQLite driver's durability and checkpoints: a write resolves only once the WAL holding
// it is synced, that sync runs off the event loop and is shared by the writes committed while
// the one before it ran, and the WAL is checkpointed into the database file by the checkpoint
// thread, not inside a COMMIT on the caller's thread.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SqliteDb } from '../../../src/store/sql/sqlite-db.js';

const MIGRATIONS = [{ version: 1, sql: 'CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)' }];

let dir: string;
let file: string;
let db: SqliteDb | null = null;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-sqlite-db-'));
  file = path.join(dir, 'scribed.db');
});

afterEach(async () => {
  vi.restoreAllMocks();
  await db?.close();
  db = null;
  fs.rmSync(dir, { recursive: true, force: true });
});

interface Syncs {
  /** Syncs begun, per file. */
  begun: Map<string, number>;
  /** performance.now() as each sync finished. */
  finishedAt: number[];
}

/** fs.fdatasync, delayed by `ms`; records the syncs of each file. */
function slowSyncs(ms: number): Syncs {
  const syncs: Syncs = { begun: new Map(), finishedAt: [] };
  const real = fs.fdatasync;
  vi.spyOn(fs, 'fdatasync').mockImplementation(((fd: number, cb: fs.NoParamCallback) => {
    const target = fs.readlinkSync(`/proc/self/fd/${fd}`);
    syncs.begun.set(target, (syncs.begun.get(target) ?? 0) + 1);
    setTimeout(
      () =>
        real(fd, (err) => {
          syncs.finishedAt.push(performance.now());
          cb(err);
        }),
      ms,
    );
  }) as typeof fs.fdatasync);
  return syncs;
}

const wal = (): string => fs.realpathSync(`${file}-wal`);

describe('SqliteDb: durable writes off the event loop', () => {
  it('resolves a write only after a sync of the WAL, keeps the event loop turning meanwhile, and lets writes committed during one sync share the next', async () => {
    db = SqliteDb.open(file, MIGRATIONS);
    const syncs = slowSyncs(200);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 20);
    const first = db.tx((tx) => tx.run('INSERT INTO notes (body) VALUES (?)', ['first'])).then(() => performance.now());
    // Five more writes while the first one's sync is on its way.
    await new Promise((r) => setTimeout(r, 50));
    const more = Array.from({ length: 5 }, (_, i) =>
      db!.run('INSERT INTO notes (body) VALUES (?)', [`more ${i}`]).then(() => performance.now()),
    );
    const firstAt = await first;
    const moreAt = await Promise.all(more);
    clearInterval(timer);
    // Two syncs for six writes: the first's, and one begun after it for the five.
    expect(syncs.begun.get(wal())).toBe(2);
    expect(syncs.finishedAt).toHaveLength(2);
    expect(firstAt).toBeGreaterThanOrEqual(syncs.finishedAt[0]!);
    for (const at of moreAt) expect(at).toBeGreaterThanOrEqual(syncs.finishedAt[1]!);
    // The loop turned while the syncs ran (about 400 ms in all; a blocked loop would not tick).
    expect(ticks).toBeGreaterThanOrEqual(8);
    expect(await db.all('SELECT * FROM notes')).toHaveLength(6);
  });

  it('syncs after an autocommit write, not after reads or a read-only transaction', async () => {
    db = SqliteDb.open(file, MIGRATIONS);
    const syncs = slowSyncs(0);
    await db.run('INSERT INTO notes (body) VALUES (?)', ['a']);
    expect(syncs.begun.get(wal())).toBe(1);
    await db.all('SELECT * FROM notes');
    await db.one('SELECT body FROM notes WHERE id = ?', [1]);
    await db.tx((tx) => tx.one('SELECT body FROM notes WHERE id = ?', [1]));
    expect(syncs.begun.get(wal())).toBe(1);
    await db.one<{ id: bigint }>('INSERT INTO notes (body) VALUES (?) RETURNING id', ['b']);
    expect(syncs.begun.get(wal())).toBe(2);
  });

  it('a transaction that fails rolls back and is not synced', async () => {
    db = SqliteDb.open(file, MIGRATIONS);
    const syncs = slowSyncs(0);
    await expect(
      db.tx(async (tx) => {
        await tx.run('INSERT INTO notes (body) VALUES (?)', ['lost']);
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect(await db.all('SELECT * FROM notes')).toEqual([]);
    expect(syncs.begun.size).toBe(0);
  });
});

describe('SqliteDb: checkpoints on their own thread', () => {
  it('the caller never checkpoints; the thread copies the WAL into the database file after writes', async () => {
    db = SqliteDb.open(file, MIGRATIONS, { checkpointIntervalMs: 50 });
    for (let i = 0; i < 20; i++) await db.run('INSERT INTO notes (body) VALUES (?)', [`note ${i}`]);
    // The database file alone (no WAL beside it) has none of them yet: nothing checkpointed
    // inside the commits.
    const before = path.join(dir, 'before.db');
    fs.copyFileSync(file, before);
    const count = (f: string) => {
      const c = new Database(f, { readonly: true });
      try {
        const table = c.prepare("SELECT 1 FROM sqlite_master WHERE name = 'notes'").get();
        return table === undefined ? 0 : (c.prepare('SELECT COUNT(*) AS n FROM notes').get() as { n: number }).n;
      } finally {
        c.close();
      }
    };
    expect(count(before)).toBe(0);
    await vi.waitFor(() => expect(db!.checkpointer.completed).toBeGreaterThanOrEqual(1), { timeout: 10_000 });
    const after = path.join(dir, 'after.db');
    fs.copyFileSync(file, after);
    expect(count(after)).toBe(20);
  });

  it('starts no thread in a process that writes and closes before the first checkpoint is due', async () => {
    db = SqliteDb.open(file, MIGRATIONS);
    await db.run('INSERT INTO notes (body) VALUES (?)', ['quick']);
    await db.close();
    db = null;
    expect(fs.existsSync(`${file}-wal`)).toBe(false);
    const c = new Database(file, { readonly: true });
    expect((c.prepare('SELECT body FROM notes').get() as { body: string }).body).toBe('quick');
    c.close();
  });
});
