// What the per-area SQLite modules (sqlite-*.ts) get from SqliteStore: prepared statements,
// the one-transaction write wrapper, and the balance/ledger helpers, so every area writes
// Characters the same way (balance and ledger row in the same transaction).
import type Database from 'better-sqlite3';

export interface SqlAccess {
  stmt(sql: string): Database.Statement;
  /** Run fn as one BEGIN IMMEDIATE transaction. */
  write<T>(fn: () => T): T;
  /** Current balance; throws NOT_FOUND for an unknown account. */
  readBalance(accountId: string): bigint;
  /** Append a ledger row (inside a write). */
  ledger(accountId: string, delta: bigint, balanceAfter: bigint, reason: string, ref: string | null): void;
}
