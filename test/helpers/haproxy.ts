// A real HAProxy in front of test nodes, running the operators' reference config
// (deploy/haproxy.cfg) with only what a test must change rewritten: the global section (no
// chroot, user, system log or /run socket, one thread, a small maxconn: it runs in the
// foreground as the test's user, logging to its stdout), the bind addresses (free loopback
// ports), the server lines (the given node ports), a response header naming the node that
// served (test only) and, unless asked for the deploy timings, faster health checks. The agent
// checks (agent-check) go to the given agent ports, one per node, or are left out when the test
// gives none. The runtime API listens on a socket in the temp dir. Nothing outside its own temp
// dir is touched.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { promisify } from 'node:util';
import { freePort } from './serve-process.js';

const execFileAsync = promisify(execFile);

export const DEPLOY_HAPROXY_CFG = path.resolve(import.meta.dirname, '../../deploy/haproxy.cfg');

/** Health check timings of a `default-server` line. */
export interface CheckTimings {
  inter: string;
  fall: number;
  rise: number;
}

/** The tests' timings: a node leaves or rejoins the pools within one 200 ms check. */
export const FAST_CHECKS: CheckTimings = { inter: '200ms', fall: 1, rise: 1 };

export interface HaproxyConfigOptions {
  /** Frontend (traffic) port on 127.0.0.1. */
  port: number;
  /** Stats page port on 127.0.0.1. */
  statsPort: number;
  /** One server per node port (127.0.0.1), named node1, node2, ... in every backend. */
  serverPorts: number[];
  /** 'deploy' keeps the reference file's own timings. Default FAST_CHECKS. */
  checks?: CheckTimings | 'deploy';
  /** Add `X-Scribed-Node: <server name>` to every response (test only). Default true. */
  nodeHeader?: boolean;
  /** Send HAProxy's log (one line per request) to its stdout. Default true. */
  log?: boolean;
  /** Each node's agent-check port (same order as serverPorts); without them the reference
   * file's agent checks are left out. */
  agentPorts?: number[];
  /** Path of the runtime API's UNIX socket (`stats socket`), if any. */
  runtimeSocket?: string;
  /** Terminate TLS on the frontend with this PEM file (certificate and key), as the reference
   * file's commented `bind :443 ssl crt` line does. */
  tlsPem?: string;
}

/** The haproxy binary: PATH, else Debian's /usr/sbin (not on every user's PATH). */
export function haproxyBinary(): string {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir && fs.existsSync(path.join(dir, 'haproxy'))) return path.join(dir, 'haproxy');
  }
  return fs.existsSync('/usr/sbin/haproxy') ? '/usr/sbin/haproxy' : 'haproxy';
}

/** `haproxy -c -f file`: whether the file is valid, and what haproxy said (warnings included). */
export async function checkHaproxyConfig(file: string): Promise<{ ok: boolean; output: string }> {
  try {
    const { stdout, stderr } = await execFileAsync(haproxyBinary(), ['-c', '-f', file], { encoding: 'utf8' });
    return { ok: true, output: `${stdout}${stderr}` };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    return { ok: false, output: `${e.stdout ?? ''}${e.stderr ?? ''}` || e.message };
  }
}

const SECTION = /^(global|defaults|frontend|backend|listen|peers|resolvers|userlist|program|http-errors|ring|cache|mailers)\b/;
/** Global settings that name system paths or users, or daemonize: not for a test process. */
const SYSTEM_GLOBALS = /^(log|chroot|user|group|uid|gid|daemon|pidfile|stats\s+socket|master-worker|nbthread|cpu-map|maxconn)\b/;

/**
 * The test config derived from the reference file's text. Sections are kept in order; only
 * the lines named in the header comment change. Own-line comments and blank lines are dropped
 * (the reference file has no trailing comments on directive lines).
 */
export function haproxyTestConfig(reference: string, o: HaproxyConfigOptions): string {
  const checks = o.checks ?? FAST_CHECKS;
  const out: string[] = [];
  let section = '';
  let servers: string[] = [];
  let agent = false;
  const flush = (): void => {
    if (section.startsWith('backend ')) {
      if (o.nodeHeader !== false) out.push('    http-response set-header X-Scribed-Node %s');
      o.serverPorts.forEach((port, i) =>
        out.push(`    server node${i + 1} 127.0.0.1:${port}${agent && o.agentPorts ? ` agent-port ${o.agentPorts[i]}` : ''}`),
      );
      if (servers.length === 0) throw new Error(`${section}: the reference config lists no servers`);
    }
    servers = [];
    agent = false;
  };
  for (const raw of reference.split('\n')) {
    const trimmed = raw.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    if (SECTION.test(raw)) {
      flush();
      section = trimmed;
      out.push(trimmed);
      if (section === 'global') {
        // One thread; and a maxconn whose file descriptors fit a test user's limit (the
        // reference's 20000 needs 40000 descriptors, which only a service unit grants).
        out.push('    nbthread 1', '    maxconn 1000');
        if (o.log !== false) out.push('    log stdout format raw local0 info');
        if (o.runtimeSocket) out.push(`    stats socket ${o.runtimeSocket} mode 600 level admin`);
      }
      continue;
    }
    if (section === 'global' && SYSTEM_GLOBALS.test(trimmed)) continue;
    if (/^bind\s/.test(trimmed)) {
      const stats = section.startsWith('listen stats');
      out.push(`    bind 127.0.0.1:${stats ? o.statsPort : o.port}${!stats && o.tlsPem ? ` ssl crt ${o.tlsPem} alpn http/1.1` : ''}`);
      continue;
    }
    if (/^server\s/.test(trimmed)) {
      servers.push(trimmed);
      continue;
    }
    if (/^default-server\s/.test(trimmed)) {
      agent = /\bagent-check\b/.test(trimmed) && o.agentPorts !== undefined;
      // No agents in this test: the checks would knock on the reference file's port.
      let line = agent ? trimmed : trimmed.replace(/\s+agent-(check|port\s+\S+|inter\s+\S+)/g, '');
      if (checks !== 'deploy') {
        line = line
          .replace(/(^|\s)inter\s+\S+/, `$1inter ${checks.inter}`)
          .replace(/\bagent-inter\s+\S+/, `agent-inter ${checks.inter}`)
          .replace(/\bfall\s+\d+/, `fall ${checks.fall}`)
          .replace(/\brise\s+\d+/, `rise ${checks.rise}`);
        if (!/(^|\s)inter\b/.test(line) || !/\bfall\b/.test(line) || !/\brise\b/.test(line))
          throw new Error(`unexpected default-server line: ${trimmed}`);
      }
      out.push(`    ${line}`);
      continue;
    }
    out.push(`    ${trimmed}`);
  }
  flush();
  // Binding twice to the same port would be silently wrong; the frontend must have had a bind.
  if (!out.some((l) => l.startsWith(`    bind 127.0.0.1:${o.port}`))) throw new Error('the reference config has no frontend bind line');
  return `${out.join('\n')}\n`;
}

/** One row of the stats CSV: a frontend, backend or server, keyed by the CSV's column names. */
export type StatsRow = Record<string, string>;

export interface Haproxy {
  /** http://127.0.0.1:PORT (https:// with tlsPem): the frontend. */
  url: string;
  port: number;
  /** The stats page (`;csv` appended gives the CSV). */
  statsUrl: string;
  configFile: string;
  /** HAProxy's own output lines (request log, server state changes, alerts). */
  logs: string[];
  proc: ChildProcess;
  /** Stats rows of the servers of one backend, by server name. */
  servers(backend: string): Promise<Record<string, StatsRow>>;
  /** One command on the runtime API (`get weight scribed_live/node1`, `show servers state`): its answer. */
  runtime(command: string): Promise<string>;
  /** Polls (every 50 ms) until server `name` of `backend` has a status starting with `status`
   * (e.g. 'UP', 'DOWN'); resolves with the milliseconds it took. */
  waitForServer(backend: string, name: string, status: string, timeoutMs?: number): Promise<number>;
  stop(): Promise<void>;
}

/** A free loopback TCP port (test/helpers/serve-process.ts). */
export const freeLoopbackPort = freePort;

function parseCsv(text: string): StatsRow[] {
  const lines = text.split('\n').filter((l) => l.length > 0);
  const header = lines[0]!.replace(/^# /, '').split(',');
  return lines.slice(1).map((line) => {
    const cells = line.split(',');
    return Object.fromEntries(header.map((h, i) => [h, cells[i] ?? '']));
  });
}

export interface StartHaproxyOptions {
  serverPorts: number[];
  checks?: CheckTimings | 'deploy';
  nodeHeader?: boolean;
  /** Each node's agent-check port; without them the agent checks are left out. */
  agentPorts?: number[];
  /** Defaults to deploy/haproxy.cfg. */
  referenceFile?: string;
  /** Terminate TLS on the frontend (testCertificate()); `url` is then https://. */
  tlsPem?: string;
}

export interface TestCertificate {
  /** Certificate and key in one file, for `bind ... ssl crt`. */
  pemFile: string;
  /** The certificate alone: what a client trusts (NODE_EXTRA_CA_CERTS). */
  certFile: string;
}

/** A self-signed certificate for 127.0.0.1 (its own CA), made with openssl in `dir`. */
export async function testCertificate(dir: string): Promise<TestCertificate> {
  const keyFile = path.join(dir, 'test.key');
  const certFile = path.join(dir, 'test.crt');
  await execFileAsync('openssl', [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=127.0.0.1',
    '-addext',
    'subjectAltName=IP:127.0.0.1',
    '-keyout',
    keyFile,
    '-out',
    certFile,
  ]);
  const pemFile = path.join(dir, 'test.pem');
  fs.writeFileSync(pemFile, `${fs.readFileSync(certFile, 'utf8')}${fs.readFileSync(keyFile, 'utf8')}`, { mode: 0o600 });
  return { pemFile, certFile };
}

/** Start haproxy in the foreground (-db) on free loopback ports; resolves once the frontend
 * and the stats page answer and every server has been checked once. */
export async function startHaproxy(opts: StartHaproxyOptions): Promise<Haproxy> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-haproxy-'));
  const [port, statsPort] = [await freeLoopbackPort(), await freeLoopbackPort()];
  const configFile = path.join(dir, 'haproxy.cfg');
  const reference = fs.readFileSync(opts.referenceFile ?? DEPLOY_HAPROXY_CFG, 'utf8');
  const backends = [...reference.matchAll(/^backend\s+(\S+)/gm)].map((m) => m[1]!);
  const runtimeSocket = path.join(dir, 'admin.sock');
  fs.writeFileSync(
    configFile,
    haproxyTestConfig(reference, {
      port,
      statsPort,
      serverPorts: opts.serverPorts,
      checks: opts.checks,
      nodeHeader: opts.nodeHeader,
      agentPorts: opts.agentPorts,
      runtimeSocket,
      tlsPem: opts.tlsPem,
    }),
  );

  const proc = spawn(haproxyBinary(), ['-db', '-f', configFile], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: string[] = [];
  const collect = (line: string): void => {
    logs.push(line);
    if (process.env.SCRIBED_TEST_LOG) process.stderr.write(`[haproxy] ${line}\n`);
  };
  readline.createInterface({ input: proc.stdout! }).on('line', collect);
  readline.createInterface({ input: proc.stderr! }).on('line', collect);
  let exited: string | null = null;
  const exit = new Promise<void>((resolve) =>
    proc.once('exit', (code, signal) => {
      exited = `${code ?? signal}`;
      resolve();
    }),
  );

  const url = `${opts.tlsPem ? 'https' : 'http'}://127.0.0.1:${port}`;
  const statsUrl = `http://127.0.0.1:${statsPort}/`;
  const servers = async (backend: string): Promise<Record<string, StatsRow>> => {
    const res = await fetch(`${statsUrl};csv`);
    if (res.status !== 200) throw new Error(`haproxy stats answered ${res.status}`);
    const rows = parseCsv(await res.text()).filter((r) => r.pxname === backend && r.svname !== 'FRONTEND' && r.svname !== 'BACKEND');
    return Object.fromEntries(rows.map((r) => [r.svname!, r]));
  };
  const waitForServer = async (backend: string, name: string, status: string, timeoutMs = 10_000): Promise<number> => {
    const t0 = performance.now();
    for (;;) {
      const row = (await servers(backend))[name];
      if (row === undefined) throw new Error(`no server ${backend}/${name}`);
      if (row.status!.startsWith(status)) return performance.now() - t0;
      if (performance.now() - t0 > timeoutMs)
        throw new Error(`${backend}/${name} not ${status} within ${timeoutMs} ms (is ${row.status}, check ${row.check_status})`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const runtime = (command: string): Promise<string> =>
    new Promise((resolve, reject) => {
      const socket = net.connect(runtimeSocket);
      let answer = '';
      socket.setEncoding('utf8');
      socket.on('data', (d: string) => (answer += d));
      socket.on('end', () => resolve(answer));
      socket.on('error', reject);
      socket.write(`${command}\n`);
    });
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    if (exited === null) {
      proc.kill('SIGTERM'); // hard stop: closes every connection at once
      const t = setTimeout(() => proc.kill('SIGKILL'), 3000);
      await exit;
      clearTimeout(t);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };

  try {
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (exited !== null) throw new Error(`haproxy exited (${exited}):\n${logs.join('\n')}`);
      try {
        const rows = (await Promise.all(backends.map(servers))).flatMap((r) => Object.values(r));
        // Listening (the stats page answered), and each server's first check is done.
        if (rows.length > 0 && rows.every((r) => r.check_status !== '' && !r.check_status!.startsWith('INI'))) break;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`haproxy did not come up within 10 s:\n${logs.join('\n')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { url, port, statsUrl, configFile, logs, proc, servers, runtime, waitForServer, stop };
}
