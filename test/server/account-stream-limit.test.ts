// Per-account streams against a real server. By default fair share, not a cap: one
// account alone uses every recognizer, sockets beyond them are deferred, and a freed
// recognizer goes to the account furthest below its share. An operator's
// --max-streams-per-account is a cap: past it the handshake is told ACCOUNT_STREAM_LIMIT (429)
// before the upgrade, a place comes back when a socket ends, and racing handshakes cannot
// overshoot it.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.js';
import { HandshakeRefused, StreamClient } from '../helpers/stream-client.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';

const SESSIONS = '/sound_clone/api/v1/stt/realtime/sessions';

async function openSession(svc: TestService, key: string): Promise<string> {
  const r = await fetch(`${svc.baseUrl}${SESSIONS}`, {
    method: 'POST',
    headers: { accessKey: key, 'content-type': 'application/json', 'Idempotency-Key': `lim-${randomUUID()}` },
    body: JSON.stringify({ options: { inputEncoding: 'pcm_s16le_16000' } }),
  });
  expect(r.status).toBe(200);
  return ((await r.json()) as { data: { streamUrl: string } }).data.streamUrl;
}

async function connect(svc: TestService, key: string, streamUrl: string): Promise<StreamClient | HandshakeRefused> {
  try {
    const c = await StreamClient.connect(`${svc.wsBase}${streamUrl}`, { accessKey: key });
    await c.next('ready');
    return c;
  } catch (err) {
    if (err instanceof HandshakeRefused) return err;
    throw err;
  }
}

function expectLimited(r: StreamClient | HandshakeRefused): void {
  expect(r).toBeInstanceOf(HandshakeRefused);
  const refused = r as HandshakeRefused;
  expect(refused.status).toBe(429);
  expect(refused.body.message).toMatch(/^ACCOUNT_STREAM_LIMIT: .*--max-streams-per-account/);
}

/** The session id in a stream URL (.../sessions/{id}/stream). */
const sessionIdOf = (streamUrl: string): string => streamUrl.split('/').at(-2)!;

// The default is fair share, not a cap: an account alone may use every recognizer,
// sockets beyond them are deferred (not refused) up to the backlog bound, and a freed
// recognizer goes to the account furthest below its share. The bound is given explicitly so
// the file runs the same on PostgreSQL, whose nodes do not defer by default.
describe('per-account streams by default: fair share, no cap', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService({ maxDecoders: 2, maxDeferredSeconds: 60 });
  }, 60_000);
  afterAll(async () => {
    await svc?.stop();
  });

  const served = (url: string) => svc.service.sessions.served(sessionIdOf(url));
  const recognizing = (url: string): boolean => !!served(url)?.holdsDecoder;
  /** 20 ms of audio, so a deferred session has something to catch up on. */
  const someAudio = (c: StreamClient): void => c.audio(1, 0, new Uint8Array(640));
  /** The session ends (its recognizer goes back to the node at once), then the socket. */
  async function end(c: StreamClient): Promise<void> {
    c.control({ type: 'close' });
    await c.next('closed');
    c.close();
    await c.closed;
  }
  const deferredNotice = (c: StreamClient): boolean => c.ofType('notice').some((n) => n.code === 'RECOGNITION_DEFERRED');

  it('one account alone uses every recognizer, and a socket beyond them is deferred, not refused', async () => {
    const alice = await svc.account(10_000n);
    const urls = [
      await openSession(svc, alice.accessKey),
      await openSession(svc, alice.accessKey),
      await openSession(svc, alice.accessKey),
    ];
    const a1 = await connect(svc, alice.accessKey, urls[0]!);
    const a2 = await connect(svc, alice.accessKey, urls[1]!);
    expect(a1).toBeInstanceOf(StreamClient);
    expect(a2).toBeInstanceOf(StreamClient);
    // Both recognizers are the account's: neither socket waits.
    expect(recognizing(urls[0]!)).toBe(true);
    expect(recognizing(urls[1]!)).toBe(true);
    expect(deferredNotice(a1 as StreamClient) || deferredNotice(a2 as StreamClient)).toBe(false);

    const a3 = await connect(svc, alice.accessKey, urls[2]!);
    expect(a3).toBeInstanceOf(StreamClient);
    await (a3 as StreamClient).next('notice', (n) => n.code === 'RECOGNITION_DEFERRED');
    expect(served(urls[2]!)?.isDeferred).toBe(true);
    expect(recognizing(urls[2]!)).toBe(false);
    someAudio(a3 as StreamClient);
    await (a3 as StreamClient).next('ack');

    // A second socket for a session the account already streams meets the session's own rule.
    const again = await connect(svc, alice.accessKey, urls[0]!);
    expect(again).toBeInstanceOf(HandshakeRefused);
    expect((again as HandshakeRefused).body.message).toMatch(/^SESSION_BUSY/);

    // A recognizer frees: the deferred socket catches up on it.
    await end(a1 as StreamClient);
    await (a3 as StreamClient).next('notice', (n) => n.code === 'RECOGNITION_CAUGHT_UP');
    expect(recognizing(urls[2]!)).toBe(true);
    for (const c of [a2, a3] as StreamClient[]) await end(c);
  }, 60_000);

  it('two accounts competing for two recognizers each get one: the account holding both gives one back, between segments, to the account below its share', async () => {
    const alice = await svc.account(10_000n);
    const bob = await svc.account(10_000n);
    const aUrls = [
      await openSession(svc, alice.accessKey),
      await openSession(svc, alice.accessKey),
      await openSession(svc, alice.accessKey),
    ];
    const bUrl = await openSession(svc, bob.accessKey);
    const a1 = (await connect(svc, alice.accessKey, aUrls[0]!)) as StreamClient;
    const a2 = (await connect(svc, alice.accessKey, aUrls[1]!)) as StreamClient;
    expect(recognizing(aUrls[0]!) && recognizing(aUrls[1]!)).toBe(true);
    // Alice's third socket waits first: her own account holds both, so nobody yields to it.
    const a3 = (await connect(svc, alice.accessKey, aUrls[2]!)) as StreamClient;
    await a3.next('notice', (n) => n.code === 'RECOGNITION_DEFERRED');
    // Both of Alice's live sessions are inside a segment (manual commit: audio opens one), so
    // neither may give its recognizer back yet: no utterance is cut for fair share.
    for (const c of [a1, a2, a3]) {
      someAudio(c);
      await c.next('ack');
    }
    const b1 = (await connect(svc, bob.accessKey, bUrl)) as StreamClient;
    await b1.next('notice', (n) => n.code === 'RECOGNITION_DEFERRED');
    someAudio(b1);
    await b1.next('ack');
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(recognizing(aUrls[0]!) && recognizing(aUrls[1]!)).toBe(true);
    expect(recognizing(bUrl)).toBe(false);

    // a2's segment ends (its final is sent): between segments, it gives its recognizer back.
    // Alice holds 2 and Bob 0: Bob gets it, though Alice's third socket has waited longer.
    a2.control({ type: 'commit' });
    await a2.next('final');
    await b1.next('notice', (n) => n.code === 'RECOGNITION_CAUGHT_UP');
    await a2.next('notice', (n) => n.code === 'RECOGNITION_DEFERRED');
    expect(recognizing(bUrl)).toBe(true);
    expect(served(aUrls[1]!)?.isDeferred).toBe(true);
    expect(recognizing(aUrls[0]!)).toBe(true);
    expect(served(aUrls[2]!)?.isDeferred).toBe(true);
    expect(a1.ofType('notice').some((n) => n.code === 'RECOGNITION_DEFERRED')).toBe(false);
    // One each now: nobody yields again.
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(recognizing(aUrls[0]!) && recognizing(bUrl)).toBe(true);
    const yields = await (await fetch(`${svc.baseUrl}/metrics`)).text();
    expect(yields).toMatch(/^scribed_recognizer_yields_total 1$/m);

    // A deferred session's close waits for a recognizer (its audio is transcribed first): end
    // those holding one first.
    for (const c of [a1, b1, a2, a3]) await end(c);
  }, 60_000);
});

describe('the default refuses no call while a recognizer idles, on a node that does not defer', () => {
  it('an account takes every recognizer (--max-decoders 2, no deferral); only a full node answers ENGINE_BUSY', async () => {
    const svc = await startService({ maxDecoders: 2, maxDeferredSeconds: 0 });
    try {
      const dave = await svc.account(10_000n);
      const a = await connect(svc, dave.accessKey, await openSession(svc, dave.accessKey));
      const b = await connect(svc, dave.accessKey, await openSession(svc, dave.accessKey));
      expect(a).toBeInstanceOf(StreamClient);
      expect(b).toBeInstanceOf(StreamClient);
      const c = await connect(svc, dave.accessKey, await openSession(svc, dave.accessKey));
      expect(c).toBeInstanceOf(HandshakeRefused);
      expect((c as HandshakeRefused).status).toBe(503);
      expect((c as HandshakeRefused).body.message).toMatch(/^ENGINE_BUSY/);
      (a as StreamClient).close();
      (b as StreamClient).close();
    } finally {
      await svc.stop();
    }
  }, 60_000);
});

describe('per-account stream limit set by the operator: a cap of all recognizers but one', () => {
  let svc: TestService;
  let alice: ProvisionedAccount;
  let bob: ProvisionedAccount;
  beforeAll(async () => {
    svc = await startService({ maxDecoders: 3, maxStreamsPerAccount: 2 });
    alice = await svc.account(10_000n);
    bob = await svc.account(10_000n);
  }, 60_000);
  afterAll(async () => {
    await svc?.stop();
  });

  it('refuses the account past its limit, leaves a recognizer for another account, and gives the place back when a socket ends', async () => {
    const urls = [
      await openSession(svc, alice.accessKey),
      await openSession(svc, alice.accessKey),
      await openSession(svc, alice.accessKey),
    ];
    const a1 = (await connect(svc, alice.accessKey, urls[0]!)) as StreamClient;
    const a2 = (await connect(svc, alice.accessKey, urls[1]!)) as StreamClient;
    expect(a1).toBeInstanceOf(StreamClient);
    expect(a2).toBeInstanceOf(StreamClient);
    expectLimited(await connect(svc, alice.accessKey, urls[2]!));

    // A second socket for a session the account already streams is not a new place: it meets
    // the session's own rule (one socket per epoch), not the account limit.
    const again = await connect(svc, alice.accessKey, urls[0]!);
    expect(again).toBeInstanceOf(HandshakeRefused);
    expect((again as HandshakeRefused).body.message).toMatch(/^SESSION_BUSY/);

    const b1 = await connect(svc, bob.accessKey, await openSession(svc, bob.accessKey));
    expect(b1).toBeInstanceOf(StreamClient);
    (b1 as StreamClient).close();

    a2.close();
    await a2.closed;
    // The place comes back with the connection's end (its session closes in the background).
    let third: StreamClient | HandshakeRefused | null = null;
    for (let i = 0; i < 50; i++) {
      third = await connect(svc, alice.accessKey, urls[2]!);
      if (third instanceof StreamClient) break;
      expectLimited(third);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(third).toBeInstanceOf(StreamClient);
    (third as StreamClient).close();
    a1.close();
  }, 60_000);

  it('handshakes racing for the last place: exactly the limit pass', async () => {
    const carol = await svc.account(10_000n);
    const urls = await Promise.all([1, 2, 3, 4].map(() => openSession(svc, carol.accessKey)));
    const results = await Promise.all(urls.map((u) => connect(svc, carol.accessKey, u)));
    const admitted = results.filter((r): r is StreamClient => r instanceof StreamClient);
    expect(admitted).toHaveLength(2);
    for (const r of results) if (!(r instanceof StreamClient)) expectLimited(r);
    for (const c of admitted) c.close();
    await Promise.all(admitted.map((c) => c.closed));
  }, 60_000);
});

describe('per-account stream limit set by the operator', () => {
  it('0 lifts the bound: one account may take every recognizer', async () => {
    const svc = await startService({ maxDecoders: 2, maxStreamsPerAccount: 0 });
    try {
      const dave = await svc.account(10_000n);
      const a = await connect(svc, dave.accessKey, await openSession(svc, dave.accessKey));
      const b = await connect(svc, dave.accessKey, await openSession(svc, dave.accessKey));
      expect(a).toBeInstanceOf(StreamClient);
      expect(b).toBeInstanceOf(StreamClient);
      (a as StreamClient).close();
      (b as StreamClient).close();
    } finally {
      await svc.stop();
    }
  }, 60_000);

  it('a bound of 1 on a larger node', async () => {
    const svc = await startService({ maxDecoders: 3, maxStreamsPerAccount: 1 });
    try {
      const erin = await svc.account(10_000n);
      const a = await connect(svc, erin.accessKey, await openSession(svc, erin.accessKey));
      expect(a).toBeInstanceOf(StreamClient);
      expectLimited(await connect(svc, erin.accessKey, await openSession(svc, erin.accessKey)));
      (a as StreamClient).close();
    } finally {
      await svc.stop();
    }
  }, 60_000);
});
