// Dashboard user groups through HTTP against a real server: get-or-create (GET with a JSON
// body), update, delete with current_token, success 1/0, token auth, per-account groups.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, storeDump, type TestService } from '../helpers/service.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';

let svc: TestService;
let alice: ProvisionedAccount;
let bob: ProvisionedAccount;

beforeAll(async () => {
  svc = await startService();
  alice = await svc.account();
  bob = await svc.account();
});
afterAll(async () => {
  await svc?.stop();
});

/** fetch() refuses a GET with a body, so use node:http directly. */
function request(
  method: string,
  body: unknown,
  auth: string | null = `Token ${alice.apiToken}`,
  raw?: string,
): Promise<{ status: number; json: any }> {
  const data = raw ?? (body === undefined ? '' : JSON.stringify(body));
  const url = new URL(`${svc.baseUrl}/api/user`);
  const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) };
  if (auth !== null) headers.authorization = auth;
  return new Promise((resolve, reject) => {
    const req = http.request({ method, hostname: url.hostname, port: url.port, path: url.pathname, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, json: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
    });
    req.on('error', reject);
    req.end(data);
  });
}

/** HEAD with a JSON body: status and headers only (a HEAD answer has no body). */
function head(body: unknown): Promise<{ status: number; allow: string | undefined }> {
  const data = JSON.stringify(body);
  const url = new URL(`${svc.baseUrl}/api/user`);
  const headers = {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(data),
    authorization: `Token ${alice.apiToken}`,
  };
  return new Promise((resolve, reject) => {
    const req = http.request({ method: 'HEAD', hostname: url.hostname, port: url.port, path: url.pathname, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, allow: res.headers.allow }));
    });
    req.on('error', reject);
    req.end(data);
  });
}

let n = 0;
const gid = () => `group-${++n}-${Date.now()}`;

describe('get user (get or create)', () => {
  it('answers HEAD with 405 and creates nothing', async () => {
    const body = { name: 'Head', user_group_id: gid() };
    const r = await head(body);
    expect(r.status).toBe(405);
    expect(r.allow).toBe('GET, PUT, DELETE');
    const after = await request('GET', body);
    expect(after.json.new_user_group).toBe(true);
  });

  it('creates a group on first call and returns the same group and token after', async () => {
    const id = gid();
    const body = { name: 'Acme', user_group_id: id, mapping: { sales: 'ds_1' }, properties: { region: 'EU' } };
    const first = await request('GET', body);
    expect(first.status).toBe(200);
    expect(first.json.success).toBe(1);
    expect(first.json.new_user_group).toBe(true);
    const g = first.json.user_group;
    expect(g).toMatchObject({ name: 'Acme', provided_id: id, properties: { region: 'EU' } });
    expect(typeof g.team_id).toBe('number');
    expect(g.token).toMatch(/^ugt_/);
    const second = await request('GET', body);
    expect(second.json.new_user_group).toBe(false);
    expect(second.json.user_group).toEqual(g);
  });

  it('keeps groups per account: the same user_group_id is another group for another account', async () => {
    const id = gid();
    const a = await request('GET', { user_group_id: id });
    const b = await request('GET', { user_group_id: id }, `Token ${bob.apiToken}`);
    expect(b.json.new_user_group).toBe(true);
    expect(b.json.user_group.team_id).not.toBe(a.json.user_group.team_id);
    expect(b.json.user_group.token).not.toBe(a.json.user_group.token);
  });

  it('does not store the token in the database', async () => {
    const id = gid();
    const r = await request('GET', { user_group_id: id });
    const token = r.json.user_group.token as string;
    const dump = await storeDump(svc);
    expect(dump).toContain(id); // the dump does reach the group's row
    expect(dump).not.toContain(token);
    if (svc.storeSettings.databaseUrl) return;
    // SQLite: not in the file's bytes either (free pages and the WAL included).
    const db = fs.readFileSync(path.join(svc.dataDir, 'scribed.db'));
    const wal = fs.existsSync(path.join(svc.dataDir, 'scribed.db-wal'))
      ? fs.readFileSync(path.join(svc.dataDir, 'scribed.db-wal'))
      : Buffer.alloc(0);
    expect(db.includes(token)).toBe(false);
    expect(wal.includes(token)).toBe(false);
  });

  it('answers 401 success 0 without a token, with an accessKey as the token, and with a wrong scheme', async () => {
    for (const auth of [
      null,
      `Token ${alice.accessKey}`,
      `Bearer ${alice.apiToken}`,
      'Token tok_0000000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    ]) {
      const r = await request('GET', { user_group_id: gid() }, auth);
      expect(r.status, String(auth)).toBe(401);
      expect(r.json.success).toBe(0);
    }
  });

  it('refuses a body without user_group_id or name, and malformed JSON, with success 0', async () => {
    const r = await request('GET', {});
    expect(r.status).toBe(422);
    expect(r.json.success).toBe(0);
    const bad = await request('GET', undefined, `Token ${alice.apiToken}`, '{"name":');
    expect(bad.status).toBe(400);
    expect(bad.json.success).toBe(0);
  });
});

describe('get user body limit', () => {
  it('takes a body at 256 KiB and refuses one byte more with 413 success 0', async () => {
    const shell = JSON.stringify({ user_group_id: 'big', properties: { pad: '' } });
    const at = JSON.stringify({ user_group_id: gid(), properties: { pad: 'p'.repeat(256 * 1024 - shell.length - 20) } });
    const padded = at.replace('"pad":"', `"pad":"${'q'.repeat(256 * 1024 - Buffer.byteLength(at))}`);
    expect(Buffer.byteLength(padded)).toBe(256 * 1024);
    expect((await request('GET', undefined, `Token ${alice.apiToken}`, padded)).json.success).toBe(1);
    const over = padded.replace('"pad":"', '"pad":"q');
    const r = await request('GET', undefined, `Token ${alice.apiToken}`, over);
    expect(r.status).toBe(413);
    expect(r.json.success).toBe(0);
  });
});

describe('update user', () => {
  it('updates an existing group: is_new 0, environment echoed, token unchanged', async () => {
    const id = gid();
    const created = (await request('GET', { user_group_id: id, name: 'Old', properties: { a: 1 } })).json.user_group;
    const r = await request('PUT', { user_group_id: id, name: 'New', environment: 'Testing' });
    expect(r.json.success).toBe(1);
    expect(r.json.user_group).toEqual({ ...created, name: 'New', is_new: 0, environment: 'Testing' });
  });

  it('creates a missing group: is_new 1, environment null by default', async () => {
    const r = await request('PUT', { user_group_id: gid(), name: 'Fresh' });
    expect(r.json.user_group).toMatchObject({ name: 'Fresh', is_new: 1, environment: null });
  });

  it('refuses an environment other than Customer or Testing', async () => {
    const r = await request('PUT', { user_group_id: gid(), environment: 'Production' });
    expect(r.status).toBe(422);
    expect(r.json.success).toBe(0);
  });
});

describe('delete user', () => {
  it('deletes with the current token; a later get creates a new group', async () => {
    const id = gid();
    const g = (await request('GET', { user_group_id: id })).json.user_group;
    const r = await request('DELETE', { user_group_id: id, current_token: g.token });
    expect(r).toEqual({ status: 200, json: { success: 1 } });
    const again = await request('GET', { user_group_id: id });
    expect(again.json.new_user_group).toBe(true);
    expect(again.json.user_group.token).not.toBe(g.token);
  });

  it('fails with success 0 for a wrong current_token and keeps the group', async () => {
    const id = gid();
    const g = (await request('GET', { user_group_id: id })).json.user_group;
    const r = await request('DELETE', {
      user_group_id: id,
      current_token: `${g.token.slice(0, -1)}A` === g.token ? 'ugt_x' : `${g.token.slice(0, -1)}A`,
    });
    expect(r.status).toBe(403);
    expect(r.json.success).toBe(0);
    expect((await request('GET', { user_group_id: id })).json.new_user_group).toBe(false);
  });

  it("fails with success 0 for another account's group, even with its token", async () => {
    const id = gid();
    const g = (await request('GET', { user_group_id: id })).json.user_group;
    const r = await request('DELETE', { user_group_id: id, current_token: g.token }, `Token ${bob.apiToken}`);
    expect(r.status).toBe(404);
    expect(r.json.success).toBe(0);
  });
});
