// The callback allow-list changes without a restart (docs/operations.md, "Changing settings
// without a restart"): `scribed serve --callback-allow-cidr-file FILE` in its own process, a
// webhook endpoint toward 127.0.0.1 refused (422 naming the flag) until the file lists
// 127.0.0.1/32 and the process gets SIGHUP; the log names what changed; an invalid file keeps
// the list in force (logged as refused); emptied and SIGHUP again, the address is refused again.
// The same process serves throughout (one pid, never restarted).
import fs from 'node:fs';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/service.js';
import { createAccount, startServe } from '../helpers/serve-process.js';

const children = new Set<ChildProcess>();

afterEach(() => {
  for (const c of children) c.kill('SIGKILL');
  children.clear();
});

type Line = Record<string, any>;

async function waitForLog(logs: string[], from: number, pred: (l: Line) => boolean, timeoutMs = 10_000): Promise<Line> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    for (const raw of logs.slice(from)) {
      const line = JSON.parse(raw) as Line;
      if (pred(line)) return line;
    }
    if (Date.now() > until) throw new Error(`no such log line after ${from}: ${logs.slice(from).join('\n')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('SIGHUP reads the callback allow-list file again', () => {
  it('opens, keeps through an invalid file, and closes 127.0.0.1 for webhooks without a restart', async () => {
    const dataDir = tempDir();
    const file = path.join(tempDir(), 'callback-allow.txt');
    fs.writeFileSync(file, '# loopback receivers for development\n');
    const { proc, base, logs } = await startServe(dataDir, { children, args: ['--callback-allow-cidr-file', file] });
    const key = createAccount(dataDir);
    const create = () =>
      fetch(`${base}/sound_clone/api/v1/webhooks/endpoints`, {
        method: 'POST',
        headers: { accessKey: key, 'content-type': 'application/json' },
        body: JSON.stringify({ url: 'http://127.0.0.1:9/hook', events: ['transcription.completed'] }),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
    const hup = async (pred: (l: Line) => boolean) => {
      const from = logs.length;
      proc.kill('SIGHUP');
      return waitForLog(logs, from, pred);
    };

    const refused = await create();
    expect(refused.status).toBe(422);
    expect(JSON.stringify(refused.body)).toContain('WEBHOOK_URL_FORBIDDEN');
    expect(JSON.stringify(refused.body)).toContain('--callback-allow-cidr 127.0.0.1/32');
    expect(JSON.stringify(refused.body)).toContain('--callback-allow-cidr-file and sends SIGHUP');

    fs.writeFileSync(file, '# loopback receivers for development\n127.0.0.1/32 # the local test receiver\n');
    const changed = await hup((l) => l.msg === 'SIGHUP: callback allow-list changed');
    expect(changed).toMatchObject({ added: ['127.0.0.1/32'], removed: [], allowCidrs: ['127.0.0.1/32'] });
    expect((await create()).status).toBe(201);

    // An invalid entry: nothing changes, the log says so and what stays.
    fs.writeFileSync(file, '127.0.0.1/32\n10.0.0.0/99\n');
    const kept = await hup((l) => l.msg === 'SIGHUP: callback allow-list refused; the previous one stays in force');
    expect(kept.level).toBe(50);
    expect(kept.kept).toEqual(['127.0.0.1/32']);
    expect(kept.error).toMatch(/10\.0\.0\.0\/99/);
    expect((await create()).status).toBe(201);

    // A list that never reaches the metadata service, whatever it says, is refused whole.
    fs.writeFileSync(file, '169.254.169.254/32\n');
    await hup(
      (l) => l.msg === 'SIGHUP: callback allow-list refused; the previous one stays in force' && /metadata|link-local/.test(l.error),
    );
    expect((await create()).status).toBe(201);

    fs.writeFileSync(file, '');
    const closed = await hup((l) => l.msg === 'SIGHUP: callback allow-list changed');
    expect(closed).toMatchObject({ added: [], removed: ['127.0.0.1/32'], allowCidrs: [] });
    expect((await create()).status).toBe(422);
    expect(proc.exitCode).toBeNull(); // one process throughout
  });
});
