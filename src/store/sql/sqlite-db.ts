// The embedded driver: one SQLite file opened with better-sqlite3.
//
// Two kinds of process write the same file: the server, and the operator CLI while the
// server runs. SQLite serialises writers with file locks and WAL lets readers run beside the
// one writer. A transaction is BEGIN IMMEDIATE: the write lock is taken before the first
// read, so read-check-write sequences cannot interleave with another process's, and a
// deferred transaction can never fail half-way with SQLITE_BUSY when it upgrades from
// reader to writer. Waiting for the lock is bounded by busy_timeout.
//
// Inside this process the connection is shared by async callers, so every call (reads too)
// takes its turn: a reader never sees another caller's transaction half-done. The work
// itself is synchronous, so a turn lasts no longer than the statements it runs.
//
// Integers arrive as bigint (safeIntegers), so 64-bit balances and sample counts never pass
// through a double.
import fs from 'node:fs';
import Database from 'better-sqlite3';
import type { Db, SqlValue, Tx } from './db.js';
import { nowIso } from './db.js';

export interface SqliteMigration {
  version: number;
  sql: string;
}

const DEFAULT_BUSY_TIMEOUT_MS = 10_000;

class SqliteTx implements Tx {
  readonly dialect = 'sqlite' as const;
  constructor(private readonly stmt: (sql: string) => Database.Statement) {}

  async one<T>(sql: string, params: readonly SqlValue[] = []): Promise<T | undefined> {
    return this.stmt(sql).get(...params) as T | undefined;
  }

  async all<T>(sql: string, params: readonly SqlValue[] = []): Promise<T[]> {
    return this.stmt(sql).all(...params) as T[];
  }

  async run(sql: string, params: readonly SqlValue[] = []): Promise<number> {
    return this.stmt(sql).run(...params).changes;
  }

  lockOne<T>(sql: string, params: readonly SqlValue[] = []): Promise<T | undefined> {
    return this.one<T>(sql, params);
  }

  claimOne<T>(sql: string, params: readonly SqlValue[] = []): Promise<T | undefined> {
    return this.one<T>(sql, params);
  }
}

export class SqliteDb implements Db {
  readonly dialect = 'sqlite' as const;
  private readonly statements = new Map<string, Database.Statement>();
  private readonly view: SqliteTx;
  private turn: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly db: Database.Database,
    readonly path: string,
  ) {
    this.view = new SqliteTx((sql) => this.stmt(sql));
  }

  /** Open (creating it owner-only) and apply the migrations this build knows. */
  static open(file: string, migrations: readonly SqliteMigration[], busyTimeoutMs = DEFAULT_BUSY_TIMEOUT_MS): SqliteDb {
    // Create the file owner-only before SQLite does: SQLite gives the -wal and -shm files the
    // permissions of the database file, and credential hashes live here.
    try {
      fs.closeSync(fs.openSync(file, 'wx', 0o600));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const db = new Database(file, { timeout: busyTimeoutMs });
    try {
      db.defaultSafeIntegers(true);
      db.pragma(`busy_timeout = ${busyTimeoutMs}`);
      const mode = String(db.pragma('journal_mode = WAL', { simple: true })).toLowerCase();
      if (mode !== 'wal') throw new Error(`could not switch ${file} to WAL journal mode (got ${mode})`);
      // FULL, not NORMAL: under NORMAL a transaction committed just before a power loss may be
      // rolled back, and here that means a debit or a consumed ticket silently undone after the
      // server acted on it. Our write rate is far below what an fsync per commit costs.
      db.pragma('synchronous = FULL');
      db.pragma('foreign_keys = ON');
      migrate(db, file, migrations);
      return new SqliteDb(db, file);
    } catch (err) {
      db.close();
      throw err;
    }
  }

  private stmt(sql: string): Database.Statement {
    let s = this.statements.get(sql);
    if (!s) {
      if (!this.db.open) throw new Error('store is not open');
      s = this.db.prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  /** Run fn after every call queued before it. */
  private inTurn<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.turn.then(fn);
    this.turn = next.catch(() => undefined);
    return next;
  }

  one<T>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    return this.inTurn(() => this.view.one<T>(sql, params));
  }

  all<T>(sql: string, params?: readonly SqlValue[]): Promise<T[]> {
    return this.inTurn(() => this.view.all<T>(sql, params));
  }

  run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    return this.inTurn(() => this.view.run(sql, params));
  }

  lockOne<T>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    return this.one<T>(sql, params);
  }

  claimOne<T>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    return this.one<T>(sql, params);
  }

  tx<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return this.inTurn(async () => {
      this.db.exec('BEGIN IMMEDIATE');
      try {
        const out = await fn(this.view);
        this.db.exec('COMMIT');
        return out;
      } catch (err) {
        if (this.db.inTransaction) this.db.exec('ROLLBACK');
        throw err;
      }
    });
  }

  isUniqueViolation(err: unknown): boolean {
    return err instanceof Database.SqliteError && (err.code === 'SQLITE_CONSTRAINT_UNIQUE' || err.code === 'SQLITE_CONSTRAINT_PRIMARYKEY');
  }

  isOpen(): boolean {
    return this.db.open;
  }

  async close(): Promise<void> {
    await this.turn;
    if (!this.db.open) return;
    this.statements.clear();
    try {
      this.db.pragma('optimize');
    } catch {
      // best effort: another process may hold the lock; closing matters more
    }
    this.db.close();
  }
}

/** Apply migrations in ascending order, each in its own IMMEDIATE transaction with its row
 * in schema_migrations. The version is re-read under the write lock, so two processes
 * opening a fresh file at once apply each migration exactly once. */
function migrate(db: Database.Database, file: string, migrations: readonly SqliteMigration[]): void {
  const latest = migrations.reduce((m, x) => Math.max(m, x.version), 0);
  const current = (): number => {
    const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get();
    if (!table) return 0;
    const row = db.prepare('SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations').get() as { v: bigint };
    return Number(row.v);
  };
  const refuseNewer = (v: number): void => {
    if (v > latest) throw new Error(`database ${file} has schema version ${v}, newer than this build knows (${latest}); refusing to open it with older code`);
  };
  const seen = current();
  refuseNewer(seen);
  if (seen === latest) return;
  const ordered = [...migrations].sort((a, b) => a.version - b.version);
  for (;;) {
    const applied = db
      .transaction(() => {
        db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)');
        const v = current();
        refuseNewer(v);
        const next = ordered.find((m) => m.version > v);
        if (!next) return false;
        db.exec(next.sql);
        db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(next.version, nowIso());
        return true;
      })
      .immediate();
    if (!applied) return;
  }
}
