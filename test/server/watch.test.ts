// The watch socket (docs/protocol.md, "Watching a session") against a real server and the real
// recognizer: a supervisor's read-only view of a session another client streams. Credentials
// as the stream socket's (key, single-use ticket, another account's session not found); every
// event the stream socket gets but acks, pongs and errors, in the same order, after a
// `watching` snapshot; no recognizer and no place in the account's stream limit; a paused
// session keeps its watchers; at most 8 per session; a watcher that stops reading is let go
// while the session goes on; ping answered, anything else an error with the socket kept;
// closed with the session. On PostgreSQL, a node that does not serve the session refuses
// with SESSION_ELSEWHERE.
import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, tempDir, testStore, type TestService } from '../helpers/service.js';
import { chunks, loadClips } from '../helpers/audio.js';
import { HandshakeRefused, StreamClient, type StreamEvent } from '../helpers/stream-client.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';

const SESSIONS = '/sound_clone/api/v1/stt/realtime/sessions';
const TRANSCRIPTIONS = '/sound_clone/api/v1/stt/transcriptions';
const clip = loadClips().find((c) => c.id === 'librivox-0880')!;
const shared = testStore() === 'postgres';

let svc: TestService;
let alice: ProvisionedAccount;
let bob: ProvisionedAccount;

beforeAll(async () => {
  // One stream per account: watching must not need a place of its own.
  svc = await startService({ maxDecoders: 2, maxStreamsPerAccount: 1 });
  alice = await svc.account(10_000n);
  bob = await svc.account(10_000n);
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

async function post(path: string, body: unknown, key = alice.accessKey, extra: Record<string, string> = {}) {
  const res = await fetch(`${svc.baseUrl}${path}`, {
    method: 'POST',
    headers: { accessKey: key, 'content-type': 'application/json', ...extra },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as any };
}

async function createSession(key = alice.accessKey) {
  const r = await post(SESSIONS, { title: 'watched call', options: { inputEncoding: 'pcm_s16le_16000' } }, key, {
    'Idempotency-Key': `watch-${randomUUID()}`,
  });
  expect(r.status, JSON.stringify(r.json)).toBe(200);
  return r.json.data as { sessionId: string; transcriptionId: string; streamUrl: string };
}

const eventsUrl = (sessionId: string, query = '') => `${svc.wsBase}${SESSIONS}/${sessionId}/events${query}`;

function watch(sessionId: string, key = alice.accessKey) {
  return StreamClient.connect(eventsUrl(sessionId), { accessKey: key });
}

async function refused(p: Promise<unknown>): Promise<HandshakeRefused> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(HandshakeRefused);
  return err as HandshakeRefused;
}

async function stream(streamUrl: string) {
  const c = await StreamClient.connect(`${svc.wsBase}${streamUrl}`, { accessKey: alice.accessKey });
  await c.next('ready');
  return c;
}

/** The clip's 16 kHz PCM in 20 ms frames, as fast as the socket takes them; resolves on the
 * last ack. */
async function streamClip(c: StreamClient, epoch = 1) {
  let offset = 0;
  for (const f of chunks(clip.pcm16k, 2, 320)) {
    c.audio(epoch, offset, f);
    offset += f.length / 2;
  }
  await c.next('ack', (e) => e.epoch === epoch && e.sampleOffset === offset, 60_000);
  return offset;
}

async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${svc.baseUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return line ? Number(line.split(' ').pop()) : 0;
}

async function until(fn: () => Promise<boolean> | boolean, ms = 20_000) {
  const deadline = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** How many events of a type a client has seen, counted as they come (the slow-watcher test
 * sees hundreds of thousands). */
function counter(client: StreamClient, type: string): () => number {
  let seen = 0;
  let n = 0;
  return () => {
    for (; seen < client.events.length; seen++) if (client.events[seen]!.type === type) n++;
    return n;
  };
}

/** What a watcher is sent of the stream socket's events. */
const mirrored = (events: StreamEvent[]) => events.filter((e) => !['ack', 'pong', 'error'].includes(e.type));

describe('watch socket', () => {
  it('takes the key header or a single-use ticket bound to the session; another account reads NOT_FOUND', async () => {
    const s = await createSession();
    const c = await stream(s.streamUrl);

    const byKey = await watch(s.sessionId);
    expect(await byKey.next('watching')).toMatchObject({
      sessionId: s.sessionId,
      transcriptionId: s.transcriptionId,
      state: 'RECORDING',
      streaming: true,
      epoch: 1,
      capturedSamples: '0',
      openSegmentId: null,
      segments: 0,
    });

    const t = (await post(`${SESSIONS}/${s.sessionId}/tickets`, {})).json.data as { ticket: string };
    const byTicket = await StreamClient.connect(eventsUrl(s.sessionId, `?ticket=${encodeURIComponent(t.ticket)}`));
    expect((await byTicket.next('watching')).sessionId).toBe(s.sessionId);
    const replay = await refused(StreamClient.connect(eventsUrl(s.sessionId, `?ticket=${encodeURIComponent(t.ticket)}`)));
    expect(replay.status).toBe(401);
    expect(replay.body.message).toMatch(/^TICKET_INVALID: .*used/);

    // A ticket of another session, no credential, a key in the URL.
    const other = await createSession();
    const t2 = (await post(`${SESSIONS}/${other.sessionId}/tickets`, {})).json.data as { ticket: string };
    expect((await refused(StreamClient.connect(eventsUrl(s.sessionId, `?ticket=${encodeURIComponent(t2.ticket)}`)))).body.message).toMatch(
      /^TICKET_INVALID: .*another session/,
    );
    expect((await refused(StreamClient.connect(eventsUrl(s.sessionId)))).status).toBe(401);
    expect((await refused(StreamClient.connect(eventsUrl(s.sessionId, `?accessKey=${alice.accessKey}`)))).body.message).toMatch(
      /^ACCESS_KEY_IN_URL/,
    );

    const foreign = await refused(watch(s.sessionId, bob.accessKey));
    expect(foreign.status).toBe(404);
    expect(foreign.body.message).toMatch(/^NOT_FOUND/);
    expect((await refused(watch('rts_doesnotexist'))).status).toBe(404);

    byKey.close();
    byTicket.close();
    c.control({ type: 'close' });
    await c.next('closed');
    const closed = await refused(watch(s.sessionId));
    expect(closed.status).toBe(409);
    expect(closed.body.message).toMatch(/^SESSION_CLOSED/);
  });

  it("mirrors the stream socket's events in order from the snapshot on, through a pause and a resume, then closes with the session", async () => {
    const s = await createSession();
    let early: StreamClient | null = null;
    if (shared) {
      // Nobody serves a session before its first stream socket: on the shared store a node
      // cannot tell it will, so the watcher is told to retry.
      const r = await refused(watch(s.sessionId));
      expect(r.status).toBe(409);
      expect(r.body.message).toMatch(/^SESSION_ELSEWHERE/);
    } else {
      // One node: the watcher may come first and waits for the call.
      early = await watch(s.sessionId);
      expect(await early.next('watching')).toMatchObject({ state: 'RECORDING', streaming: false, capturedSamples: '0' });
    }
    const c = await stream(s.streamUrl);
    const w = await watch(s.sessionId);
    const snapshot = await w.next('watching');
    expect(snapshot).toMatchObject({ streaming: true, epoch: 1, capturedSamples: '0' });
    expect(w.events).toHaveLength(1);
    const from = c.events.length; // the stream socket's events after the snapshot

    // The stream socket's own business (a pong, a frame error) is not mirrored.
    c.control({ type: 'ping', id: 'p1' });
    c.raw(Buffer.from([9, 9, 9]));
    await c.next('pong');
    await c.next('error', (e) => e.code === 'MALFORMED_FRAME');
    const half = Math.floor(clip.pcm16k.length / 4) * 2;
    let offset = 0;
    for (const f of chunks(clip.pcm16k.subarray(0, half), 2, 320)) {
      c.audio(1, offset, f);
      offset += f.length / 2;
    }
    await c.next('ack', (e) => e.sampleOffset === offset, 60_000);
    // Partials of a segment come as its batches are decoded, behind the acks.
    await c.next('partial', () => true, 60_000);
    c.control({ type: 'commit' });
    await c.next('committed', () => true, 60_000);

    // The stream socket drops: the session pauses and the watcher stays, told so.
    c.terminate();
    const paused = await w.next('watching', () => true, 20_000);
    expect(paused).toMatchObject({ state: 'PAUSED', streaming: false, capturedSamples: String(offset) });
    const streamed1 = c.events.slice(from);

    const r = await post(`${SESSIONS}/${s.sessionId}/resume`, { capturedSamples: String(offset) });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    const c2 = await stream(s.streamUrl);
    const rest = clip.pcm16k.subarray(half);
    let o2 = 0;
    for (const f of chunks(rest, 2, 320)) {
      c2.audio(2, o2, f);
      o2 += f.length / 2;
    }
    await c2.next('ack', (e) => e.sampleOffset === o2, 60_000);
    await c2.next('partial', () => true, 60_000);
    c2.control({ type: 'close' });
    await c2.next('closed', () => true, 60_000);
    const wClose = await w.closed;
    expect(wClose.code).toBe(1000);

    // Exactly the stream sockets' events, in order, with the pause snapshot between epochs.
    const expected = [...mirrored(streamed1), paused, ...mirrored(c2.events)];
    expect(w.events.slice(1)).toEqual(expected);
    expect(w.events.some((e) => e.type === 'partial')).toBe(true);
    expect(w.ofType('ready').map((e) => e.epoch)).toEqual([2]);
    expect(w.events.at(-1)).toMatchObject({ type: 'closed', status: 'COMPLETED' });

    // The finals the watcher saw are the transcript.
    const finals = w.ofType('final');
    expect(finals.length).toBeGreaterThanOrEqual(2);
    const json = (await (
      await fetch(`${svc.baseUrl}${TRANSCRIPTIONS}/${s.transcriptionId}/transcript?format=json`, {
        headers: { accessKey: alice.accessKey },
      })
    ).json()) as any;
    const segments = (json.data?.segments ?? json.segments) as Array<{ id: string; text: string }>;
    expect(finals.map((f) => [f.segmentId, f.text])).toEqual(segments.map((g) => [g.id, g.text]));

    if (early) {
      // The watcher that came first saw the call start with `ready`, then the same events.
      expect(early.events[1]).toMatchObject({ type: 'ready', epoch: 1 });
      expect(early.ofType('final')).toEqual(finals);
      expect((await early.closed).code).toBe(1000);
    }
  }, 120_000);

  it('takes no recognizer and no place in the account stream limit; answers ping, refuses anything else and keeps watching', async () => {
    const streaming = await createSession();
    const c = await stream(streaming.streamUrl);
    // The account holds its one stream: a second session's stream socket is refused...
    const idle = await createSession();
    expect((await refused(StreamClient.connect(`${svc.wsBase}${idle.streamUrl}`, { accessKey: alice.accessKey }))).status).toBe(429);
    // ...its watchers are not.
    const w = await watch(streaming.sessionId);
    await w.next('watching');
    const before = await metric('scribed_session_watchers');
    expect(before).toBeGreaterThanOrEqual(1);

    w.control({ type: 'ping', id: 'w1' });
    expect(await w.next('pong')).toEqual({ type: 'pong', id: 'w1' });
    w.control({ type: 'commit' });
    expect(await w.next('error')).toMatchObject({ code: 'WATCHER_READ_ONLY', fatal: false });
    w.control({ type: 'close' });
    expect(await w.next('error')).toMatchObject({ code: 'WATCHER_READ_ONLY', fatal: false });
    w.audio(1, 0, Buffer.alloc(640));
    expect(await w.next('error')).toMatchObject({ code: 'WATCHER_READ_ONLY', fatal: false });
    w.raw('not json');
    expect(await w.next('error')).toMatchObject({ code: 'MALFORMED_FRAME', fatal: false });
    w.control({ type: 'ping' });
    expect(await w.next('pong')).toEqual({ type: 'pong' });
    // Nothing of it reached the session: no commit, no close, no audio.
    await new Promise((r) => setTimeout(r, 200));
    expect(c.ofType('committed')).toHaveLength(0);
    expect(c.ofType('closed')).toHaveLength(0);
    expect(c.ofType('ack')).toHaveLength(0);
    expect(w.ws.readyState).toBe(w.ws.OPEN);

    w.close();
    await w.closed;
    await until(async () => (await metric('scribed_session_watchers')) === before - 1);
    c.control({ type: 'close' });
    await c.next('closed');
  });

  it('takes at most 8 watchers per session; a place comes back when one leaves', async () => {
    const s = await createSession();
    const c = await stream(s.streamUrl);
    const ws: StreamClient[] = [];
    for (let i = 0; i < 8; i++) {
      const w = await watch(s.sessionId);
      await w.next('watching');
      ws.push(w);
    }
    const ninth = await refused(watch(s.sessionId));
    expect(ninth.status).toBe(429);
    expect(ninth.body.message).toMatch(/^WATCHER_LIMIT: .*8 watchers/);
    ws[3]!.close();
    await ws[3]!.closed;
    let again: StreamClient | null = null;
    await until(async () => {
      again = await watch(s.sessionId).catch(() => null);
      return again !== null;
    });
    await again!.next('watching');
    // Each of the eight still watching sees the session's close.
    c.control({ type: 'close' });
    await c.next('closed');
    for (const w of [...ws.filter((_, i) => i !== 3), again!]) expect((await w.next('closed')).status).toBe('COMPLETED');
  });

  it('lets a watcher that stops reading go, while the session and the other watchers go on', async () => {
    const s = await createSession();
    const c = await stream(s.streamUrl);
    const healthy = await watch(s.sessionId);
    await healthy.next('watching');
    const stalled = await watch(s.sessionId);
    await stalled.next('watching');
    // The stalled watcher's connection stops reading: the kernel's buffers fill (about 4 MB on
    // loopback), then the server's socket buffers up to the bound (1 MiB), then it is let go.
    (stalled.ws as unknown as { _socket: Socket })._socket.pause();
    const dropped0 = await metric('scribed_session_watchers_dropped_total');

    // Commits with no audio are the cheapest events a session sends (one `committed` each):
    // sent until the server lets the stalled watcher go, at most 400 000 (24 MB).
    const answered = counter(c, 'committed');
    const mirroredToHealthy = counter(healthy, 'committed');
    let sent = 0;
    const t0 = Date.now();
    while ((await metric('scribed_session_watchers_dropped_total')) === dropped0) {
      expect(sent).toBeLessThan(400_000);
      for (let i = 0; i < 20_000; i++) c.control({ type: 'commit' });
      sent += 20_000;
      await until(() => answered() === sent, 60_000);
    }
    const elapsed = Date.now() - t0;
    expect(await metric('scribed_session_watchers_dropped_total')).toBe(dropped0 + 1);
    // The session never waited for the stalled reader: every commit was answered while it
    // stalled, and the healthy watcher got every one of them, in order.
    await until(() => mirroredToHealthy() === sent, 60_000);
    expect(healthy.ofType('committed')).toEqual(c.ofType('committed'));
    console.log(`slow watcher let go after ${sent} commits (${elapsed} ms)`);

    // Real speech after the drop still gets its final to the stream socket and the watcher.
    await streamClip(c);
    c.control({ type: 'commit' });
    const final = await c.next('final', () => true, 60_000);
    expect(final.text.length).toBeGreaterThan(0);
    expect(await healthy.next('final', () => true, 60_000)).toEqual(final);

    // The stalled watcher, reading again, finds a prefix of the events and the close 4002.
    (stalled.ws as unknown as { _socket: Socket })._socket.resume();
    const closed = await stalled.closed;
    expect(closed).toEqual({ code: 4002, reason: 'WATCHER_TOO_SLOW' });
    const got = stalled.ofType('committed');
    expect(got.length).toBeGreaterThan(0);
    expect(got.length).toBeLessThan(sent);
    expect(got).toEqual(c.ofType('committed').slice(0, got.length));
    c.control({ type: 'close' });
    await c.next('closed', () => true, 60_000);
  }, 120_000);
});

describe.runIf(shared)('watch socket on nodes that share PostgreSQL', () => {
  it('a node that does not serve the session refuses the watcher with 409 SESSION_ELSEWHERE; the serving node takes it', async () => {
    const other = await startService({ dataDir: tempDir(), databaseUrl: svc.storeSettings.databaseUrl });
    try {
      const s = await createSession();
      const c = await stream(s.streamUrl);
      const r = await refused(StreamClient.connect(`${other.wsBase}${SESSIONS}/${s.sessionId}/events`, { accessKey: alice.accessKey }));
      expect(r.status).toBe(409);
      expect(r.body.message).toMatch(/^SESSION_ELSEWHERE/);
      // Another account's session is still NOT_FOUND there, not a hint that it exists.
      expect(
        (await refused(StreamClient.connect(`${other.wsBase}${SESSIONS}/${s.sessionId}/events`, { accessKey: bob.accessKey }))).status,
      ).toBe(404);
      const w = await watch(s.sessionId);
      await w.next('watching');
      c.control({ type: 'close' });
      await c.next('closed');
      expect((await w.closed).code).toBe(1000);
    } finally {
      await other.stop();
    }
  });
});
