import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { acquireDataDirLock, type DataDirLock } from '../../src/store/data-dir-lock.js';

const HOLDER = path.resolve(import.meta.dirname, '../helpers/lock-holder.ts');

interface Child {
  proc: ChildProcess;
  /** The next stdout line. */
  line(): Promise<string>;
}

function startHolder(dataDir: string, children: Set<ChildProcess>, waitGo = false): Child {
  const proc = spawn(process.execPath, ['--import', 'tsx', HOLDER, dataDir, ...(waitGo ? ['--wait-go'] : [])], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  children.add(proc);
  proc.once('exit', () => children.delete(proc));
  const lines: string[] = [];
  const waiters: Array<(l: string) => void> = [];
  readline.createInterface({ input: proc.stdout! }).on('line', (l) => {
    const w = waiters.shift();
    if (w) w(l);
    else lines.push(l);
  });
  const line = () =>
    new Promise<string>((resolve, reject) => {
      const queued = lines.shift();
      if (queued !== undefined) return resolve(queued);
      waiters.push(resolve);
      proc.once('exit', (code, signal) => reject(new Error(`lock holder exited (${code ?? signal}) before printing`)));
    });
  return { proc, line };
}

const exited = (proc: ChildProcess): Promise<void> =>
  proc.exitCode !== null || proc.signalCode !== null ? Promise.resolve() : new Promise((r) => proc.once('exit', () => r()));

describe('data-dir lock', () => {
  let root: string;
  const locks: DataDirLock[] = [];
  const children = new Set<ChildProcess>();

  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-lock-'));
  });

  afterEach(async () => {
    for (const l of locks.splice(0)) l.release();
    for (const c of [...children]) {
      c.kill('SIGKILL');
      await exited(c);
    }
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('creates the data dir 0700 and holds a lock file in it', () => {
    const dataDir = path.join(root, 'a', 'data');
    const lock = acquireDataDirLock(dataDir);
    locks.push(lock);
    expect(lock.file).toBe(path.join(dataDir, 'scribed.lock'));
    expect(fs.statSync(dataDir).mode & 0o777).toBe(0o700);
    expect(fs.readdirSync(dataDir)).toEqual(['scribed.lock']);
    expect(JSON.parse(fs.readFileSync(lock.file, 'utf8'))).toMatchObject({ pid: process.pid });
  });

  it('refuses a second acquire in the same process with a clear message', () => {
    const dataDir = path.join(root, 'data');
    locks.push(acquireDataDirLock(dataDir));
    expect(() => acquireDataDirLock(dataDir)).toThrow(
      `data directory ${dataDir} is in use by another scribed process (pid ${process.pid}); stop it first or use another --data-dir`,
    );
    // A relative spelling of the same directory is the same lock.
    expect(() => acquireDataDirLock(path.relative(process.cwd(), dataDir))).toThrow(/is in use by another scribed process/);
  });

  it('can be taken again after release', () => {
    const dataDir = path.join(root, 'data');
    const first = acquireDataDirLock(dataDir);
    first.release();
    first.release(); // idempotent
    const second = acquireDataDirLock(dataDir);
    locks.push(second);
    expect(() => acquireDataDirLock(dataDir)).toThrow(/is in use/);
  });

  it('is refused while another process holds it, and free once that process is killed with SIGKILL', async () => {
    const dataDir = path.join(root, 'data');
    const holder = startHolder(dataDir, children);
    expect(JSON.parse(await holder.line())).toEqual({ ok: true, pid: holder.proc.pid });

    expect(() => acquireDataDirLock(dataDir)).toThrow(
      `data directory ${dataDir} is in use by another scribed process (pid ${holder.proc.pid}); stop it first or use another --data-dir`,
    );

    holder.proc.kill('SIGKILL');
    await exited(holder.proc);
    const lock = acquireDataDirLock(dataDir); // no stale-lock wait, no clean-up needed
    locks.push(lock);
    expect(JSON.parse(fs.readFileSync(lock.file, 'utf8'))).toMatchObject({ pid: process.pid });
  });

  it('gives the lock to exactly one of two processes starting at the same instant', async () => {
    for (let round = 0; round < 5; round++) {
      const dataDir = path.join(root, `race-${round}`); // fresh, not yet created
      const a = startHolder(dataDir, children, true);
      const b = startHolder(dataDir, children, true);
      expect([await a.line(), await b.line()]).toEqual(['ready', 'ready']);
      a.proc.stdin!.write('go\n');
      b.proc.stdin!.write('go\n');
      const results = [JSON.parse(await a.line()), JSON.parse(await b.line())] as Array<{ ok: boolean; pid?: number; message?: string }>;
      const winners = results.filter((r) => r.ok);
      expect(winners).toHaveLength(1);
      const loser = results.find((r) => !r.ok)!;
      expect(loser.message).toMatch(new RegExp(`^data directory ${dataDir} is in use by another scribed process`));
      for (const c of [a, b]) {
        c.proc.kill('SIGKILL');
        await exited(c.proc);
      }
    }
  });
});
