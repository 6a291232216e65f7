// The desk's login links and sessions (docs/desk.md) against the real app on the store under
// test: a link from the operator CLI becomes a session cookie once; links and sessions expire;
// the cookie reads its own account only, through the listed native GETs and the desk's routes,
// and never writes; state changes need this origin and the CSRF token; no secret is stored in
// clear or logged.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capturedLogger, startService, storeArgsFor, storeDump, type TestService } from '../helpers/service.js';
import { CLI } from '../helpers/serve-process.js';
import { StreamClient } from '../helpers/stream-client.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';
import { issueLoginLink } from '../../src/desk/login-link.js';
import { SESSION_ABSOLUTE_MS, SESSION_IDLE_MS, parseLinkTtl } from '../../src/desk/policy.js';

const run = promisify(execFile);
const STT = '/sound_clone/api/v1/stt';

let svc: TestService;
let alice: ProvisionedAccount;
let bob: ProvisionedAccount;
let clock = Date.now();
const logLines: string[] = [];
/** Alice's and Bob's transcription, call and session. */
const own: Record<'alice' | 'bob', { callId: string; sessionId: string; transcriptionId: string; streamUrl: string }> = {} as never;

async function apiPost(path: string, body: unknown, key: string) {
  const res = await fetch(`${svc.baseUrl}${path}`, {
    method: 'POST',
    headers: { accessKey: key, 'content-type': 'application/json', 'Idempotency-Key': `desk-${randomUUID()}` },
    body: JSON.stringify(body),
  });
  return (await res.json()) as any;
}

/** A login link for `accountId`, issued on the test's clock. */
async function link(accountId: string, ttlMs = 15 * 60_000): Promise<string> {
  const out = await issueLoginLink(svc.service.store, accountId, svc.baseUrl, ttlMs, new Date(clock));
  return out.url.split('#')[1]!;
}

const origin = () => svc.baseUrl;

async function login(token: string, headers: Record<string, string> = { origin: origin() }) {
  const res = await fetch(`${svc.baseUrl}/desk/api/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ token }),
  });
  return { status: res.status, json: (await res.json()) as any, setCookie: res.headers.get('set-cookie') };
}

/** The cookie a fresh link's login sets (`name=value`). */
async function session(accountId: string): Promise<string> {
  const r = await login(await link(accountId));
  expect(r.status, JSON.stringify(r.json)).toBe(200);
  return r.setCookie!.split(';')[0]!;
}

async function get(path: string, cookie: string) {
  const res = await fetch(`${svc.baseUrl}${path}`, { headers: { cookie } });
  const text = await res.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {
    /* a download */
  }
  return { status: res.status, json, text };
}

async function deskPost(path: string, cookie: string, headers: Record<string, string>) {
  const res = await fetch(`${svc.baseUrl}${path}`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/json', ...headers },
    body: '{}',
  });
  return { status: res.status, json: (await res.json()) as any };
}

async function csrfOf(cookie: string): Promise<string> {
  const me = await get('/desk/api/session', cookie);
  expect(me.status).toBe(200);
  return me.json.data.csrfToken;
}

beforeAll(async () => {
  svc = await startService({ now: () => new Date(clock), logger: capturedLogger('info', logLines), maxStreamsPerAccount: 0 });
  alice = await svc.account(100_000n);
  bob = await svc.account(100_000n);
  for (const [name, acct] of [
    ['alice', alice],
    ['bob', bob],
  ] as const) {
    const call = await apiPost(`${STT}/calls`, { title: `${name}'s call` }, acct.accessKey);
    const leg = await apiPost(
      `${STT}/realtime/sessions`,
      { title: `${name} leg`, callId: call.data.callId, speaker: 'customer' },
      acct.accessKey,
    );
    own[name] = {
      callId: call.data.callId,
      sessionId: leg.data.sessionId,
      transcriptionId: leg.data.transcriptionId,
      streamUrl: leg.data.streamUrl,
    };
    await svc.service.store.appendSegment({
      transcriptionId: leg.data.transcriptionId,
      index: 0,
      startSample: 16_000n,
      endSample: 48_000n,
      text: `${name} wants to cancel my subscription`,
      words: [],
      createdAt: new Date(clock).toISOString(),
    });
  }
}, 60_000);

afterAll(async () => {
  await svc?.stop();
});

describe('login links', () => {
  it('the CLI prints a link whose token is in the fragment; it logs in once, with an httpOnly SameSite=Strict cookie', async () => {
    const { stdout } = await run(process.execPath, [
      CLI,
      'accounts',
      'login-link',
      '--account',
      alice.accountId,
      '--base-url',
      svc.baseUrl,
      '--ttl',
      '10m',
      '--json',
      ...(await storeArgsFor(svc.dataDir)),
    ]);
    const out = JSON.parse(stdout);
    const url = new URL(out.url);
    expect(`${url.origin}${url.pathname}`).toBe(`${svc.baseUrl}/desk/login`);
    expect(url.search).toBe('');
    expect(url.hash).toMatch(/^#dl_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    expect(Date.parse(out.expiresAt) - Date.now()).toBeGreaterThan(9 * 60_000);
    expect(Date.parse(out.expiresAt) - Date.now()).toBeLessThanOrEqual(10 * 60_000);
    // The link's page is served without the token (the fragment never reaches a server).
    const page = await fetch(`${svc.baseUrl}/desk/login`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toMatch(/frame-ancestors 'none'/);

    const first = await login(url.hash.slice(1));
    expect(first.status, JSON.stringify(first.json)).toBe(200);
    expect(first.json.data.accountId).toBe(alice.accountId);
    const flags = first.setCookie!.split(';').map((s) => s.trim());
    expect(flags[0]).toMatch(/^scribed_desk=ds_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    expect(flags).toEqual(expect.arrayContaining(['Path=/', 'HttpOnly', 'SameSite=Strict', `Max-Age=${SESSION_ABSOLUTE_MS / 1000}`]));
    expect(flags).not.toContain('Secure'); // plain http: a Secure cookie would never come back
    const me = await get('/desk/api/session', flags[0]!);
    expect(me.json.data).toMatchObject({ accountId: alice.accountId, idleTimeoutSeconds: SESSION_IDLE_MS / 1000 });

    // Single use: the same link again, even at once, is refused and sets nothing.
    const again = await login(url.hash.slice(1));
    expect(again.status).toBe(401);
    expect(again.json.message).toMatch(/^UNAUTHORIZED: this login link is not valid/);
    expect(again.setCookie).toBeNull();
  });

  it('two redeems of one link at once make one session', async () => {
    const token = await link(alice.accountId);
    const both = await Promise.all([login(token), login(token), login(token)]);
    expect(both.map((r) => r.status).sort()).toEqual([200, 401, 401]);
  });

  it('expires: a link after its ttl, a session idle 8 h, a session 24 h after its login however busy', async () => {
    const start = clock;
    try {
      const token = await link(alice.accountId, 60_000);
      clock += 60_000;
      expect((await login(token)).status).toBe(401);

      const idle = await session(alice.accountId);
      clock += SESSION_IDLE_MS - 1000;
      expect((await get('/desk/api/session', idle)).status).toBe(200); // and this use moves the idle limit on
      clock += SESSION_IDLE_MS - 1000;
      expect((await get('/desk/api/session', idle)).status).toBe(200);
      clock += SESSION_IDLE_MS;
      expect((await get('/desk/api/session', idle)).status).toBe(401);

      const busy = await session(alice.accountId);
      for (let h = 0; h < 23; h += 1) {
        clock += 3_600_000;
        expect((await get(`${STT}/search?q=cancel`, busy)).status, `hour ${h + 1}`).toBe(200);
      }
      clock += 3_600_000;
      expect((await get(`${STT}/search?q=cancel`, busy)).status).toBe(401);
      expect((await get('/desk/api/session', busy)).status).toBe(401);
    } finally {
      clock = start;
    }
  });

  it('refuses a login from another origin or without one (login CSRF), a malformed token and a session token', async () => {
    const token = await link(alice.accountId);
    expect((await login(token, {})).status).toBe(403);
    const foreign = await login(token, { origin: 'https://evil.example' });
    expect([foreign.status, foreign.json.message]).toEqual([403, expect.stringMatching(/^DESK_REQUEST_REFUSED: /)]);
    // The refused attempts did not spend the link.
    expect((await login(token)).status).toBe(200);
    expect((await login('dl_0123456789abcdef_short')).status).toBe(401);
    const cookie = await session(alice.accountId);
    const asLink = await login(cookie.split('=')[1]!);
    expect([asLink.status, asLink.json.message]).toEqual([422, expect.stringMatching(/^VALIDATION_FAILED: token: /)]);
    expect((await login(`dl_${cookie.split('=')[1]!.slice(3)}`)).status).toBe(401);
  });

  it('the operator CLI refuses an unknown account; a bad --ttl or --base-url is refused before the store', async () => {
    // One process (each start costs seconds on a loaded machine); the parsing it runs is the
    // same functions, checked here in-process.
    const err = await run(process.execPath, [
      CLI,
      'accounts',
      'login-link',
      '--account',
      'acct_nobody',
      '--base-url',
      svc.baseUrl,
      ...(await storeArgsFor(svc.dataDir)),
    ]).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    );
    expect(err?.stderr).toMatch(/NOT_FOUND: account acct_nobody does not exist/);
    expect(parseLinkTtl('90s')).toBe(90_000);
    expect(parseLinkTtl('15m')).toBe(900_000);
    expect(parseLinkTtl('24h')).toBe(86_400_000);
    for (const bad of ['15', '2d', '5s', '25h', '-1m', '']) expect(() => parseLinkTtl(bad), bad).toThrow(/--ttl must be/);
    for (const bad of ['javascript:alert(1)', 'ftp://host', 'not a url']) {
      await expect(issueLoginLink(svc.service.store, alice.accountId, bad, 60_000, new Date(clock))).rejects.toThrow(
        /--base-url must be an http or https URL/,
      );
    }
  });
});

describe('a desk session', () => {
  it('reads its own account through the listed native GETs and the desk routes', async () => {
    const cookie = await session(alice.accountId);
    const hits = await get(`${STT}/search?q=${encodeURIComponent('"cancel my subscription"')}`, cookie);
    expect(hits.status).toBe(200);
    expect(hits.json.data.items.map((h: any) => h.transcriptionId)).toEqual([own.alice.transcriptionId]);
    expect((await get(`${STT}/transcriptions/${own.alice.transcriptionId}`, cookie)).json.data.transcriptionId).toBe(
      own.alice.transcriptionId,
    );
    const transcript = await get(`${STT}/transcriptions/${own.alice.transcriptionId}/transcript?format=json`, cookie);
    expect(transcript.json.segments[0].text).toBe('alice wants to cancel my subscription');
    // The audit trail names the desk session that downloaded it (docs/redaction.md).
    const audit = await svc.service.store.listAudit(alice.accountId, 100);
    const sessionId = `ds_${cookie.split('=')[1]!.split('_')[1]}`;
    expect(
      audit
        .filter((a) => a.credentialId === sessionId)
        .map((a) => [a.action, a.subjectId])
        .sort(),
    ).toEqual([
      ['desk.login', sessionId],
      ['transcript.download', own.alice.transcriptionId],
    ]);
    expect((await get(`${STT}/calls/${own.alice.callId}`, cookie)).json.data.legs[0].speaker).toBe('customer');
    const merged = await get(`${STT}/calls/${own.alice.callId}/transcript?format=json`, cookie);
    expect(merged.json.segments.map((s: any) => [s.speaker, s.startMs])).toEqual([['customer', 1000]]);
    expect((await get(`${STT}/realtime/sessions/${own.alice.sessionId}`, cookie)).status).toBe(200);
    // The live list holds sessions a client streams to, and only those (docs/desk.md).
    expect((await get('/desk/api/live', cookie)).json.data.items).toEqual([]);
    const client = await StreamClient.connect(`${svc.wsBase}${own.alice.streamUrl}`, { accessKey: alice.accessKey });
    try {
      await client.next('ready');
      const live = await get('/desk/api/live', cookie);
      expect(live.json.data.items.map((s: any) => [s.sessionId, s.callId, s.speaker])).toEqual([
        [own.alice.sessionId, own.alice.callId, 'customer'],
      ]);
    } finally {
      client.terminate();
    }
    // HEAD as GET (the page checks a recording with it); the response carries no-store.
    const head = await fetch(`${svc.baseUrl}${STT}/transcriptions/${own.alice.transcriptionId}`, { method: 'HEAD', headers: { cookie } });
    expect(head.status).toBe(200);
  });

  it("never reads another account's rows: 404 for Bob's, Alice's alone in search and the live list", async () => {
    const cookie = await session(alice.accountId);
    for (const path of [
      `${STT}/transcriptions/${own.bob.transcriptionId}`,
      `${STT}/transcriptions/${own.bob.transcriptionId}/transcript`,
      `${STT}/calls/${own.bob.callId}`,
      `${STT}/calls/${own.bob.callId}/transcript`,
      `${STT}/realtime/sessions/${own.bob.sessionId}`,
    ]) {
      expect((await get(path, cookie)).status, path).toBe(404);
    }
    const csrf = await csrfOf(cookie);
    const ticket = await deskPost(`/desk/api/sessions/${own.bob.sessionId}/watch-ticket`, cookie, {
      origin: origin(),
      'x-scribed-desk-csrf': csrf,
    });
    expect(ticket.status).toBe(404);
    const hits = await get(`${STT}/search?q=cancel`, cookie);
    expect(hits.json.data.items.map((h: any) => h.transcriptionId)).toEqual([own.alice.transcriptionId]);
    // Bob's own desk sees Bob's.
    const bobs = await session(bob.accountId);
    expect((await get(`${STT}/search?q=cancel`, bobs)).json.data.items.map((h: any) => h.transcriptionId)).toEqual([
      own.bob.transcriptionId,
    ]);
  });

  it('never writes and opens nothing unlisted: POST, DELETE and unlisted GETs answer 401 as without it', async () => {
    const cookie = await session(alice.accountId);
    const asDesk = async (method: string, path: string) =>
      (
        await fetch(`${svc.baseUrl}${path}`, {
          method,
          headers: { cookie, origin: origin(), 'content-type': 'application/json', 'Idempotency-Key': randomUUID() },
          body: method === 'GET' ? undefined : '{}',
        })
      ).status;
    expect(await asDesk('POST', `${STT}/calls`)).toBe(401);
    expect(await asDesk('POST', `${STT}/realtime/sessions`)).toBe(401);
    expect(await asDesk('POST', `${STT}/realtime/sessions/${own.alice.sessionId}/tickets`)).toBe(401);
    expect(await asDesk('POST', `${STT}/realtime/sessions/${own.alice.sessionId}/close`)).toBe(401);
    expect(await asDesk('DELETE', `${STT}/transcriptions/${own.alice.transcriptionId}`)).toBe(401);
    expect(await asDesk('DELETE', `${STT}/calls/${own.alice.callId}`)).toBe(401);
    expect(await asDesk('GET', '/sound_clone/api/v1/account')).toBe(401);
    expect(await asDesk('GET', '/sound_clone/api/v1/webhooks/endpoints')).toBe(401);
    // A bad cookie on a listed GET is not a credential either.
    expect(
      (await get(`${STT}/search?q=cancel`, 'scribed_desk=ds_0123456789abcdef_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')).status,
    ).toBe(401);
    // The session is still good and the rows are all there.
    expect((await get(`${STT}/transcriptions/${own.alice.transcriptionId}`, cookie)).status).toBe(200);
    expect((await get(`${STT}/calls/${own.alice.callId}`, cookie)).json.data.legs).toHaveLength(1);
  });

  it('state changes need this origin and the CSRF token: a watch ticket, then logout ends the session', async () => {
    const cookie = await session(alice.accountId);
    const csrf = await csrfOf(cookie);
    const path = `/desk/api/sessions/${own.alice.sessionId}/watch-ticket`;
    const refused: Record<string, string>[] = [
      { origin: origin() },
      { origin: origin(), 'x-scribed-desk-csrf': `${csrf.slice(0, -1)}${csrf.endsWith('A') ? 'B' : 'A'}` },
      { 'x-scribed-desk-csrf': csrf },
      { origin: 'https://evil.example', 'x-scribed-desk-csrf': csrf },
    ];
    for (const headers of refused) {
      const r = await deskPost(path, cookie, headers);
      expect([r.status, r.json.message], JSON.stringify(headers)).toEqual([403, expect.stringMatching(/^DESK_REQUEST_REFUSED: /)]);
    }
    // Another session's token is not this one's.
    expect(
      (await deskPost(path, cookie, { origin: origin(), 'x-scribed-desk-csrf': await csrfOf(await session(alice.accountId)) })).status,
    ).toBe(403);
    const ticket = await deskPost(path, cookie, { origin: origin(), 'x-scribed-desk-csrf': csrf });
    expect(ticket.status).toBe(200);
    expect(ticket.json.data).toMatchObject({
      sessionId: own.alice.sessionId,
      watchUrl: `${STT}/realtime/sessions/${own.alice.sessionId}/events`,
      ticket: expect.stringMatching(/^tkt_/),
    });

    expect((await deskPost('/desk/api/logout', cookie, { origin: origin() })).status).toBe(403);
    const res = await fetch(`${svc.baseUrl}/desk/api/logout`, {
      method: 'POST',
      headers: { cookie, origin: origin(), 'x-scribed-desk-csrf': csrf, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('set-cookie')).toMatch(/^scribed_desk=; .*Max-Age=0/);
    expect((await get('/desk/api/session', cookie)).status).toBe(401);
    expect((await get(`${STT}/search?q=cancel`, cookie)).status).toBe(401);
    expect((await deskPost(path, cookie, { origin: origin(), 'x-scribed-desk-csrf': csrf })).status).toBe(401);
  });

  it("the operator's desk-logout ends every session of the account and voids its unused links; another account's stay", async () => {
    const [one, two, bobs] = [await session(alice.accountId), await session(alice.accountId), await session(bob.accountId)];
    const unused = await link(alice.accountId);
    const { stdout } = await run(process.execPath, [
      CLI,
      'accounts',
      'desk-logout',
      '--account',
      alice.accountId,
      '--json',
      ...(await storeArgsFor(svc.dataDir)),
    ]);
    const out = JSON.parse(stdout);
    expect(out.accountId).toBe(alice.accountId);
    expect(out.sessions).toBeGreaterThanOrEqual(2);
    expect(out.links).toBeGreaterThanOrEqual(1);
    for (const cookie of [one, two]) expect((await get(`${STT}/search?q=cancel`, cookie)).status).toBe(401);
    expect((await login(unused)).status).toBe(401);
    expect((await get(`${STT}/search?q=cancel`, bobs)).status).toBe(200);
    expect((await login(await link(alice.accountId))).status).toBe(200); // a new link works again
  });

  it('stores link tokens and session cookies hashed only, and logs neither', async () => {
    const token = await link(alice.accountId);
    const r = await login(token);
    const cookieValue = r.setCookie!.split(';')[0]!.split('=')[1]!;
    await get(`${STT}/search?q=cancel`, `scribed_desk=${cookieValue}`);
    const secrets = [token.split('_').slice(2).join('_'), cookieValue.split('_').slice(2).join('_')];
    const dump = await storeDump(svc);
    const log = logLines.join('\n');
    for (const secret of secrets) {
      expect(secret).toHaveLength(43);
      expect(dump.includes(secret)).toBe(false);
      expect(log.includes(secret)).toBe(false);
    }
    expect(log).toContain(token.split('_').slice(0, 2).join('_')); // the link's public id is logged
  });
});
