// The shared driver: PostgreSQL through node-postgres (`pg`), one connection pool per
// process. Many scribed nodes use one database; every piece of state they share lives here.
//
// Transactions run READ COMMITTED. A check-then-write sequence locks the row its check is
// about first (`lockOne`, SELECT ... FOR UPDATE; see db.ts for the convention), so two nodes
// debiting one account queue on its row rather than both passing a stale balance check.
// Serialization failures and deadlocks (which READ COMMITTED can still raise when two
// transactions lock rows in different orders) are retried a few times.
//
// Integers: every integer column is BIGINT (int8), parsed to bigint as SQLite's safeIntegers
// does, so the area code sees the same types on both engines.
import crypto from 'node:crypto';
import pg from 'pg';
import type { Db, SqlValue, Tx } from './db.js';
import { nowIso } from './db.js';

export interface PostgresMigration {
  version: number;
  sql: string;
}

export interface PostgresOptions {
  url: string;
  /** Connections in the pool (per process). */
  poolSize?: number;
  /** How long a caller waits for a free connection before failing. */
  connectTimeoutMs?: number;
  /** A statement running longer than this is cancelled by the server. */
  statementTimeoutMs?: number;
  /** An idle pooled connection is closed after this long. */
  idleTimeoutMs?: number;
  /** Errors of idle pooled connections (a restarted server, a dropped link). */
  onIdleError?: (err: Error) => void;
  /** Shown in pg_stat_activity. */
  applicationName?: string;
}

export const POSTGRES_DEFAULTS = { poolSize: 10, connectTimeoutMs: 5000, statementTimeoutMs: 30_000, idleTimeoutMs: 30_000 } as const;

const INT8_OID = 20;
const RETRYABLE = new Set(['40001', '40P01']); // serialization_failure, deadlock_detected
const MAX_ATTEMPTS = 5;
/** Key of the advisory lock held while migrations run (any constant unique to scribed). */
const MIGRATION_LOCK_KEY = 0x5c51bed;

const typeParsers = {
  getTypeParser: ((oid: number, format?: string) => {
    if (oid === INT8_OID && format !== 'binary') return (v: string) => BigInt(v);
    return pg.types.getTypeParser(oid, format as 'text');
  }) as typeof pg.types.getTypeParser,
};

const numbered = new Map<string, string>();

/** `?` placeholders become `$1, $2, ...` (outside quoted strings and identifiers). */
export function numberPlaceholders(sql: string): string {
  const cached = numbered.get(sql);
  if (cached !== undefined) return cached;
  let out = '';
  let n = 0;
  let quote: string | null = null;
  for (const ch of sql) {
    if (quote) {
      if (ch === quote) quote = null;
      out += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      out += ch;
    } else if (ch === '?') {
      out += `$${++n}`;
    } else out += ch;
  }
  numbered.set(sql, out);
  return out;
}

function values(params: readonly SqlValue[]): unknown[] {
  // pg sends bigint as text; explicit so it never depends on the driver's version.
  return params.map((p) => (typeof p === 'bigint' ? p.toString() : p));
}

type Queryable = Pick<pg.PoolClient, 'query'>;

class PostgresTx implements Tx {
  readonly dialect = 'postgres' as const;
  constructor(private readonly q: Queryable) {}

  async one<T>(sql: string, params: readonly SqlValue[] = []): Promise<T | undefined> {
    const r = await this.q.query(numberPlaceholders(sql), values(params));
    return r.rows[0] as T | undefined;
  }

  async all<T>(sql: string, params: readonly SqlValue[] = []): Promise<T[]> {
    const r = await this.q.query(numberPlaceholders(sql), values(params));
    return r.rows as T[];
  }

  async run(sql: string, params: readonly SqlValue[] = []): Promise<number> {
    const r = await this.q.query(numberPlaceholders(sql), values(params));
    return r.rowCount ?? 0;
  }

  lockOne<T>(sql: string, params: readonly SqlValue[] = []): Promise<T | undefined> {
    return this.one<T>(`${sql} FOR UPDATE`, params);
  }

  claimOne<T>(sql: string, params: readonly SqlValue[] = []): Promise<T | undefined> {
    return this.one<T>(`${sql} FOR UPDATE SKIP LOCKED`, params);
  }
}

export class PostgresDb implements Db {
  readonly dialect = 'postgres' as const;
  readonly pool: pg.Pool;
  private readonly view: PostgresTx;
  private closed = false;

  private constructor(readonly options: PostgresOptions) {
    this.pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolSize ?? POSTGRES_DEFAULTS.poolSize,
      connectionTimeoutMillis: options.connectTimeoutMs ?? POSTGRES_DEFAULTS.connectTimeoutMs,
      idleTimeoutMillis: options.idleTimeoutMs ?? POSTGRES_DEFAULTS.idleTimeoutMs,
      statement_timeout: options.statementTimeoutMs ?? POSTGRES_DEFAULTS.statementTimeoutMs,
      application_name: options.applicationName ?? 'scribed',
      types: typeParsers,
    });
    // Without a listener an idle connection's error (the server restarting) would crash the
    // process; the pool drops that connection and the next query opens a new one.
    this.pool.on('error', (err) => options.onIdleError?.(err));
    this.view = new PostgresTx(this.pool);
  }

  /** Connect and apply the migrations this build knows, under an advisory lock, so nodes
   * starting together apply each migration once and none starts on a half-built schema. */
  static async open(options: PostgresOptions, migrations: readonly PostgresMigration[]): Promise<PostgresDb> {
    const db = new PostgresDb(options);
    try {
      await migrate(db.pool, migrations);
      return db;
    } catch (err) {
      await db.pool.end().catch(() => undefined);
      throw err;
    }
  }

  one<T>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    return this.view.one<T>(sql, params);
  }

  all<T>(sql: string, params?: readonly SqlValue[]): Promise<T[]> {
    return this.view.all<T>(sql, params);
  }

  run(sql: string, params?: readonly SqlValue[]): Promise<number> {
    return this.view.run(sql, params);
  }

  /** Outside a transaction a lock ends with the statement: this is a plain read. */
  lockOne<T>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    return this.view.one<T>(sql, params);
  }

  claimOne<T>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined> {
    return this.view.one<T>(sql, params);
  }

  async tx<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const client = await this.pool.connect();
      let broken: Error | undefined;
      try {
        await client.query('BEGIN');
        const out = await fn(new PostgresTx(client));
        await client.query('COMMIT');
        return out;
      } catch (err) {
        try {
          await client.query('ROLLBACK');
        } catch (rollbackErr) {
          broken = rollbackErr as Error; // the connection is unusable: do not pool it
        }
        const code = (err as { code?: string }).code;
        if (attempt >= MAX_ATTEMPTS || code === undefined || !RETRYABLE.has(code)) throw err;
      } finally {
        client.release(broken);
      }
      await new Promise((r) => setTimeout(r, crypto.randomInt(5, 20 * attempt)));
    }
  }

  isUniqueViolation(err: unknown): boolean {
    return (err as { code?: string } | null)?.code === '23505';
  }

  isOpen(): boolean {
    return !this.closed;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }
}

async function migrate(pool: pg.Pool, migrations: readonly PostgresMigration[]): Promise<void> {
  const latest = migrations.reduce((m, x) => Math.max(m, x.version), 0);
  const ordered = [...migrations].sort((a, b) => a.version - b.version);
  const client = await pool.connect();
  try {
    // Session-level lock on this connection: held across the migrations' own transactions,
    // released below (or by the server when the connection dies).
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    try {
      await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, applied_at TEXT NOT NULL)');
      const r = await client.query<{ v: bigint }>('SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations');
      const seen = Number(r.rows[0]!.v);
      if (seen > latest) {
        throw new Error(
          `database has schema version ${seen}, newer than this build knows (${latest}); refusing to open it with older code`,
        );
      }
      for (const m of ordered) {
        if (m.version <= seen) continue;
        await client.query('BEGIN');
        try {
          await client.query(m.sql);
          await client.query('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)', [m.version, nowIso()]);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK');
          throw err;
        }
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
    }
  } finally {
    client.release();
  }
}
