// The built CLI (`dist/cli.js`, `npm run build:ts`) in processes of its own, as an operator
// runs it: `scribed serve` on a port (fixed, for tests that kill and restart it on the same
// data dir, or ephemeral), the operator commands against its data dir, and any other command
// (`scribed rtp`, `scribed stream`) with its JSON log lines collected to wait on.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import dgram from 'node:dgram';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';

export const CLI = path.resolve(import.meta.dirname, '../../dist/cli.js');

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** `n` distinct free UDP ports, found by binding port 0 together (released before use). */
export async function freeUdpPorts(n: number): Promise<number[]> {
  const sockets = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<dgram.Socket>((resolve) => {
          const s = dgram.createSocket('udp4');
          s.bind(0, '127.0.0.1', () => resolve(s));
        }),
    ),
  );
  const ports = sockets.map((s) => s.address().port);
  await Promise.all(sockets.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  return ports;
}

export async function freeUdpPort(): Promise<number> {
  return (await freeUdpPorts(1))[0]!;
}

export interface ServeProcess {
  proc: ChildProcess;
  /** `http://127.0.0.1:<port>`, as the server logged it. */
  base: string;
  /** Every line the server logged on stdout (JSON), in order, still growing. */
  logs: string[];
}

export interface ServeOptions {
  /** 0 (the default): an ephemeral port, read back from the server's log. */
  port?: number;
  /** Collects the process for cleanup; it leaves the set when it exits. */
  children?: Set<ChildProcess>;
  /** After the defaults (`--max-decoders 2`); a flag given again here wins. */
  args?: string[];
}

/** Start `scribed serve`; resolves once it listens, rejects if it exits first. */
export function startServe(dataDir: string, opts: ServeOptions = {}): Promise<ServeProcess> {
  const port = opts.port ?? 0;
  return new Promise((resolve, reject) => {
    const proc = spawn(
      process.execPath,
      [CLI, 'serve', '--port', String(port), '--data-dir', dataDir, '--max-decoders', '2', ...(opts.args ?? [])],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
        env: { ...process.env, SCRIBED_LOG_LEVEL: 'info' },
      },
    );
    opts.children?.add(proc);
    proc.once('exit', () => opts.children?.delete(proc));
    const logs: string[] = [];
    readline.createInterface({ input: proc.stdout! }).on('line', (line) => {
      if (process.env.SCRIBED_TEST_LOG) process.stderr.write(`[serve] ${line}\n`);
      logs.push(line);
      const rec = JSON.parse(line) as { msg?: string; address?: string };
      if (rec.msg === 'scribed listening') resolve({ proc, base: rec.address ?? `http://127.0.0.1:${port}`, logs });
    });
    proc.once('exit', (code, signal) => reject(new Error(`serve exited early (${code ?? signal})`)));
  });
}

/** Start `scribed serve` on `port`; resolves once it listens. `children` collects it for cleanup. */
export async function serve(dataDir: string, port: number, children: Set<ChildProcess>, extraArgs: string[] = []): Promise<ChildProcess> {
  return (await startServe(dataDir, { port, children, args: extraArgs })).proc;
}

/** `scribed accounts create` on the data dir; the new account's access key. */
export function createAccount(dataDir: string, opts: { name?: string; characters?: number } = {}): string {
  const args = [
    'accounts',
    'create',
    '--name',
    opts.name ?? 'ingest',
    '--characters',
    String(opts.characters ?? 1_000_000),
    '--json',
    '--data-dir',
    dataDir,
  ];
  const out = execFileSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });
  return (JSON.parse(out) as { accessKey: string }).accessKey;
}

/** SIGKILL, and wait until the process is gone. */
export async function kill9(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGKILL');
  await exited;
}

export type LogLine = Record<string, any>;

export interface CliProcess {
  proc: ChildProcess;
  /** The JSON log lines, parsed, in order (a line that is not JSON as `{raw: line}`). */
  lines: LogLine[];
  /** With the log on stderr: stdout's lines (a command's output, e.g. transcripts). */
  stdout: string[];
  /** Its exit code (null: ended by a signal). */
  exited: Promise<number | null>;
  /** Everything it wrote on either stream so far. */
  output(): string;
  /** The first log line matching `pred`; throws when none came within `timeoutMs` or the
   * process exited without one. */
  waitFor(pred: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
}

export interface CliOptions {
  /** Collects the process for cleanup; it leaves the set when it exits. */
  children?: Set<ChildProcess>;
  /** Where the command logs: stderr (rtp, stream: their stdout is output) or stdout (serve). */
  logStream?: 'stdout' | 'stderr';
  /** Added to the test's environment (with SCRIBED_LOG_LEVEL=info); undefined removes a name. */
  env?: Record<string, string | undefined>;
}

/** Run `scribed <args>` in a process of its own, its log lines collected to wait on. */
export function spawnCli(args: string[], opts: CliOptions = {}): CliProcess {
  const env: NodeJS.ProcessEnv = { ...process.env, SCRIBED_LOG_LEVEL: 'info' };
  for (const [k, v] of Object.entries(opts.env ?? {})) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  const proc = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
  opts.children?.add(proc);
  const logStream = opts.logStream ?? 'stderr';
  const lines: LogLine[] = [];
  const stdout: string[] = [];
  const waiters: Array<() => void> = [];
  let output = '';
  const label = `[${args[0] ?? 'cli'}]`;
  readline.createInterface({ input: logStream === 'stdout' ? proc.stdout! : proc.stderr! }).on('line', (line) => {
    if (process.env.SCRIBED_TEST_LOG) process.stderr.write(`${label} ${line}\n`);
    output += `${line}\n`;
    try {
      lines.push(JSON.parse(line) as LogLine);
    } catch {
      lines.push({ raw: line });
    }
    waiters.splice(0).forEach((w) => w());
  });
  readline.createInterface({ input: logStream === 'stdout' ? proc.stderr! : proc.stdout! }).on('line', (line) => {
    output += `${line}\n`;
    if (logStream === 'stderr') stdout.push(line);
  });
  const exited = new Promise<number | null>((resolve) =>
    proc.once('exit', (code) => {
      opts.children?.delete(proc);
      resolve(code);
    }),
  );
  return {
    proc,
    lines,
    stdout,
    exited,
    output: () => output,
    async waitFor(pred, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const hit = lines.find(pred);
        if (hit) return hit;
        if (Date.now() > deadline || proc.exitCode !== null)
          throw new Error(`not logged in time; last lines: ${JSON.stringify(lines.slice(-5))}`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 200);
        });
      }
    },
  };
}

/** A `scribed stream` run to its end: exit code, both outputs, its JSON log lines (stderr). */
export interface StreamRun {
  code: number | null;
  stdout: string;
  stderr: string;
  wallMs: number;
  logs: LogLine[];
}

export interface StreamRunOptions {
  /** Tracked while it runs, so a test's afterEach can kill what is left. */
  children?: Set<ChildProcess>;
  env?: NodeJS.ProcessEnv;
  /** Bytes fed on stdin (else stdin is closed). */
  stdin?: Buffer;
  /** SIGKILL after this long (the run then ends with code null). */
  killAfterMs?: number;
}

/** `scribed stream --url URL ARGS`, run to its exit. */
export function runStream(url: string, args: string[], opts: StreamRunOptions = {}): Promise<StreamRun> {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const proc = spawn(process.execPath, [CLI, 'stream', '--url', url, ...args], {
      stdio: [opts.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...opts.env },
    });
    opts.children?.add(proc);
    if (opts.stdin) {
      proc.stdin!.on('error', () => undefined); // a refused input is not read to its end
      proc.stdin!.end(opts.stdin);
    }
    const kill = opts.killAfterMs === undefined ? null : setTimeout(() => proc.kill('SIGKILL'), opts.killAfterMs);
    let stdout = '';
    let stderr = '';
    proc.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
    proc.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    proc.once('error', reject);
    proc.once('close', (code) => {
      if (kill) clearTimeout(kill);
      opts.children?.delete(proc);
      if (process.env.SCRIBED_TEST_LOG) process.stderr.write(stderr);
      const logs = stderr
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as LogLine);
      resolve({ code, stdout, stderr, wallMs: Date.now() - t0, logs });
    });
  });
}

/** The run's closing `stream finished` log line (its summary), or an error showing the end of stderr. */
export function streamFinished(run: StreamRun): LogLine {
  const rec = run.logs.find((l) => l.msg === 'stream finished');
  if (!rec) throw new Error(`no 'stream finished' log; exit ${run.code}; ${run.stderr.slice(-1500)}`);
  return rec;
}
