// The database URL of the shared store, read the way libpq reads it where node-postgres does
// not: a list of hosts (`postgres://user@h1:5432,h2:5432/db?target_session_attrs=read-write`),
// as operators write it for a primary and its standby. node-postgres (`pg`) connects to one
// host per connection string, so the store's driver (src/store/sql/postgres-primary.ts) picks
// the host itself; this module only splits the URL into one single-host URL per host, in the
// order given, and reads which kind of server the caller wants.
//
// Hand-written rather than through a URL library: the WHATWG URL parser refuses a
// comma-separated host list, and pg-connection-string keeps only the first host.

/** What a connection must be, as libpq's `target_session_attrs`: `any` takes the first host
 * that answers; `read-write` and `primary` the first that accepts writes (not a standby in
 * recovery, not read-only by default). */
export type TargetSessionAttrs = 'any' | 'read-write' | 'primary';

export interface PostgresHost {
  host: string;
  port: number;
  /** This host alone: the URL as given with its host list replaced by this host and without
   * target_session_attrs (which pg does not know). */
  url: string;
  /** `host:port`, for logs and metrics (no user, no password). */
  label: string;
}

export interface PostgresTarget {
  hosts: PostgresHost[];
  targetSessionAttrs: TargetSessionAttrs;
  /** `postgres://USER@HOST:PORT,HOST:PORT/DB`: never the password or the parameters. */
  display: string;
}

const DEFAULT_PORT = 5432;
const ATTRS: readonly TargetSessionAttrs[] = ['any', 'read-write', 'primary'];

/** Split a postgres:// URL into its hosts. Throws on a URL it cannot read. */
export function parsePostgresUrl(url: string): PostgresTarget {
  const m = /^(postgres(?:ql)?:\/\/)([^@/?#]*@)?([^/?#]*)([^?#]*)(\?[^#]*)?(#.*)?$/.exec(url);
  if (!m) throw new Error('not a postgres:// or postgresql:// URL');
  const scheme = m[1]!;
  const userinfo = m[2] ?? '';
  const hostList = m[3] ?? '';
  const path = m[4] ?? '';
  const query = m[5] ?? '';
  const params = new URLSearchParams(query.slice(1));
  const attrs = params.get('target_session_attrs') ?? 'any';
  if (!(ATTRS as readonly string[]).includes(attrs)) {
    throw new Error(`target_session_attrs=${attrs} is not supported (use ${ATTRS.join(', ')})`);
  }
  params.delete('target_session_attrs');
  const rest = `${path}${params.size > 0 ? `?${params.toString()}` : ''}`;
  const entries = hostList.split(',');
  if (entries.some((e) => e === '') && entries.length > 1) throw new Error('empty host in the host list');
  const hosts = entries.map((entry) => {
    const hm = /^(\[[^\]]+\]|[^:[\]]*)(?::(\d*))?$/.exec(entry);
    if (!hm) throw new Error(`unreadable host "${entry}"`);
    const host = hm[1]!;
    const port = hm[2] ? Number(hm[2]) : DEFAULT_PORT;
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`bad port in "${entry}"`);
    const label = `${host || 'localhost'}:${port}`;
    return { host, port, label, url: `${scheme}${userinfo}${host}${hm[2] ? `:${port}` : ''}${rest}` };
  });
  const user = userinfo ? decodeURIComponent(userinfo.slice(0, -1).split(':')[0]!) : '';
  const display = `postgres://${user ? `${user}@` : ''}${hosts.map((h) => h.label).join(',')}${path}`;
  return { hosts, targetSessionAttrs: attrs as TargetSessionAttrs, display };
}
