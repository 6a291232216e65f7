// The desk's public origin (docs/desk.md, "Signing in" and "CSRF"), probed as an operator behind
// a proxy and as an attacker forging Host would: the Origin check compares with the configured
// --public-url (or, without it, the address the browser connected to), never with the request's
// own Host; the cookie is Secure when that origin is https; `accounts login-link` refuses to
// guess an origin and names the flag. Uses the built CLI (dist/cli.js).
import { execFile } from 'node:child_process';
import http from 'node:http';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, storeArgsFor, type TestService } from '../helpers/service.js';
import { CLI } from '../helpers/serve-process.js';
import { issueLoginLink } from '../../src/desk/login-link.js';

const run = promisify(execFile);
const PUBLIC = 'https://desk.example.org';

let direct: TestService;
let proxied: TestService;

beforeAll(async () => {
  direct = await startService();
  proxied = await startService({ publicUrl: `${PUBLIC}/` });
}, 60_000);
afterAll(async () => {
  await direct?.stop();
  await proxied?.stop();
});

/** POST /desk/api/login over node:http, which sends the Host it is given (fetch would not). */
function rawLogin(
  svc: TestService,
  token: string,
  headers: Record<string, string>,
): Promise<{ status: number; setCookie: string | undefined; body: any }> {
  const url = new URL(svc.baseUrl);
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ token });
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        method: 'POST',
        path: '/desk/api/login',
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, setCookie: res.headers['set-cookie']?.[0], body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function token(svc: TestService): Promise<string> {
  const account = await svc.account(1_000n);
  const out = await issueLoginLink(svc.service.store, account.accountId, svc.baseUrl, 60_000, new Date());
  return out.url.split('#')[1]!;
}

describe("the desk's origin (F7)", () => {
  it('a forged Host with a matching Origin is refused; the address the browser connected to is accepted', async () => {
    const forged = await rawLogin(direct, await token(direct), { host: 'evil.example', origin: 'http://evil.example' });
    expect(forged.status).toBe(403);
    expect(forged.body.message).toMatch(/^DESK_REQUEST_REFUSED: .*--public-url/);
    expect(forged.setCookie).toBeUndefined();
    const port = new URL(direct.baseUrl).port;
    for (const origin of [direct.baseUrl, `http://localhost:${port}`]) {
      const ok = await rawLogin(direct, await token(direct), { host: 'anything.example', origin });
      expect(ok.status, origin).toBe(200);
      expect(ok.setCookie).not.toMatch(/Secure/);
    }
  });

  it('with --public-url, a proxy that rewrites Host still signs in from the public origin, with a Secure cookie; the direct address is refused', async () => {
    const viaProxy = await rawLogin(proxied, await token(proxied), { host: '10.0.0.7:8080', origin: PUBLIC });
    expect(viaProxy.status).toBe(200);
    expect(viaProxy.setCookie).toMatch(/; Secure$/);
    const directly = await rawLogin(proxied, await token(proxied), { host: new URL(proxied.baseUrl).host, origin: proxied.baseUrl });
    expect(directly.status).toBe(403);
  });

  it('`accounts login-link` refuses to guess the origin and names the flag; SCRIBED_PUBLIC_URL is used when set', async () => {
    const account = await direct.account(1_000n);
    const args = [CLI, 'accounts', 'login-link', '--account', account.accountId, '--json', ...(await storeArgsFor(direct.dataDir))];
    const env = { ...process.env };
    delete env.SCRIBED_PUBLIC_URL;
    const refused = await run(process.execPath, args, { env }).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    );
    expect(refused, 'login-link printed a guessed link').not.toBeNull();
    expect(refused!.code).not.toBe(0);
    expect(refused!.stderr).toMatch(/--base-url/);
    expect(refused!.stderr).toMatch(/--public-url \(SCRIBED_PUBLIC_URL\)/);
    const { stdout } = await run(process.execPath, args, { env: { ...env, SCRIBED_PUBLIC_URL: PUBLIC } });
    expect(JSON.parse(stdout).url).toMatch(new RegExp(`^${PUBLIC.replace(/\./g, '\\.')}/desk/login#dl_`));
  });
});
