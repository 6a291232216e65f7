// What the store's area modules (src/store/areas/*) need of a database: queries, one-call
// transactions and the two engine differences they must know about (row locks and unique
// violations). Two drivers implement it: SQLite (sqlite-db.ts, the embedded default) and
// PostgreSQL (postgres-db.ts, shared by many nodes).
//
// SQL is written once, in the subset both engines run the same way: `?` placeholders (the
// PostgreSQL driver numbers them), TEXT timestamps in ISO-8601 UTC, every integer column a
// 64-bit integer that arrives as bigint, JSON kept as TEXT, BLOB/BYTEA as Buffer,
// `INSERT ... ON CONFLICT ... DO NOTHING` and `RETURNING`.
//
// Transactions. SQLite runs each as BEGIN IMMEDIATE: one writer at a time across processes,
// so a read-check-write sequence cannot interleave with another. PostgreSQL runs READ
// COMMITTED, where each statement sees the latest committed rows; a sequence whose check
// must stay true until it commits takes a row lock first (`lockOne`, SELECT ... FOR UPDATE).
// The convention: every check-then-write transaction on an account's data locks the account
// row first (areas/ledger.ts `lockAccount`), which serialises that account's writers the way
// SQLite serialises all of them, without serialising different accounts.
export type SqlValue = string | number | bigint | Buffer | null;

export type Dialect = 'sqlite' | 'postgres';

export interface Tx {
  readonly dialect: Dialect;
  /** The first row, or undefined. */
  one<T>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined>;
  all<T>(sql: string, params?: readonly SqlValue[]): Promise<T[]>;
  /** Run a statement; resolves to the number of rows it changed. */
  run(sql: string, params?: readonly SqlValue[]): Promise<number>;
  /** A SELECT of one row that also locks the rows it reads until the transaction ends
   * (PostgreSQL `FOR UPDATE`; SQLite's BEGIN IMMEDIATE already holds the whole database). */
  lockOne<T>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined>;
  /** lockOne that passes over rows another transaction holds (PostgreSQL `FOR UPDATE SKIP
   * LOCKED`), so workers looking for a job at once take different ones. */
  claimOne<T>(sql: string, params?: readonly SqlValue[]): Promise<T | undefined>;
}

export interface Db extends Tx {
  /** Run fn as one transaction: committed when it resolves, rolled back when it throws.
   * PostgreSQL retries it (a few times, with a short random wait) on a serialization
   * failure or a deadlock, so fn must not act outside the database. */
  tx<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /** True for a unique or primary-key violation (a concurrent duplicate insert). */
  isUniqueViolation(err: unknown): boolean;
  close(): Promise<void>;
}

export const INT64_MAX = (1n << 63n) - 1n;

/** A non-negative value that fits a signed 64-bit integer column. */
export function int64(value: bigint, what: string): bigint {
  if (typeof value !== 'bigint' || value < 0n || value > INT64_MAX) {
    throw new RangeError(`${what} must be a bigint in [0, 2^63-1], got ${String(value)}`);
  }
  return value;
}

export function nowIso(): string {
  return new Date().toISOString();
}

/** The larger of two values in SQL: SQLite's scalar MAX(a, b) is PostgreSQL's GREATEST. */
export function greatest(tx: Pick<Tx, 'dialect'>, a: string, b: string): string {
  return `${tx.dialect === 'sqlite' ? 'MAX' : 'GREATEST'}(${a}, ${b})`;
}
