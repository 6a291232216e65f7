// N `scribed serve` processes on one fresh PostgreSQL database, each with its own data dir and
// loopback port, behind a real HAProxy running deploy/haproxy.cfg (test/helpers/haproxy.ts):
// the multi-node deployment of docs/scaling.md, in one test. Uses the built CLI (dist/cli.js;
// `npm run build` after changing src; SCRIBED_TEST_CLI=path/to/cli.js runs another build).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { promisify } from 'node:util';
import { freshDatabase } from './postgres-cluster.js';
import { freeLoopbackPort, startHaproxy, type CheckTimings, type Haproxy } from './haproxy.js';

const execFileAsync = promisify(execFile);

export const CLI = process.env.SCRIBED_TEST_CLI ?? path.resolve(import.meta.dirname, '../../dist/cli.js');

/** A log record of a node (pino JSON), or the raw line when it was not JSON. */
export type LogRecord = Record<string, any> & { msg?: string };

export interface ClusterNode {
  /** The server name HAProxy knows it by (node1, node2, ...). */
  name: string;
  port: number;
  /** http://127.0.0.1:PORT: the node itself, bypassing HAProxy. */
  base: string;
  dataDir: string;
  /** The running process; null between a kill and a restart. */
  proc: ChildProcess | null;
  /** Every stdout line of every run of this node, parsed. */
  logs: LogRecord[];
  /** Kill it (default SIGKILL) and wait for it to exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Start it again on the same data dir and port; resolves once it listens. With `cli`, on
   * that build from now on (a rolling upgrade). */
  restart(cli?: string): Promise<void>;
  /** The build it runs (dist/cli.js of a checkout). */
  cli: string;
}

export interface Cluster {
  nodes: ClusterNode[];
  /** HAProxy's frontend, http://127.0.0.1:PORT. */
  url: string;
  haproxy: Haproxy;
  dbUrl: string;
  /** A new account through the operator command (`accounts create --database-url ... --json`). */
  createAccount(characters?: number): Promise<{ accountId: string; accessKey: string }>;
  /** The running node a store's node id names (rt_sessions.owner_node, a job's claimed_by:
   * `<host>-<pid>-<random>`), or null when none of the running nodes has that pid. */
  nodeById(nodeId: string): ClusterNode | null;
  /** Kill every node and HAProxy, drop the database, remove the data dirs. Safe to call twice. */
  stop(): Promise<void>;
}

export interface ClusterOptions {
  /** A PostgreSQL URL the test may CREATE DATABASE from: inject('postgresUrl'). */
  adminUrl?: string;
  /** The nodes' --database-url as is (a database the test made, e.g. a primary and its
   * standby, test/helpers/postgres-replication.ts), instead of a fresh one from adminUrl. */
  databaseUrl?: string;
  nodes?: number;
  /** --max-decoders of each node (default 1: two cores run the whole suite). */
  maxDecoders?: number;
  /** More `serve` flags for every node. */
  extraArgs?: string[];
  /** HAProxy health check timings (default FAST_CHECKS; 'deploy' for the reference file's). */
  checks?: CheckTimings | 'deploy';
  /** How long a node may take to say 'scribed listening' (default 60 s). */
  startTimeoutMs?: number;
  /** Give each node an agent-check port (--agent-port) and HAProxy the reference file's agent
   * checks against them (weights, and a draining node's `drain`). Default false. */
  agents?: boolean;
  /** The build each node runs, by index (default CLI): a cluster of two releases. */
  cliFor?: (index: number) => string;
  /** Nodes (by index) left stopped at start: HAProxy knows them, the test starts them with
   * restart() (a node of a newer release joining after the others migrated the database). */
  startLater?: number[];
}

/** The first and last lines of a long output (an error is often at the top, a stack at the end). */
function excerpt(lines: string[], n: number): string {
  if (lines.length <= n) return lines.join('\n');
  const head = Math.min(10, Math.floor(n / 4));
  return [...lines.slice(0, head), `... (${lines.length - n} lines)`, ...lines.slice(-(n - head))].join('\n');
}

export async function startCluster(opts: ClusterOptions): Promise<Cluster> {
  const count = opts.nodes ?? 3;
  const startTimeoutMs = opts.startTimeoutMs ?? 60_000;
  if (!opts.databaseUrl && !opts.adminUrl) throw new Error('startCluster needs adminUrl or databaseUrl');
  const db = opts.databaseUrl ? { url: opts.databaseUrl, drop: async () => {} } : await freshDatabase(opts.adminUrl!);
  const nodes: ClusterNode[] = [];
  let haproxy: Haproxy | null = null;
  const dirs: string[] = [];

  function makeNode(i: number, port: number, dataDir: string, agentPort: number | null): ClusterNode {
    const args = () => [
      node.cli,
      'serve',
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--data-dir',
      dataDir,
      '--database-url',
      db.url,
      '--max-decoders',
      String(opts.maxDecoders ?? 1),
      ...(agentPort !== null ? ['--agent-port', String(agentPort)] : []),
      ...(opts.extraArgs ?? []),
    ];
    const node: ClusterNode = {
      name: `node${i + 1}`,
      port,
      base: `http://127.0.0.1:${port}`,
      dataDir,
      proc: null,
      logs: [],
      async kill(signal: NodeJS.Signals = 'SIGKILL') {
        const proc = node.proc;
        if (proc === null) return;
        if (proc.exitCode === null && proc.signalCode === null) {
          const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
          proc.kill(signal);
          await exited;
        }
        node.proc = null;
      },
      restart: (cli?: string) => {
        if (cli !== undefined) node.cli = cli;
        return start();
      },
      cli: opts.cliFor?.(i) ?? CLI,
    };
    const start = (): Promise<void> => {
      if (node.proc !== null) return Promise.reject(new Error(`${node.name} is running; kill it first`));
      return new Promise<void>((resolve, reject) => {
        const proc = spawn(process.execPath, args(), {
          stdio: ['ignore', 'pipe', 'pipe'],
          env: { ...process.env, SCRIBED_LOG_LEVEL: 'info' },
        });
        node.proc = proc;
        const stdout: string[] = [];
        const stderr: string[] = [];
        let listening = false;
        const timer = setTimeout(() => {
          if (listening) return;
          proc.kill('SIGKILL');
          reject(
            new Error(
              `${node.name} did not listen within ${startTimeoutMs} ms\n--- stdout ---\n${excerpt(stdout, 20)}\n--- stderr ---\n${excerpt(stderr, 40)}`,
            ),
          );
        }, startTimeoutMs);
        readline.createInterface({ input: proc.stdout! }).on('line', (line) => {
          stdout.push(line);
          if (process.env.SCRIBED_TEST_LOG) process.stderr.write(`[${node.name}] ${line}\n`);
          let rec: LogRecord;
          try {
            rec = JSON.parse(line) as LogRecord;
          } catch {
            rec = { msg: line };
          }
          node.logs.push(rec);
          if (!listening && rec.msg === 'scribed listening') {
            listening = true;
            clearTimeout(timer);
            resolve();
          }
        });
        readline.createInterface({ input: proc.stderr! }).on('line', (line) => {
          stderr.push(line);
          if (process.env.SCRIBED_TEST_LOG) process.stderr.write(`[${node.name}!] ${line}\n`);
        });
        proc.once('exit', (code, signal) => {
          if (node.proc === proc) node.proc = null;
          if (listening) return;
          clearTimeout(timer);
          // Let the readers drain what the process wrote before it died.
          setImmediate(() =>
            reject(
              new Error(
                `${node.name} exited before listening (${code ?? signal})\n--- stdout ---\n${excerpt(stdout, 20)}\n--- stderr ---\n${excerpt(stderr, 40)}`,
              ),
            ),
          );
        });
      });
    };
    nodes.push(node);
    return node;
  }

  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await Promise.allSettled(nodes.map((n) => n.kill('SIGKILL')));
    await haproxy?.stop();
    await db.drop().catch(() => undefined);
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  };

  try {
    const starts: Array<Promise<void>> = [];
    const agentPorts: number[] = [];
    for (let i = 0; i < count; i++) {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `scribed-node${i + 1}-`));
      dirs.push(dataDir);
      const agentPort = opts.agents ? await freeLoopbackPort() : null;
      if (agentPort !== null) agentPorts.push(agentPort);
      const node = makeNode(i, await freeLoopbackPort(), dataDir, agentPort);
      if (!opts.startLater?.includes(i)) starts.push(node.restart());
    }
    // Started together: migrations run under an advisory lock, so concurrent starts are safe.
    const results = await Promise.allSettled(starts);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    haproxy = await startHaproxy({ serverPorts: nodes.map((n) => n.port), checks: opts.checks, ...(opts.agents ? { agentPorts } : {}) });
  } catch (err) {
    await stop();
    throw err;
  }

  return {
    nodes,
    url: haproxy.url,
    haproxy,
    dbUrl: db.url,
    async createAccount(characters = 1_000_000) {
      const { stdout } = await execFileAsync(
        process.execPath,
        [CLI, 'accounts', 'create', '--name', 'cluster-test', '--characters', String(characters), '--json', '--database-url', db.url],
        { encoding: 'utf8' },
      );
      const account = JSON.parse(stdout) as { accountId: string; accessKey: string };
      return { accountId: account.accountId, accessKey: account.accessKey };
    },
    nodeById: (nodeId) => nodes.find((n) => n.proc?.pid !== undefined && nodeId.includes(`-${n.proc.pid}-`)) ?? null,
    stop,
  };
}
