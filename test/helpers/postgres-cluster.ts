// A throwaway PostgreSQL cluster for the test suite: its own data directory in a temp dir, its
// own loopback port, no durability (fsync/synchronous_commit/full_page_writes off), torn down
// with `pg_ctl stop -m immediate`. It never touches a system cluster (e.g. Debian's `main` on
// 5432), which may or may not be running.
//
// initdb and the postmaster refuse to run as root, so under root the binaries run as the
// `postgres` user that the Debian package creates (via runuser) on a directory that user owns;
// as any other user they run directly. No shell anywhere: execFile with argument arrays.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './serve-process.js';

const execFileAsync = promisify(execFile);

export const SUPERUSER = 'scribed';
export const DATABASE = 'scribed_test';
export const RUN_AS = 'postgres';

export interface PostgresCluster {
  /** postgres://scribed@127.0.0.1:PORT/scribed_test */
  url: string;
  stop(): Promise<void>;
}

/** The newest /usr/lib/postgresql/<version>/bin holding initdb, or undefined. */
export function findPostgresBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  let versions: string[];
  try {
    versions = fs.readdirSync(root);
  } catch {
    return undefined;
  }
  const found = versions
    .filter((v) => /^\d+(\.\d+)?$/.test(v) && fs.existsSync(path.join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number.parseFloat(b) - Number.parseFloat(a));
  return found.length > 0 ? path.join(root, found[0]!, 'bin') : undefined;
}

/** A free loopback TCP port (test/helpers/serve-process.ts). */
export const freeLoopbackPort = freePort;

export const isRoot = (): boolean => typeof process.getuid === 'function' && process.getuid() === 0;

/** util-linux runuser lives in /usr/sbin, which is not on every PATH. */
const runuserPath = (): string => ['/usr/sbin/runuser', '/sbin/runuser'].find((p) => fs.existsSync(p)) ?? 'runuser';

export async function lookupUser(name: string): Promise<{ uid: number; gid: number }> {
  let out: string;
  try {
    ({ stdout: out } = await execFileAsync('getent', ['passwd', name]));
  } catch {
    throw new Error(
      `running as root, PostgreSQL must run as the '${name}' user, which does not exist; run scripts/setup.sh (installs the postgresql package)`,
    );
  }
  const fields = out.trim().split(':');
  return { uid: Number(fields[2]), gid: Number(fields[3]) };
}

/** Whether every ancestor of dir lets "others" traverse it (so the postgres user can reach it). */
export function traversableByOthers(dir: string): boolean {
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    try {
      if ((fs.statSync(d).mode & 0o001) === 0) return false;
    } catch {
      return false;
    }
    if (path.dirname(d) === d) return true;
  }
}

/** Run a PostgreSQL binary: as the postgres user when we are root, directly otherwise. */
export async function runPg(binDir: string, tool: string, args: string[], cwd: string): Promise<string> {
  const bin = path.join(binDir, tool);
  const [file, argv] = isRoot() ? [runuserPath(), ['-u', RUN_AS, '--', bin, ...args]] : [bin, args];
  try {
    // cwd: the postgres user cannot necessarily read the repo directory; pg_ctl wants a usable cwd.
    const { stdout } = await execFileAsync(file, argv, { cwd, env: { ...process.env, LC_ALL: 'C' }, maxBuffer: 16 << 20 });
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; message: string };
    throw new Error(`${tool} ${args.join(' ')} failed: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`);
  }
}

export async function waitForConnections(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      await client.end();
      return;
    } catch (err) {
      await client.end().catch(() => {});
      if (Date.now() > deadline) throw new Error(`PostgreSQL at ${url} did not accept connections: ${(err as Error).message}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

export function readLogTail(logFile: string): string {
  try {
    return fs.readFileSync(logFile, 'utf8').split('\n').slice(-30).join('\n');
  } catch {
    return '(no log)';
  }
}

export async function startPostgresCluster(): Promise<PostgresCluster> {
  const binDir = findPostgresBinDir();
  if (!binDir) {
    throw new Error(
      'PostgreSQL server binaries not found (no /usr/lib/postgresql/*/bin/initdb). The test suite needs them: ' +
        'run scripts/setup.sh (installs the Debian postgresql package), or set SCRIBED_TEST_DATABASE_URL to an existing server.',
    );
  }
  const root = isRoot();
  const owner = root ? await lookupUser(RUN_AS) : undefined;

  // Under root the postgres user must be able to reach the temp dir; a root-only TMPDIR would not do.
  const base = !root || traversableByOthers(os.tmpdir()) ? os.tmpdir() : '/tmp';
  const dir = fs.mkdtempSync(path.join(base, 'scribed-pg-')); // mode 0700
  const dataDir = path.join(dir, 'data');
  const logFile = path.join(dir, 'postgres.log');
  const removeDir = () => fs.rmSync(dir, { recursive: true, force: true });

  try {
    if (owner) fs.chownSync(dir, owner.uid, owner.gid);

    await runPg(
      binDir,
      'initdb',
      ['-D', dataDir, '-A', 'trust', '-U', SUPERUSER, '--no-sync', '-E', 'UTF8', '--locale=C', '--no-instructions'],
      dir,
    );

    let lastError: unknown;
    // The port is free when we pick it but another process may take it before the postmaster binds:
    // retry with a fresh port.
    for (let attempt = 0; attempt < 5; attempt++) {
      const port = await freeLoopbackPort();
      // postgresql.auto.conf is read last and overrides postgresql.conf. Writing to the existing
      // file keeps its owner (postgres) and mode.
      fs.writeFileSync(
        path.join(dataDir, 'postgresql.auto.conf'),
        [
          `listen_addresses = '127.0.0.1'`,
          `port = ${port}`,
          `unix_socket_directories = '${dir.replace(/'/g, "''")}'`,
          `fsync = off`,
          `synchronous_commit = off`,
          `full_page_writes = off`,
          `max_connections = 200`,
          '',
        ].join('\n'),
      );
      try {
        // -w: wait until the server reports it is ready to accept connections.
        await runPg(binDir, 'pg_ctl', ['start', '-D', dataDir, '-l', logFile, '-w', '-t', '60', '-s'], dir);
      } catch (err) {
        lastError = new Error(`${(err as Error).message}\n--- postgres.log ---\n${readLogTail(logFile)}`);
        // If it did start after all (e.g. pg_ctl timed out), make sure it is gone before retrying.
        await runPg(binDir, 'pg_ctl', ['stop', '-D', dataDir, '-m', 'immediate', '-s'], dir).catch(() => {});
        continue;
      }
      const serverUrl = `postgres://${SUPERUSER}@127.0.0.1:${port}`;
      try {
        await waitForConnections(`${serverUrl}/postgres`, 30_000);
        const admin = new pg.Client({ connectionString: `${serverUrl}/postgres` });
        await admin.connect();
        try {
          await admin.query(`CREATE DATABASE ${DATABASE}`);
        } finally {
          await admin.end();
        }
      } catch (err) {
        await runPg(binDir, 'pg_ctl', ['stop', '-D', dataDir, '-m', 'immediate', '-s'], dir).catch(() => {});
        throw err;
      }
      let stopped = false;
      return {
        url: `${serverUrl}/${DATABASE}`,
        async stop() {
          if (stopped) return;
          stopped = true;
          try {
            await runPg(binDir, 'pg_ctl', ['stop', '-D', dataDir, '-m', 'immediate', '-s'], dir);
          } finally {
            removeDir();
          }
        },
      };
    }
    throw lastError;
  } catch (err) {
    removeDir();
    throw err;
  }
}

const quoteIdent = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/**
 * A new, empty, uniquely named database on the server behind adminUrl (any database there that
 * the user may connect to and CREATE DATABASE from). drop() ends its connections and drops it.
 */
export async function freshDatabase(adminUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `scribed_t_${process.pid}_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${quoteIdent(name)}`);
  } finally {
    await admin.end();
  }
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  let dropped = false;
  return {
    url: u.toString(),
    async drop() {
      if (dropped) return;
      dropped = true;
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      try {
        await c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
        await c.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)}`);
      } finally {
        await c.end();
      }
    },
  };
}
