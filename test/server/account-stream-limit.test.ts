// The per-account stream limit against a real server: an account cannot take every
// recognizer of a node; it is told ACCOUNT_STREAM_LIMIT (429) before the upgrade, other
// accounts still get one, a place comes back when a socket ends, and racing handshakes cannot
// overshoot the limit.
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

describe('per-account stream limit (default: all recognizers but one)', () => {
  let svc: TestService;
  let alice: ProvisionedAccount;
  let bob: ProvisionedAccount;
  beforeAll(async () => {
    svc = await startService({ maxDecoders: 3 });
    alice = await svc.account(10_000n);
    bob = await svc.account(10_000n);
  }, 60_000);
  afterAll(async () => {
    await svc?.stop();
  });

  it('refuses the account past its limit, leaves a recognizer for another account, and gives the place back when a socket ends', async () => {
    const urls = [await openSession(svc, alice.accessKey), await openSession(svc, alice.accessKey), await openSession(svc, alice.accessKey)];
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
