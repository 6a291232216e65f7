// `scribed accounts list|rotate-key|revoke-key` against a running `scribed serve`, on the
// embedded SQLite store and on PostgreSQL, as an operator runs them: a rotated-out key keeps
// working through its grace and is then refused exactly as an unknown key is; a revoked key
// is refused on the server's next request; the listing shows key ids and states, never a
// secret; no key reaches the server's log.
import { execFile, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import WebSocket from 'ws';
import { call } from '../helpers/api.js';
import { freshDatabase } from '../helpers/postgres-cluster.js';
import { tempDir } from '../helpers/service.js';
import { CLI, startServe, type ServeProcess } from '../helpers/serve-process.js';

const run = promisify(execFile);
const ACCOUNT = '/sound_clone/api/v1/account';
const GRACE_SECONDS = 6;

interface KeyView {
  id: string;
  state: string;
  createdAt: string;
  at: string | null;
}
interface AccountView {
  accountId: string;
  name: string;
  characters: string;
  createdAt: string;
  accessKeys: KeyView[];
}

const keyIdOf = (key: string): string => key.split('_')[1]!;

describe.each(['sqlite', 'postgres'] as const)('access keys of a running server on %s', (engine) => {
  const children = new Set<ChildProcess>();
  let server: ServeProcess;
  let storeArgs: string[];
  let dropDatabase: (() => Promise<void>) | undefined;
  const issued: string[] = [];

  async function scribed(...args: string[]): Promise<string> {
    const { stdout } = await run(process.execPath, [CLI, ...args, ...storeArgs], { encoding: 'utf8' });
    return stdout;
  }
  async function createAccount(name: string): Promise<{ accountId: string; accessKey: string; apiToken: string }> {
    const out = JSON.parse(await scribed('accounts', 'create', '--name', name, '--characters', '500', '--json')) as {
      accountId: string;
      accessKey: string;
      apiToken: string;
    };
    issued.push(out.accessKey, out.apiToken);
    return out;
  }
  const status = async (key: string) => (await call(server.base, 'GET', ACCOUNT, { key })).status;
  /** The HTTP status a stream socket's handshake gets with `key` (101: it opened). */
  function handshake(streamUrl: string, key: string): Promise<number> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(`${server.base.replace(/^http/, 'ws')}${streamUrl}`, { headers: { accessKey: key } });
      ws.once('open', () => {
        ws.terminate();
        resolve(101);
      });
      ws.once('unexpected-response', (_req, res) => {
        resolve(res.statusCode ?? 0);
        ws.terminate();
      });
      ws.once('error', reject);
    });
  }

  beforeAll(async () => {
    const dataDir = tempDir('scribed-keys-');
    if (engine === 'postgres') {
      const db = await freshDatabase(inject('postgresUrl'));
      dropDatabase = () => db.drop();
      storeArgs = ['--database-url', db.url];
    } else {
      storeArgs = ['--data-dir', dataDir];
    }
    server = await startServe(dataDir, { children, args: engine === 'postgres' ? storeArgs : [] });
  }, 60_000);

  afterAll(async () => {
    for (const c of children) c.kill('SIGKILL');
    await dropDatabase?.();
  });

  it('rotate-key: both keys work, then after the grace the old one is refused 401 as an unknown key is', async () => {
    const account = await createAccount('rotating');
    expect(await status(account.accessKey)).toBe(200);

    const rotated = JSON.parse(
      await scribed('accounts', 'rotate-key', '--account', account.accountId, '--grace-seconds', String(GRACE_SECONDS), '--json'),
    ) as {
      accountId: string;
      keyId: string;
      accessKey: string;
      accessKeys: KeyView[];
    };
    issued.push(rotated.accessKey);
    expect(rotated.accessKey).toMatch(new RegExp(`^sk_${rotated.keyId}_[A-Za-z0-9_-]{43}$`));
    const old = rotated.accessKeys.find((k) => k.id === keyIdOf(account.accessKey))!;
    expect(old.state).toBe('expiring');
    const graceEnd = Date.parse(old.at!);
    expect(rotated.accessKeys.find((k) => k.id === rotated.keyId)?.state).toBe('active');

    // Within the grace both keys authenticate the same account.
    for (const key of [account.accessKey, rotated.accessKey]) {
      const r = await call(server.base, 'GET', ACCOUNT, { key });
      expect(r.status).toBe(200);
      expect(r.json.data.accountId).toBe(account.accountId);
    }
    expect(Date.now()).toBeLessThan(graceEnd); // the checks above ran inside the grace

    // The old key stops working once the grace ends, and not before.
    await expect.poll(() => status(account.accessKey), { timeout: (GRACE_SECONDS + 10) * 1000, interval: 200 }).toBe(401);
    expect(Date.now()).toBeGreaterThanOrEqual(graceEnd);
    const refused = await call(server.base, 'GET', ACCOUNT, { key: account.accessKey });
    const unknown = await call(server.base, 'GET', ACCOUNT, { key: `sk_0123456789abcdef_${'A'.repeat(43)}` });
    expect(refused.status).toBe(401);
    expect(refused.json).toEqual({ code: -1, message: 'UNAUTHORIZED: the credential is not valid' });
    expect(refused.json).toEqual(unknown.json);
    expect(await status(rotated.accessKey)).toBe(200);
  }, 60_000);

  it('revoke-key: the named key is refused on the next request, the others keep working; without --key-id all are', async () => {
    const account = await createAccount('revoking');
    const rotated = JSON.parse(await scribed('accounts', 'rotate-key', '--account', account.accountId, '--json')) as {
      keyId: string;
      accessKey: string;
    };
    issued.push(rotated.accessKey);
    expect(await status(account.accessKey)).toBe(200);
    expect(await status(rotated.accessKey)).toBe(200);
    const created = await call(server.base, 'POST', '/sound_clone/api/v1/stt/realtime/sessions', {
      key: account.accessKey,
      body: { title: 'before the revocation' },
      headers: { 'Idempotency-Key': `accounts-keys-${engine}-revoke` },
    });
    expect(created.status, created.text).toBe(200);
    const streamUrl = (created.json as { data: { streamUrl: string } }).data.streamUrl;

    const one = JSON.parse(
      await scribed('accounts', 'revoke-key', '--account', account.accountId, '--key-id', keyIdOf(account.accessKey), '--json'),
    ) as { revoked: string[] };
    expect(one.revoked).toEqual([keyIdOf(account.accessKey)]);
    // The very next request: no cache stands between the store and the check.
    const r = await call(server.base, 'GET', ACCOUNT, { key: account.accessKey });
    expect(r.status).toBe(401);
    expect(r.json).toEqual({ code: -1, message: 'UNAUTHORIZED: the credential is not valid' });
    expect(await status(rotated.accessKey)).toBe(200);
    // The socket handshake reads the key the same way; the session, the account's, opens with
    // the key still in force.
    expect(await handshake(streamUrl, account.accessKey)).toBe(401);
    expect(await handshake(streamUrl, rotated.accessKey)).toBe(101);

    const all = JSON.parse(await scribed('accounts', 'revoke-key', '--account', account.accountId, '--json')) as { revoked: string[] };
    expect(all.revoked).toEqual([rotated.keyId]);
    expect(await status(rotated.accessKey)).toBe(401);

    // A key of another account is refused by name, and changes nothing.
    const other = await createAccount('bystander');
    await expect(
      scribed('accounts', 'revoke-key', '--account', account.accountId, '--key-id', keyIdOf(other.accessKey)),
    ).rejects.toMatchObject({
      stderr: expect.stringContaining('NOT_FOUND'),
    });
    expect(await status(other.accessKey)).toBe(200);
  }, 60_000);

  it('list shows accounts, balances and key states, never a secret; no key reaches the server log', async () => {
    const account = await createAccount('listed');
    const json = await scribed('accounts', 'list', '--json');
    const listed = (JSON.parse(json) as { accounts: AccountView[] }).accounts.find((a) => a.accountId === account.accountId)!;
    expect(listed).toEqual({
      accountId: account.accountId,
      name: 'listed',
      characters: '500',
      createdAt: expect.any(String),
      accessKeys: [{ id: keyIdOf(account.accessKey), state: 'active', createdAt: listed.createdAt, at: null }],
    });
    const text = await scribed('accounts', 'list');
    expect(text).toContain(`${account.accountId} "listed" characters=500`);
    expect(text).toMatch(new RegExp(`key ${keyIdOf(account.accessKey)} active`));
    expect(text).toMatch(/key [0-9a-f]{16} revoked at \d{4}-/);
    expect(text).toMatch(/key [0-9a-f]{16} expired at \d{4}-/);
    for (const secret of issued.map((k) => k.slice(-43))) {
      expect(secret.length).toBe(43);
      expect(json).not.toContain(secret);
      expect(text).not.toContain(secret);
    }
    const log = server.logs.join('\n');
    for (const key of issued) expect(log).not.toContain(key.slice(-43));
  }, 60_000);

  it('refuses a bad grace, a malformed key id and an unknown account, exit 2, the message naming what is wrong', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['rotate-key', '--account', 'acc_nope', '--grace-seconds', '-1'], /--grace-seconds must be an integer from 0 to 31536000/],
      [['rotate-key', '--account', 'acc_nope', '--grace-seconds', '1.5'], /--grace-seconds must be an integer/],
      [['revoke-key', '--account', 'acc_nope', '--key-id', 'sk_0123456789abcdef'], /--key-id must be 16 lowercase hex characters/],
      [['rotate-key', '--account', 'acc_nope'], /NOT_FOUND: account acc_nope does not exist/],
      [['revoke-key', '--account', 'acc_nope'], /NOT_FOUND: account acc_nope does not exist/],
    ];
    for (const [args, message] of cases) {
      const err = (await scribed('accounts', ...args).then(
        () => null,
        (e: unknown) => e,
      )) as { code: number; stderr: string } | null;
      expect(err, args.join(' ')).not.toBeNull();
      expect(err!.code, args.join(' ')).toBe(2);
      expect(err!.stderr, args.join(' ')).toMatch(message);
    }
  }, 60_000);
});
