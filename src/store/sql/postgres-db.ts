// The shared driver: PostgreSQL through node-postgres (`pg`), one connection pool per
// process. Many scribed nodes use one database; every piece of state they share lives here.
//
// Transactions run READ COMMITTED. A check-then-write sequence locks the row its check is
// about first (`lockOne`, SELECT ... FOR UPDATE; see db.ts for the convention), so two nodes
// debiting one account queue on its row rather than both passing a stale balance check.
// Serialization failures and deadlocks (which READ COMMITTED can still raise when two
// transactions lock rows in different orders) are retried a few times.
//
// Failover: the URL may name a primary and its standbys (libpq style, with
// target_session_attrs=read-write); postgres-primary.ts picks the host and moves the pool to a
// promoted standby. A transaction that loses its connection before its COMMIT was sent
// rolled back with the connection, so it is run again on the new primary (it must not act
// outside the database, as for the retries below); one that loses it during the COMMIT is
// failed, as its outcome is unknown (the caller's write was not confirmed, so nothing was
// acknowledged on it). A statement outside a transaction is sent again only when the
// connection failed before it was sent.
//
// Integers: every integer column is BIGINT (int8), parsed to bigint as SQLite's safeIntegers
// does, so the area code sees the same types on both engines.
import crypto from 'node:crypto';
import pg from 'pg';
import type { Db, SqlValue, Tx } from './db.js';
import { nowIso } from './db.js';
import { PrimaryPool, isLostPrimary, type FailoverEvent } from './postgres-primary.js';

export type { FailoverEvent } from './postgres-primary.js';

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
  /** How long a search for the read-write host may go on once the primary is lost (a URL with
   * several hosts or target_session_attrs); operations wait for it. */
  failoverTimeoutMs?: number;
  /** What the host selection did (lost the primary, switched, found none). */
  onFailover?: (e: FailoverEvent) => void;
}

export const POSTGRES_DEFAULTS = {
  poolSize: 10,
  connectTimeoutMs: 5000,
  statementTimeoutMs: 30_000,
  idleTimeoutMs: 30_000,
  failoverTimeoutMs: 30_000,
} as const;

const INT8_OID = 20;
const RETRYABLE = new Set(['40001', '40P01']); // serialization_failure, deadlock_detected
const MAX_ATTEMPTS = 5;
/** Runs of one operation that may end in a lost primary (each waits for a search). */
const LOST_ATTEMPTS = 3;
/** A probe of a host waits at most this long for it (or the connect timeout, if shorter). */
const PROBE_TIMEOUT_MS = 2000;
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

interface Queryable {
  query(text: string, values: unknown[]): Promise<pg.QueryResult>;
}

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
  private readonly primary: PrimaryPool;
  private readonly view: PostgresTx;
  private closed = false;

  private constructor(readonly options: PostgresOptions) {
    const connectTimeoutMs = options.connectTimeoutMs ?? POSTGRES_DEFAULTS.connectTimeoutMs;
    this.primary = new PrimaryPool({
      url: options.url,
      pool: {
        max: options.poolSize ?? POSTGRES_DEFAULTS.poolSize,
        connectionTimeoutMillis: connectTimeoutMs,
        idleTimeoutMillis: options.idleTimeoutMs ?? POSTGRES_DEFAULTS.idleTimeoutMs,
        statement_timeout: options.statementTimeoutMs ?? POSTGRES_DEFAULTS.statementTimeoutMs,
        application_name: options.applicationName ?? 'scribed',
        types: typeParsers,
      },
      searchTimeoutMs: options.failoverTimeoutMs ?? POSTGRES_DEFAULTS.failoverTimeoutMs,
      probeTimeoutMs: Math.min(connectTimeoutMs, PROBE_TIMEOUT_MS),
      onIdleError: options.onIdleError,
      onEvent: options.onFailover,
    });
    this.view = new PostgresTx({ query: (text, params) => this.query(text, params) });
  }

  /** The pool in use now (on the current primary). */
  get pool(): pg.Pool {
    return this.primary.now;
  }

  /** Connect and apply the migrations this build knows, under an advisory lock, so nodes
   * starting together apply each migration once and none starts on a half-built schema. */
  static async open(options: PostgresOptions, migrations: readonly PostgresMigration[]): Promise<PostgresDb> {
    const db = new PostgresDb(options);
    try {
      await db.primary.start();
      await migrate(db.primary.now, migrations);
      return db;
    } catch (err) {
      await db.primary.end().catch(() => undefined);
      throw err;
    }
  }

  /** A connection of the current primary's pool; a connect that fails because the primary
   * is gone waits for the search and tries the new one. */
  private async connect(): Promise<{ pool: pg.Pool; client: pg.PoolClient }> {
    for (let attempt = 1; ; attempt++) {
      const pool = await this.primary.pool();
      try {
        return { pool, client: await pool.connect() };
      } catch (err) {
        if (!this.primary.noteError(err, pool) || attempt >= LOST_ATTEMPTS) throw err;
      }
    }
  }

  /** One statement outside a transaction. */
  private async query(text: string, params: unknown[]): Promise<pg.QueryResult> {
    const { pool, client } = await this.connect();
    let broken: Error | undefined;
    try {
      return await client.query(text, params);
    } catch (err) {
      if (this.primary.noteError(err, pool) || isLostPrimary(err)) broken = err as Error;
      throw err;
    } finally {
      client.release(broken);
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
    let lost = 0;
    for (let attempt = 1; ; attempt++) {
      const { pool, client } = await this.connect();
      let broken: Error | undefined;
      let committing = false;
      try {
        await client.query('BEGIN');
        const out = await fn(new PostgresTx(client));
        committing = true;
        await client.query('COMMIT');
        return out;
      } catch (err) {
        if (this.primary.noteError(err, pool) || isLostPrimary(err)) {
          // The connection is gone (or on a server that no longer takes writes): do not pool it.
          // Before COMMIT the transaction died with it, so it runs again on the primary the
          // search finds; during COMMIT its outcome is unknown, so it fails.
          broken = err as Error;
          if (this.primary.selecting && (!committing || neverSent(err)) && ++lost < LOST_ATTEMPTS) {
            attempt--;
            continue;
          }
          throw err;
        }
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
    await this.primary.end();
  }
}

/** pg refuses a statement on a connection it already knows is broken without sending it:
 * such a COMMIT never reached the server, so the transaction surely did not commit. */
function neverSent(err: unknown): boolean {
  return /is not queryable/.test((err as Error | null)?.message ?? '');
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
