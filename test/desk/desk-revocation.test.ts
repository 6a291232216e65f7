// The desk stays read-only and ends everywhere at once (docs/desk.md, docs/security.md), probed
// as an attacker with the desk cookie would, through the real sockets:
//  - a watch ticket the desk gets opens the watch socket and is refused by the stream socket
//    (401 TICKET_INVALID, no upgrade), so a desk cookie never streams audio into, closes or
//    charges a session;
//  - logout, `accounts desk-logout`, `accounts revoke-key` and expiry end the session's open
//    watch sockets (close 4003) within a second and void its unused tickets;
//  - on PostgreSQL, a logout on one node closes the watch socket another node holds;
//  - every desk action is in the audit trail.
// Uses the built CLI (dist/cli.js) for the operator's commands.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, storeArgsFor, tempDir, testStore, type TestService } from '../helpers/service.js';
import { CLI } from '../helpers/serve-process.js';
import { HandshakeRefused, StreamClient } from '../helpers/stream-client.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';
import { issueLoginLink } from '../../src/desk/login-link.js';
import { SESSION_ABSOLUTE_MS } from '../../src/desk/policy.js';

const run = promisify(execFile);
const SESSIONS = '/sound_clone/api/v1/stt/realtime/sessions';
const shared = testStore() === 'postgres';

let svc: TestService;
let clock = Date.now();

beforeAll(async () => {
  svc = await startService({ now: () => new Date(clock) });
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

interface Desk {
  svc: TestService;
  cookie: string;
  csrf: string;
}

async function deskLogin(accountId: string, on: TestService = svc): Promise<Desk> {
  const out = await issueLoginLink(on.service.store, accountId, on.baseUrl, 15 * 60_000, new Date(clock));
  const res = await fetch(`${on.baseUrl}/desk/api/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: on.baseUrl },
    body: JSON.stringify({ token: out.url.split('#')[1] }),
  });
  expect(res.status).toBe(200);
  const cookie = res.headers.get('set-cookie')!.split(';')[0]!;
  const me = (await (await fetch(`${on.baseUrl}/desk/api/session`, { headers: { cookie } })).json()) as any;
  return { svc: on, cookie, csrf: me.data.csrfToken };
}

async function watchTicket(desk: Desk, sessionId: string): Promise<{ status: number; ticket?: string; json: any }> {
  const res = await fetch(`${desk.svc.baseUrl}/desk/api/sessions/${sessionId}/watch-ticket`, {
    method: 'POST',
    headers: { cookie: desk.cookie, origin: desk.svc.baseUrl, 'x-scribed-desk-csrf': desk.csrf, 'content-type': 'application/json' },
    body: '{}',
  });
  const json = (await res.json()) as any;
  return { status: res.status, ticket: json.data?.ticket, json };
}

async function createSession(key: string, on: TestService = svc) {
  const res = await fetch(`${on.baseUrl}${SESSIONS}`, {
    method: 'POST',
    headers: { accessKey: key, 'content-type': 'application/json', 'Idempotency-Key': `rev-${randomUUID()}` },
    body: JSON.stringify({ title: 'a live call', options: { inputEncoding: 'pcm_s16le_16000' } }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as any).data as { sessionId: string; streamUrl: string };
}

/** A live session its backend streams with the key (so any node's watch can find it). */
async function liveSession(account: ProvisionedAccount, on: TestService = svc) {
  const s = await createSession(account.accessKey, on);
  const streamer = await StreamClient.connect(`${on.wsBase}${s.streamUrl}`, { accessKey: account.accessKey });
  await streamer.next('ready');
  return { ...s, streamer };
}

async function refused(p: Promise<unknown>): Promise<HandshakeRefused> {
  const err = await p.then(
    (c) => {
      (c as StreamClient).ws.close();
      return null;
    },
    (e: unknown) => e,
  );
  expect(err, 'the handshake was upgraded').toBeInstanceOf(HandshakeRefused);
  return err as HandshakeRefused;
}

const watchUrl = (on: TestService, sessionId: string, ticket: string) =>
  `${on.wsBase}${SESSIONS}/${sessionId}/events?ticket=${encodeURIComponent(ticket)}`;
const streamUrl = (on: TestService, sessionId: string, ticket: string) =>
  `${on.wsBase}${SESSIONS}/${sessionId}/stream?ticket=${encodeURIComponent(ticket)}`;

/** A watch socket the desk opened, and an unused second ticket of the same desk session. */
async function deskWatching(desk: Desk, sessionId: string, on: TestService = desk.svc) {
  const t = await watchTicket(desk, sessionId);
  expect(t.status, JSON.stringify(t.json)).toBe(200);
  const watcher = await StreamClient.connect(watchUrl(on, sessionId, t.ticket!));
  await watcher.next('watching');
  const spare = await watchTicket(desk, sessionId);
  expect(spare.status).toBe(200);
  return { watcher, spare: spare.ticket! };
}

/** How long after `from` the socket closed, and with what. */
async function closedWithin(watcher: StreamClient, from: number) {
  const closed = await Promise.race([watcher.closed, new Promise<null>((r) => setTimeout(() => r(null), 5_000))]);
  expect(closed, 'the watch socket stayed open').not.toBeNull();
  return { ...closed!, afterMs: Date.now() - from };
}

async function cli(...args: string[]) {
  const { stdout } = await run(process.execPath, [CLI, 'accounts', ...args, ...(await storeArgsFor(svc.dataDir))]);
  return stdout;
}

describe('the desk cannot write to a live session (F1)', () => {
  it("the desk's watch ticket opens the watch socket, and the stream socket refuses it before any upgrade", async () => {
    const alice = await svc.account(10_000n);
    const desk = await deskLogin(alice.accountId);
    // A session nobody streams to: what the desk's live view shows, and what the probe took.
    const s = await createSession(alice.accessKey);
    const t = await watchTicket(desk, s.sessionId);
    expect(t.status).toBe(200);
    const r = await refused(StreamClient.connect(streamUrl(svc, s.sessionId, t.ticket!)));
    expect(r.status).toBe(401);
    expect(r.body.message).toMatch(/^TICKET_INVALID: the ticket opens only the session's watch socket/);
    // The session was never streamed: no audio, no charge, still open.
    const row = await svc.service.store.getSession(s.sessionId, alice.accountId);
    expect(row?.state).not.toBe('CLOSED');
    expect(row?.capturedSamples).toBe(0n);
    // The API's own ticket (the integrator's backend, with the key) still streams.
    const api = await fetch(`${svc.baseUrl}${SESSIONS}/${s.sessionId}/tickets`, {
      method: 'POST',
      headers: { accessKey: alice.accessKey },
    });
    const apiTicket = ((await api.json()) as any).data.ticket as string;
    const streamer = await StreamClient.connect(streamUrl(svc, s.sessionId, apiTicket));
    await streamer.next('ready');
    streamer.ws.close();
  });

  it('every desk action is in the audit trail, naming the desk session', async () => {
    const alice = await svc.account(10_000n);
    const desk = await deskLogin(alice.accountId);
    const s = await createSession(alice.accessKey);
    expect((await watchTicket(desk, s.sessionId)).status).toBe(200);
    const res = await fetch(`${svc.baseUrl}/desk/api/logout`, {
      method: 'POST',
      headers: { cookie: desk.cookie, origin: svc.baseUrl, 'x-scribed-desk-csrf': desk.csrf },
    });
    expect(res.status).toBe(200);
    const deskSessionId = /^scribed_desk=ds_([0-9a-f]{16})_/.exec(desk.cookie)![1];
    // The test's clock stands still, so the three share a time: compared as a set.
    const events = await svc.service.store.listAudit(alice.accountId, 50);
    expect(events.map((e) => [e.action, e.subjectId, e.credentialId]).sort()).toEqual([
      ['desk.login', `ds_${deskSessionId}`, `ds_${deskSessionId}`],
      ['desk.logout', `ds_${deskSessionId}`, `ds_${deskSessionId}`],
      ['desk.watch_ticket', s.sessionId, `ds_${deskSessionId}`],
    ]);
  });
});

describe("a desk session's tickets and sockets end with it (F2, F5)", () => {
  it('logout closes its watch sockets at once and voids its unused tickets; another desk session of the account watches on', async () => {
    const alice = await svc.account(10_000n);
    const live = await liveSession(alice);
    const desk = await deskLogin(alice.accountId);
    const colleague = await deskLogin(alice.accountId);
    const { watcher, spare } = await deskWatching(desk, live.sessionId);
    const other = await deskWatching(colleague, live.sessionId);
    const at = Date.now();
    const res = await fetch(`${svc.baseUrl}/desk/api/logout`, {
      method: 'POST',
      headers: { cookie: desk.cookie, origin: svc.baseUrl, 'x-scribed-desk-csrf': desk.csrf },
    });
    expect(res.status).toBe(200);
    const closed = await closedWithin(watcher, at);
    expect(closed).toMatchObject({ code: 4003, reason: 'DESK_SESSION_ENDED' });
    expect(closed.afterMs).toBeLessThan(1_000);
    const r = await refused(StreamClient.connect(watchUrl(svc, live.sessionId, spare)));
    expect(r.status).toBe(401);
    expect(r.body.message).toMatch(/desk session that asked for this ticket has ended/);
    // The colleague's desk session is untouched.
    live.streamer.control({ type: 'ping', id: 'still-there' });
    expect(other.watcher.ws.readyState).toBe(other.watcher.ws.OPEN);
    other.watcher.ws.close();
    live.streamer.ws.close();
  });

  it('`accounts desk-logout` (another process) closes the watch sockets within a second and voids unused tickets', async () => {
    const alice = await svc.account(10_000n);
    const live = await liveSession(alice);
    const desk = await deskLogin(alice.accountId);
    const { watcher, spare } = await deskWatching(desk, live.sessionId);
    await cli('desk-logout', '--account', alice.accountId, '--json');
    const closed = await closedWithin(watcher, Date.now());
    expect(closed.code).toBe(4003);
    expect(closed.afterMs).toBeLessThan(1_000);
    expect((await refused(StreamClient.connect(watchUrl(svc, live.sessionId, spare)))).status).toBe(401);
    live.streamer.ws.close();
  });

  it("`accounts revoke-key` ends the account's desk sessions: the cookie is refused, sockets closed, tickets void", async () => {
    const alice = await svc.account(10_000n);
    const live = await liveSession(alice);
    const desk = await deskLogin(alice.accountId);
    const { watcher, spare } = await deskWatching(desk, live.sessionId);
    // One keep-alive connection for the cookie's reads before and after: a refusal is not a
    // fresh connection's luck.
    const before = await fetch(`${svc.baseUrl}/desk/api/session`, { headers: { cookie: desk.cookie } });
    expect(before.status).toBe(200);
    const out = JSON.parse(await cli('revoke-key', '--account', alice.accountId, '--json'));
    expect(out).toMatchObject({ deskSessionsEnded: 1 });
    const closed = await closedWithin(watcher, Date.now());
    expect(closed.code).toBe(4003);
    expect(closed.afterMs).toBeLessThan(1_000);
    expect((await fetch(`${svc.baseUrl}/desk/api/session`, { headers: { cookie: desk.cookie } })).status).toBe(401);
    expect((await fetch(`${svc.baseUrl}${SESSIONS}/${live.sessionId}`, { headers: { cookie: desk.cookie } })).status).toBe(401);
    expect((await refused(StreamClient.connect(watchUrl(svc, live.sessionId, spare)))).status).toBe(401);
    live.streamer.ws.close();
  });

  it("expiry ends the session's watch sockets and tickets as well", async () => {
    const alice = await svc.account(10_000n);
    const live = await liveSession(alice);
    const desk = await deskLogin(alice.accountId);
    const { watcher, spare } = await deskWatching(desk, live.sessionId);
    const saved = clock;
    clock += SESSION_ABSOLUTE_MS + 1_000;
    try {
      const closed = await closedWithin(watcher, Date.now());
      expect(closed.code).toBe(4003);
      expect(closed.afterMs).toBeLessThan(1_000);
      // Within the ticket's own life it is refused for its desk session's end alone.
      clock = saved + 1_000;
      await svc.service.store.endDeskSession(/^scribed_desk=(ds_[0-9a-f]{16})_/.exec(desk.cookie)![1]!, new Date(clock));
      expect((await refused(StreamClient.connect(watchUrl(svc, live.sessionId, spare)))).status).toBe(401);
    } finally {
      clock = saved;
      live.streamer.ws.close();
    }
  });
});

describe.runIf(shared)('on nodes that share PostgreSQL', () => {
  it("a logout on one node closes the watch socket another node holds within a second; the other node refuses the session's spare ticket", async () => {
    const other = await startService({ dataDir: tempDir(), databaseUrl: svc.storeSettings.databaseUrl, now: () => new Date(clock) });
    try {
      const alice = await svc.account(10_000n);
      // The call streams to the other node, which therefore serves its watchers.
      const live = await liveSession(alice, other);
      const desk = await deskLogin(alice.accountId, svc);
      const { watcher, spare } = await deskWatching(desk, live.sessionId, other);
      const at = Date.now();
      const res = await fetch(`${svc.baseUrl}/desk/api/logout`, {
        method: 'POST',
        headers: { cookie: desk.cookie, origin: svc.baseUrl, 'x-scribed-desk-csrf': desk.csrf },
      });
      expect(res.status).toBe(200);
      const closed = await closedWithin(watcher, at);
      expect(closed.code).toBe(4003);
      expect(closed.afterMs).toBeLessThan(1_000);
      expect((await refused(StreamClient.connect(watchUrl(other, live.sessionId, spare)))).status).toBe(401);
      live.streamer.ws.close();
    } finally {
      await other.stop();
    }
  });
});
