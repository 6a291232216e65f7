// A throwaway PostgreSQL primary with a synchronous streaming standby, for failover tests: the
// set-up docs/scaling.md ("Database failover") describes, on loopback ports of their own.
//
// The primary is initdb'd like the suite's cluster (postgres-cluster.ts) but keeps commits
// synchronous (`synchronous_commit = on` with `synchronous_standby_names = '*'`: a commit
// returns once the standby has the WAL); the standby is `pg_basebackup -R` of it (streaming,
// `primary_conninfo` written by -R). fsync stays off: the test kills processes, not the machine,
// so the page cache survives. synchronous_standby_names is set on the primary after the base
// backup, so the standby does not inherit it and commits on it go on once it is promoted alone.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import {
  DATABASE,
  RUN_AS,
  SUPERUSER,
  findPostgresBinDir,
  freeLoopbackPort,
  isRoot,
  lookupUser,
  readLogTail,
  runPg,
  traversableByOthers,
  waitForConnections,
} from './postgres-cluster.js';

export interface PostgresServer {
  port: number;
  dataDir: string;
  /** postgres://scribed@127.0.0.1:PORT/scribed_test (this server alone). */
  url: string;
}

export interface ReplicatedPostgres {
  primary: PostgresServer;
  standby: PostgresServer;
  /** Both hosts, libpq style: `postgres://scribed@127.0.0.1:P1,127.0.0.1:P2/scribed_test?target_session_attrs=read-write`. */
  url: string;
  /** kill -9 the primary's postmaster and every process of it (as a host dying would). */
  killPrimary(): Promise<void>;
  /** `pg_ctl promote -w` on the standby: it ends recovery and takes writes. */
  promoteStandby(): Promise<void>;
  stop(): Promise<void>;
}

/** The postmaster's pid (first line of postmaster.pid). */
function postmasterPid(dataDir: string): number {
  return Number(fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
}

/** Direct children of pid, from /proc. */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

export async function startReplicatedPostgres(): Promise<ReplicatedPostgres> {
  const binDir = findPostgresBinDir();
  if (!binDir) throw new Error('PostgreSQL server binaries not found (no /usr/lib/postgresql/*/bin/initdb): run scripts/setup.sh');
  const root = isRoot();
  const owner = root ? await lookupUser(RUN_AS) : undefined;
  const base = !root || traversableByOthers(os.tmpdir()) ? os.tmpdir() : '/tmp';
  const dir = fs.mkdtempSync(path.join(base, 'scribed-pgrepl-'));
  if (owner) fs.chownSync(dir, owner.uid, owner.gid);
  const primaryDir = path.join(dir, 'primary');
  const standbyDir = path.join(dir, 'standby');
  const [p1, p2] = [await freeLoopbackPort(), await freeLoopbackPort()];
  const serverUrl = (port: number) => `postgres://${SUPERUSER}@127.0.0.1:${port}`;
  const pgctl = (args: string[]) => runPg(binDir, 'pg_ctl', args, dir);
  const started: string[] = [];
  const stopAll = async () => {
    for (const d of started) await pgctl(['stop', '-D', d, '-m', 'immediate', '-s']).catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
  };
  const start = async (dataDir: string, name: string) => {
    const log = path.join(dir, `${name}.log`);
    try {
      await pgctl(['start', '-D', dataDir, '-l', log, '-w', '-t', '60', '-s']);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n--- ${name}.log ---\n${readLogTail(log)}`);
    }
    started.push(dataDir);
  };

  try {
    await runPg(
      binDir,
      'initdb',
      ['-D', primaryDir, '-A', 'trust', '-U', SUPERUSER, '--no-sync', '-E', 'UTF8', '--locale=C', '--no-instructions'],
      dir,
    );
    // initdb's pg_hba.conf with -A trust lets loopback replication connections in.
    fs.writeFileSync(
      path.join(primaryDir, 'postgresql.auto.conf'),
      [
        `listen_addresses = '127.0.0.1'`,
        `port = ${p1}`,
        `unix_socket_directories = '${dir.replace(/'/g, "''")}'`,
        `fsync = off`,
        `synchronous_commit = on`,
        `full_page_writes = on`,
        `wal_level = replica`,
        `max_wal_senders = 5`,
        `max_connections = 200`,
        '',
      ].join('\n'),
    );
    await start(primaryDir, 'primary');
    await waitForConnections(`${serverUrl(p1)}/postgres`, 30_000);
    const admin = new pg.Client({ connectionString: `${serverUrl(p1)}/postgres` });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE ${DATABASE}`);
    } finally {
      await admin.end();
    }

    // -R: standby.signal and primary_conninfo; -X stream: the WAL written during the copy too.
    await runPg(
      binDir,
      'pg_basebackup',
      ['-D', standbyDir, '-R', '-X', 'stream', '-c', 'fast', '--no-sync', '-h', '127.0.0.1', '-p', String(p1), '-U', SUPERUSER],
      dir,
    );
    // Its own port (a later line of postgresql.auto.conf wins).
    fs.appendFileSync(path.join(standbyDir, 'postgresql.auto.conf'), `port = ${p2}\n`);
    await start(standbyDir, 'standby');
    await waitForConnections(`${serverUrl(p2)}/postgres`, 30_000);

    // Now commits wait for the standby.
    const c = new pg.Client({ connectionString: `${serverUrl(p1)}/postgres` });
    await c.connect();
    try {
      await c.query(`ALTER SYSTEM SET synchronous_standby_names = '*'`);
      await c.query('SELECT pg_reload_conf()');
      const deadline = Date.now() + 30_000;
      for (;;) {
        const r = await c.query<{ n: string }>("SELECT COUNT(*)::text AS n FROM pg_stat_replication WHERE sync_state = 'sync'");
        if (r.rows[0]!.n === '1') break;
        if (Date.now() > deadline) throw new Error('the standby did not become synchronous');
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      await c.end();
    }
  } catch (err) {
    await stopAll();
    throw err;
  }

  let stopped = false;
  return {
    primary: { port: p1, dataDir: primaryDir, url: `${serverUrl(p1)}/${DATABASE}` },
    standby: { port: p2, dataDir: standbyDir, url: `${serverUrl(p2)}/${DATABASE}` },
    url: `postgres://${SUPERUSER}@127.0.0.1:${p1},127.0.0.1:${p2}/${DATABASE}?target_session_attrs=read-write`,
    async killPrimary() {
      const pid = postmasterPid(primaryDir);
      const children = childrenOf(pid);
      process.kill(pid, 'SIGKILL');
      for (const child of children) {
        try {
          process.kill(child, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      started.splice(started.indexOf(primaryDir), 1);
    },
    async promoteStandby() {
      await pgctl(['promote', '-D', standbyDir, '-w', '-t', '60', '-s']);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await stopAll();
    },
  };
}
