// `scribed serve` as a separate process on a fixed port, for tests that kill and restart it
// on the same data dir, and the operator CLI run against that data dir.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
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

/** Start `scribed serve`; resolves once it listens. `children` collects it for cleanup. */
export function serve(dataDir: string, port: number, children: Set<ChildProcess>, extraArgs: string[] = []): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [CLI, 'serve', '--port', String(port), '--data-dir', dataDir, '--max-decoders', '2', ...extraArgs], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, SCRIBED_LOG_LEVEL: 'info' },
    });
    children.add(proc);
    proc.once('exit', () => children.delete(proc));
    readline.createInterface({ input: proc.stdout! }).on('line', (line) => {
      if (process.env.SCRIBED_TEST_LOG) process.stderr.write(`[serve] ${line}\n`);
      if ((JSON.parse(line) as { msg?: string }).msg === 'scribed listening') resolve(proc);
    });
    proc.once('exit', (code, signal) => reject(new Error(`serve exited early (${code ?? signal})`)));
  });
}

export function createAccount(dataDir: string): string {
  const out = execFileSync(process.execPath, [CLI, 'accounts', 'create', '--name', 'ingest', '--characters', '1000000', '--json', '--data-dir', dataDir], { encoding: 'utf8' });
  return (JSON.parse(out) as { accessKey: string }).accessKey;
}
