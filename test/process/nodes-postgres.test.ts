// Several `scribed serve` processes on one PostgreSQL database, as operators run them behind a
// load balancer: the operator commands reach every node through --database-url, and
// idempotent requests sent to different nodes at the same instant act once. Also: a second
// server on a data dir a live one holds refuses to start before touching anything.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { call } from '../helpers/api.js';
import { tempDir } from '../helpers/service.js';
import { CLI, freePort, serve } from '../helpers/serve-process.js';
import { freshDatabase } from '../helpers/postgres-cluster.js';

const run = promisify(execFile);
const children = new Set<ChildProcess>();
let db: { url: string; drop(): Promise<void> };
const nodes: Array<{ base: string; dataDir: string }> = [];

async function scribed(...args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [CLI, ...args, '--database-url', db.url], { encoding: 'utf8' });
  return stdout;
}

beforeAll(async () => {
  db = await freshDatabase(inject('postgresUrl'));
  // Started together: migrations run under an advisory lock, so both apply them safely.
  const ports = [await freePort(), await freePort()];
  const dirs = ports.map(() => tempDir('scribed-node-'));
  await Promise.all(ports.map((port, i) => serve(dirs[i]!, port, children, ['--database-url', db.url, '--max-decoders', '1'])));
  ports.forEach((port, i) => nodes.push({ base: `http://127.0.0.1:${port}`, dataDir: dirs[i]! }));
}, 60_000);

afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await db?.drop();
});

describe('scribed serve on a shared PostgreSQL store', () => {
  it('an account created by the operator command is known to every node, and a credit shows on all', async () => {
    const account = JSON.parse(await scribed('accounts', 'create', '--name', 'center', '--characters', '100', '--json')) as {
      accountId: string;
      accessKey: string;
    };
    for (const node of nodes) {
      const r = await call(node.base, 'GET', '/sound_clone/api/v1/stt/transcriptions?limit=5', { key: account.accessKey });
      expect(r.status).toBe(200);
    }
    expect(JSON.parse(await scribed('accounts', 'credit', '--account', account.accountId, '--characters', '50')).characters).toBe('150');
  });

  it('the same Idempotency-Key sent to two nodes at once creates one session', async () => {
    const { accessKey } = JSON.parse(await scribed('accounts', 'create', '--name', 'idem', '--characters', '100', '--json')) as {
      accessKey: string;
    };
    for (let round = 0; round < 5; round++) {
      const key = `nodes-${randomUUID()}`;
      const replies = await Promise.all(
        nodes.flatMap((node) =>
          [0, 1].map(() =>
            call(node.base, 'POST', '/sound_clone/api/v1/stt/realtime/sessions', {
              key: accessKey,
              body: { title: 'same call' },
              headers: { 'Idempotency-Key': key },
            }),
          ),
        ),
      );
      expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200]);
      expect(new Set(replies.map((r) => r.json.data.sessionId)).size).toBe(1);
    }
    const history = await call(nodes[1]!.base, 'GET', '/sound_clone/api/v1/stt/transcriptions?limit=50', { key: accessKey });
    expect(history.json.data.items).toHaveLength(5);
  });

  it('an interpretation retry sent to two nodes at once with one key is charged once', async () => {
    const { accountId, accessKey } = JSON.parse(
      await scribed('accounts', 'create', '--name', 'interp', '--characters', '100000', '--json'),
    ) as {
      accountId: string;
      accessKey: string;
    };
    const PROJECTS = '/sound_clone/api/v1/interpretation/projects';
    const project = await call(nodes[0]!.base, 'POST', PROJECTS, {
      key: accessKey,
      body: { title: 'Talk', sourceLanguage: 'en', targetLanguages: ['fr'], source: { text: 'x'.repeat(300) } },
    });
    const { projectId } = project.json.data;
    const targetId = project.json.data.targets[0].targetId as string;
    await scribed('interpretation', 'fail-target', '--target', targetId);
    const plan = (await call(nodes[1]!.base, 'GET', `${PROJECTS}/${projectId}/targets/${targetId}/retry-plan`, { key: accessKey })).json
      .data;
    const body = { nextReservationCycle: plan.nextReservationCycle, characters: plan.characters, rateVersion: plan.rateVersion };
    // The operator command answers with the balance after its credit of 1.
    const balanceAfterCredit = async () =>
      BigInt(JSON.parse(await scribed('accounts', 'credit', '--account', accountId, '--characters', '1')).characters);
    const before = await balanceAfterCredit();
    const key = `retry-${randomUUID()}`;
    const replies = await Promise.all(
      nodes.flatMap((node) =>
        [0, 1, 2].map(() =>
          call(node.base, 'POST', `${PROJECTS}/${projectId}/targets/${targetId}/retry`, {
            key: accessKey,
            body,
            headers: { 'Idempotency-Key': key },
          }),
        ),
      ),
    );
    expect(replies.every((r) => r.status === 200)).toBe(true);
    expect(new Set(replies.map((r) => JSON.stringify(r.json.data))).size).toBe(1);
    const after = (await balanceAfterCredit()) - 1n;
    expect(before - after).toBe(BigInt(plan.characters));
  });

  it('a second server on a data dir a live server holds refuses to start and changes nothing', async () => {
    const { accessKey } = JSON.parse(await scribed('accounts', 'create', '--name', 'lock', '--characters', '100', '--json')) as {
      accessKey: string;
    };
    const created = await call(nodes[0]!.base, 'POST', '/sound_clone/api/v1/stt/realtime/sessions', {
      key: accessKey,
      body: {},
      headers: { 'Idempotency-Key': `lock-${randomUUID()}` },
    });
    const second = spawn(
      process.execPath,
      [CLI, 'serve', '--port', String(await freePort()), '--data-dir', nodes[0]!.dataDir, '--database-url', db.url],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    second.stdout.on('data', (d: Buffer) => (output += d.toString()));
    second.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const code = await new Promise<number | null>((resolve) => second.once('exit', resolve));
    expect(code).not.toBe(0);
    expect(output).toMatch(/data directory .* is in use by another scribed process \(pid \d+\); stop it first or use another --data-dir/);
    expect(output).not.toContain('scribed listening');
    const session = await call(nodes[0]!.base, 'GET', `/sound_clone/api/v1/stt/realtime/sessions/${created.json.data.sessionId}`, {
      key: accessKey,
    });
    expect(session.json.data.status).toBe('RECORDING');
  });
});
