// `scribed drain` (POST /admin/drain) against a real `scribed serve`: the node stops as on
// SIGTERM (on the embedded store, at once: the route starts the same drain-then-stop as the
// first signal, whose shared-store path test/process/drain.test.ts covers), and the route
// answers only a loopback request made to the node directly: one that came through a proxy is
// refused and the node keeps serving.
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { kill9, spawnCli, startServe } from '../helpers/serve-process.js';

const children = new Set<ChildProcess>();
const dirs: string[] = [];

afterAll(async () => {
  await Promise.all([...children].map((p) => kill9(p)));
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

describe('scribed drain', () => {
  it('refuses a request through a proxy, then drains and stops the node; --wait returns once it has stopped', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-drain-cmd-'));
    dirs.push(dir);
    const node = await startServe(dir, { children });
    const exited = new Promise<number | null>((resolve) => node.proc.once('exit', (code) => resolve(code)));

    const proxied = await fetch(`${node.base}/admin/drain`, { method: 'POST', headers: { 'x-forwarded-for': '203.0.113.9' } });
    expect(proxied.status).toBe(401);
    expect(((await proxied.json()) as { message: string }).message).toContain('scribed drain');
    expect((await fetch(`${node.base}/readyz`)).status).toBe(200);

    const cli = spawnCli(['drain', '--url', node.base, '--wait'], { children });
    expect(await cli.exited).toBe(0);
    expect(await exited).toBe(0);
    const out = cli
      .output()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    // One node: nowhere to move a call to, so it stops at once as SIGTERM would.
    expect(out).toEqual([
      { url: node.base, status: 'stopping', graceMs: 1_800_000 },
      { url: node.base, status: 'stopped' },
    ]);
    const logs = node.logs.map((l) => JSON.parse(l) as { msg?: string });
    expect(logs.some((l) => l.msg === 'stopping: drain asked for through /admin/drain')).toBe(true);
    expect(logs.at(-1)?.msg).toBe('stopped');
  }, 60_000);

  it('says so when no node answers', async () => {
    const cli = spawnCli(['drain', '--url', 'http://127.0.0.1:9']);
    expect(await cli.exited).toBe(2);
    expect(cli.output()).toContain('no node answers at http://127.0.0.1:9');
  }, 30_000);
});
