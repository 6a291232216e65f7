// Which PostgreSQL server the pool talks to, when the database URL names several (a primary and
// its standbys, libpq style: `postgres://u@h1:5432,h2:5432/db?target_session_attrs=read-write`).
//
// node-postgres connects to one host per connection string (libpq's host lists and
// target_session_attrs are not in `pg`), so the choice is made here: the hosts are probed (a
// connection and `SELECT pg_is_in_recovery(), current_setting('transaction_read_only')`) and
// one pool is opened on the first that fits, the one in use first, then the others in the
// order given. When a query meets an error that says the server is gone or no longer takes
// writes (a lost connection, `57P01` admin shutdown, `25006` read-only transaction ...), one
// search starts: every host probed again, with a growing pause between rounds, until one is
// read-write or `searchTimeoutMs` has passed. Callers that want the pool meanwhile wait for the
// search, so a promotion a few seconds later is a pause, not a string of failures. The pool
// of the old host is closed when the new one takes over.
//
// A URL with one host and no target_session_attrs is used as before: one pool, no probes
// (pg's pool replaces connections that fail).
import pg from 'pg';
import { parsePostgresUrl, type PostgresHost, type PostgresTarget } from '../../core/postgres-url.js';

/** What the pool's host selection did, for the node's log and metrics. */
export type FailoverEvent =
  | { kind: 'lost'; host: string; reason: string }
  | { kind: 'switched'; from: string | null; to: string; ms: number }
  | { kind: 'kept'; host: string; ms: number }
  | { kind: 'unavailable'; ms: number; hosts: Record<string, string> };

export interface PrimaryPoolOptions {
  url: string;
  pool: Omit<pg.PoolConfig, 'connectionString' | 'host' | 'port'>;
  /** How long one search for a read-write host may go on. */
  searchTimeoutMs: number;
  /** How long a probe may wait for a host's answer. */
  probeTimeoutMs: number;
  onIdleError?: (err: Error) => void;
  onEvent?: (e: FailoverEvent) => void;
}

/** SQLSTATEs and socket errors that say the server went away or stopped taking writes. */
const LOST_CODES = new Set([
  '57P01',
  '57P02',
  '57P03',
  '25006',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);
const LOST_MESSAGES =
  /Connection terminated|connection error and is not queryable|timeout exceeded when trying to connect|terminating connection/i;

/** Whether an error from a query or a connect means the server in use may no longer be the
 * primary (and another host should be looked for). */
export function isLostPrimary(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (!e) return false;
  const code = typeof e.code === 'string' ? e.code : '';
  if (LOST_CODES.has(code) || code.startsWith('08')) return true;
  return typeof e.message === 'string' && LOST_MESSAGES.test(e.message);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class PrimaryPool {
  readonly target: PostgresTarget;
  /** Whether hosts are probed (several hosts, or target_session_attrs other than `any`). */
  readonly selecting: boolean;
  private current: { host: PostgresHost; pool: pg.Pool } | null = null;
  private search: Promise<void> | null = null;
  private ended = false;

  constructor(private readonly opts: PrimaryPoolOptions) {
    this.target = parsePostgresUrl(opts.url);
    this.selecting = this.target.hosts.length > 1 || this.target.targetSessionAttrs !== 'any';
  }

  /** Open the first pool: on the URL as given, or on the first host that fits (throws when
   * none does within searchTimeoutMs). */
  async start(): Promise<void> {
    if (!this.selecting) {
      this.use(this.target.hosts[0]!, this.opts.url);
      return;
    }
    const found = await this.find();
    if (!found) throw new Error(`no ${this.target.targetSessionAttrs} server among ${this.target.display}`);
  }

  /** The pool to use now (after the search in progress, if any). */
  async pool(): Promise<pg.Pool> {
    if (this.search) await this.search;
    if (!this.current) throw new Error('database pool is not open');
    return this.current.pool;
  }

  /** The pool as it is, without waiting (migrations at start, close). */
  get now(): pg.Pool {
    if (!this.current) throw new Error('database pool is not open');
    return this.current.pool;
  }

  /** Report an error a query met on `pool`; true when the error says the primary was lost and
   * a search for it started, runs, or (the pool being an old one) already switched. */
  noteError(err: unknown, pool?: pg.Pool): boolean {
    if (!this.selecting || this.ended || !isLostPrimary(err)) return false;
    if (pool !== undefined && pool !== this.current?.pool) return true;
    if (!this.search) {
      this.opts.onEvent?.({ kind: 'lost', host: this.current?.host.label ?? '', reason: describe(err) });
      this.search = this.find().then(
        () => undefined,
        () => undefined,
      );
      void this.search.finally(() => (this.search = null));
    }
    return true;
  }

  async end(): Promise<void> {
    this.ended = true;
    await this.search;
    await this.current?.pool.end();
  }

  /** Probe every host until one fits or the search's time is up; switch the pool to it. */
  private async find(): Promise<boolean> {
    const t0 = Date.now();
    const inUse = this.current?.host;
    const order = inUse ? [inUse, ...this.target.hosts.filter((h) => h !== inUse)] : this.target.hosts;
    let pause = 50;
    for (;;) {
      const states = await Promise.all(order.map((h) => this.probe(h)));
      const i = states.indexOf('fits');
      if (i >= 0) {
        const chosen = order[i]!;
        if (chosen === inUse) this.opts.onEvent?.({ kind: 'kept', host: chosen.label, ms: Date.now() - t0 });
        else {
          this.opts.onEvent?.({ kind: 'switched', from: inUse?.label ?? null, to: chosen.label, ms: Date.now() - t0 });
          this.use(chosen, chosen.url);
        }
        return true;
      }
      if (this.ended || Date.now() - t0 + pause > this.opts.searchTimeoutMs) {
        this.opts.onEvent?.({
          kind: 'unavailable',
          ms: Date.now() - t0,
          hosts: Object.fromEntries(order.map((h, j) => [h.label, states[j]!])),
        });
        return false;
      }
      await sleep(pause);
      pause = Math.min(pause * 2, 500);
    }
  }

  /** `fits`, or what the host is instead: `standby`, `read-only`, or why it did not answer. */
  private async probe(host: PostgresHost): Promise<string> {
    const client = new pg.Client({
      connectionString: host.url,
      connectionTimeoutMillis: this.opts.probeTimeoutMs,
      statement_timeout: this.opts.probeTimeoutMs,
      application_name: this.opts.pool.application_name,
    });
    client.on('error', () => undefined); // a probe's connection dying is its answer
    try {
      await client.connect();
      if (this.target.targetSessionAttrs === 'any') return 'fits';
      const r = await client.query<{ recovery: boolean; ro: string }>(
        "SELECT pg_is_in_recovery() AS recovery, current_setting('transaction_read_only') AS ro",
      );
      const row = r.rows[0]!;
      if (row.recovery) return 'standby';
      if (this.target.targetSessionAttrs === 'read-write' && row.ro === 'on') return 'read-only';
      return 'fits';
    } catch (err) {
      return `down: ${describe(err)}`;
    } finally {
      void client.end().catch(() => undefined);
    }
  }

  private use(host: PostgresHost, url: string): void {
    const pool = new pg.Pool({ ...this.opts.pool, connectionString: url });
    // Without a listener an idle connection's error (the server restarting) would crash the
    // process; the pool drops that connection and the next query opens a new one. The error
    // may also be the first sign that the primary is gone.
    pool.on('error', (err) => {
      this.opts.onIdleError?.(err);
      this.noteError(err, pool);
    });
    // A checked-out connection whose server dies between two statements emits its error with
    // no query to take it (and pg gives a checked-out client no listener): an unhandled
    // 'error' would end the process. Its next statement fails and says so to the caller.
    pool.on('connect', (client) => client.on('error', (err) => this.noteError(err, pool)));
    const old = this.current;
    this.current = { host, pool };
    // Clients checked out of the old pool finish (or fail) their work; end() closes the idle
    // ones now and the others as they are released.
    if (old) void old.pool.end().catch(() => undefined);
  }
}

function describe(err: unknown): string {
  const e = err as { code?: string; message?: string } | null;
  return `${e?.code ? `${e.code} ` : ''}${e?.message ?? String(err)}`.slice(0, 200);
}
