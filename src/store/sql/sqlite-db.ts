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
//
// Durability without blocking the event loop: a write is durable once the WAL holding it is on
// disk. SQLite's synchronous = FULL syncs the WAL inside COMMIT, synchronously, so one slow
// sync (seen here: 1.7 s on this VM's disk) stalled every socket of the node. The connection
// runs synchronous = NORMAL (COMMIT appends to the WAL without syncing) and a write's promise
// resolves only after an fdatasync of the WAL that began after its COMMIT, on libuv's thread
// pool: nothing the server acts on (a debit, a consumed ticket) is acknowledged before it is
// on disk, as under FULL, while frames and acks keep flowing. The turn is released at COMMIT
// and the writes that commit while one sync runs share the next (group commit), so a slow
// disk delays writes by about one sync, not by one sync per write queued behind it. A reader
// may meanwhile see a commit that is not yet on disk; a write that depends on it is durable
// only with it (the WAL is synced in order). Checkpoints, the other syncs, run on their own
// thread (wal-checkpointer.ts).
import fs from 'node:fs';
import Database from 'better-sqlite3';
import type { Db, SqlValue, Tx } from './db.js';
import { nowIso } from './db.js';
import { DEFAULT_CHECKPOINT_INTERVAL_MS, WalCheckpointer } from './wal-checkpointer.js';

export interface SqliteMigration {
  version: number;
  sql: string;
}

const DEFAULT_BUSY_TIMEOUT_MS = 10_000;
/** SQLite's own default, for a connection whose checkpoint thread failed. */
const INLINE_AUTOCHECKPOINT_PAGES = 1000;

export interface SqliteOpenOptions {
  busyTimeoutMs?: number;
  /** How often the checkpoint thread checkpoints after writes (DEFAULT_CHECKPOINT_INTERVAL_MS). */
  checkpointIntervalMs?: number;
}

class SqliteTx implements Tx {
  readonly dialect = 'sqlite' as const;
  /** A statement that may write ran since the last reset (the caller then syncs the WAL). */
  wrote = false;
  constructor(private readonly stmt: (sql: string) => Database.Statement) {}

  private prepared(sql: string): Database.Statement {
    const s = this.stmt(sql);
    if (!s.readonly) this.wrote = true;
    return s;
  }

  async one<T>(sql: string, params: readonly SqlValue[] = []): Promise<T | undefined> {
    return this.prepared(sql).get(...params) as T | undefined;
  }

  async all<T>(sql: string, params: readonly SqlValue[] = []): Promise<T[]> {
    return this.prepared(sql).all(...params) as T[];
  }

  async run(sql: string, params: readonly SqlValue[] = []): Promise<number> {
    return this.prepared(sql).run(...params).changes;
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

  /** The WAL file, open for fdatasync (SQLite keeps it while this connection is open). */
  private readonly walFd: number;
  private syncInFlight: Promise<void> | null = null;
  private nextSync: Promise<void> | null = null;
  readonly checkpointer: WalCheckpointer;

  private constructor(
    private readonly db: Database.Database,
    readonly path: string,
    busyTimeoutMs: number,
    checkpointIntervalMs: number,
  ) {
    this.view = new SqliteTx((sql) => this.stmt(sql));
    this.walFd = fs.openSync(`${path}-wal`, 'r');
    this.checkpointer = new WalCheckpointer({ file: path, busyTimeoutMs }, checkpointIntervalMs, (reason) => {
      // The store has no logger of its own; a process warning reaches the service's stderr.
      process.emitWarning(`${reason}; checkpointing inline from now on`, { code: 'scribed-wal-checkpoint' });
      if (this.db.open) this.db.pragma(`wal_autocheckpoint = ${INLINE_AUTOCHECKPOINT_PAGES}`);
    });
  }

  /** Open (creating it owner-only) and apply the migrations this build knows. */
  static open(file: string, migrations: readonly SqliteMigration[], options: SqliteOpenOptions = {}): SqliteDb {
    const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
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
      db.pragma('wal_autocheckpoint = 0');
      db.pragma('foreign_keys = ON');
      // Deleted rows (an erased transcript, spent audio) are overwritten with zeros in the
      // database and its WAL, not left in free pages (docs/redaction.md, "What a delete leaves").
      db.pragma('secure_delete = ON');
      // The migrations run synchronously before the server serves anything, so FULL for them;
      // then NORMAL plus our own sync of the WAL after every write (see the top of this file):
      // a transaction committed just before a power loss is never one the server acted on.
      db.pragma('synchronous = FULL');
      migrate(db, file, migrations);
      db.pragma('synchronous = NORMAL');
      return new SqliteDb(db, file, busyTimeoutMs, options.checkpointIntervalMs ?? DEFAULT_CHECKPOINT_INTERVAL_MS);
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

  /** Resolves once an fdatasync of the WAL that began after this call has finished. */
  private walSynced(): Promise<void> {
    this.checkpointer.wrote();
    if (this.syncInFlight === null) return this.startSync();
    // The sync in flight may have begun before this caller's COMMIT: wait for the next one,
    // which every caller arriving meanwhile shares.
    this.nextSync ??= this.syncInFlight
      .catch(() => undefined)
      .then(() => {
        this.nextSync = null;
        return this.startSync();
      });
    return this.nextSync;
  }

  private startSync(): Promise<void> {
    const sync = new Promise<void>((resolve, reject) => fs.fdatasync(this.walFd, (err) => (err ? reject(err) : resolve())));
    this.syncInFlight = sync;
    const done = () => {
      if (this.syncInFlight === sync) this.syncInFlight = null;
    };
    sync.then(done, done);
    return sync;
  }

  /** A statement in a turn of its own (autocommit), durable before it resolves if it wrote. */
  private async single<T>(fn: () => Promise<T>): Promise<T> {
    // A statement that fails is rolled back by SQLite: nothing of it to sync.
    const { out, wrote } = await this.inTurn(async () => {
      this.view.wrote = false;
      return { out: await fn(), wrote: this.view.wrote };
    });
    if (wrote) await this.walSynced();
    return out;
  }

  one<T>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    return this.single(() => this.view.one<T>(sql, params));
  }

  all<T>(sql: string, params?: readonly SqlValue[]): Promise<T[]> {
    return this.single(() => this.view.all<T>(sql, params));
  }

  run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    return this.single(() => this.view.run(sql, params));
  }

  lockOne<T>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    return this.one<T>(sql, params);
  }

  claimOne<T>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    return this.one<T>(sql, params);
  }

  tx<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    const committed = this.inTurn(async () => {
      this.db.exec('BEGIN IMMEDIATE');
      this.view.wrote = false;
      try {
        const out = await fn(this.view);
        this.db.exec('COMMIT');
        return { out, wrote: this.view.wrote };
      } catch (err) {
        if (this.db.inTransaction) this.db.exec('ROLLBACK');
        throw err;
      }
    });
    return committed.then(async ({ out, wrote }) => {
      if (wrote) await this.walSynced();
      return out;
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
    // Let the last turn's caller ask for its sync, then wait for the syncs asked for.
    await new Promise((resolve) => setImmediate(resolve));
    await (this.nextSync ?? this.syncInFlight)?.catch(() => undefined);
    await this.checkpointer.close();
    fs.closeSync(this.walFd);
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
    if (v > latest)
      throw new Error(
        `database ${file} has schema version ${v}, newer than this build knows (${latest}); refusing to open it with older code`,
      );
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
