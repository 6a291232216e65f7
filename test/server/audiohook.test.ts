// Genesys AudioHook against a real server on the store under test (docs/audiohook.md), driven
// by a client written from the public protocol (test/helpers/audiohook-client.ts): signed
// upgrades, a stereo conversation of real speech (a different clip on each channel, so a word
// on the wrong leg shows in the error rates) with ping, pause/resume and a discarded gap, a
// server-initiated reconnect continued on a new connection (continuedSessions), and bad
// input refused with an AudioHook error while the server keeps serving another client and
// charges nothing.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.js';
import { loadClips, type Clip } from '../helpers/audio.js';
import { AudiohookClient, ORG_ID, interleavePcmu, type Refusal } from '../helpers/audiohook-client.js';
import { wordErrorRate } from '../../src/core/wer.js';
import { audiohookDrain } from '../../src/server/audiohook/registry.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';

const clips = loadClips();
const clip = (id: string): Clip => clips.find((c) => c.id === id)!;
const API = '/sound_clone/api/v1';
const SECRET = Buffer.from('genesys client secret, 32 bytes!').toString('base64');
const OTHER_ORG = '1f8a1d55-7a59-4c8e-9d0b-3f6d2c1e0a99';
const FRAME = 1600; // 200 ms per channel, as Genesys sends

let svc: TestService;
let alice: ProvisionedAccount;

beforeAll(async () => {
  svc = await startService({ maxDecoders: 4, audiohookClientSecrets: new Map([[ORG_ID, SECRET]]) });
  alice = await svc.account(10_000n);
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function native(p: string): Promise<any> {
  return (await fetch(`${svc.baseUrl}${p}`, { headers: { accessKey: alice.accessKey } })).json();
}
const balance = async () => BigInt((await native(`${API}/account`)).data.characters);

async function connect(extra: Partial<Parameters<typeof AudiohookClient.connect>[0]> = {}): Promise<AudiohookClient> {
  const c = await AudiohookClient.connect({ wsBase: svc.wsBase, apiKey: alice.accessKey, sign: { secret: SECRET }, ...extra });
  if (!(c instanceof AudiohookClient)) throw new Error(`refused: ${c.status} ${c.body}`);
  return c;
}

async function refusal(extra: Partial<Parameters<typeof AudiohookClient.connect>[0]>): Promise<Refusal> {
  const c = await AudiohookClient.connect({ wsBase: svc.wsBase, apiKey: alice.accessKey, ...extra });
  if (c instanceof AudiohookClient) throw new Error('the upgrade was accepted');
  return c;
}

/** Streams interleaved stereo in 200 ms frames, a little faster than real time. */
async function stream(c: AudiohookClient, stereo: Buffer): Promise<void> {
  for (let at = 0; at < stereo.length; at += 2 * FRAME) {
    c.audio(stereo.subarray(at, Math.min(stereo.length, at + 2 * FRAME)), 2);
    await sleep(20);
  }
}

const text = (entities: any[]) => entities.map((e) => e.alternatives[0].interpretations[0].transcript).join(' ');
const wer = (ref: string, hyp: string) => Number(wordErrorRate(ref, hyp).wer.toFixed(3));

async function openedCall(conversationId: string): Promise<any> {
  const list = await native(`${API}/stt/calls?externalId=${conversationId}`);
  expect(list.data.items).toHaveLength(1);
  return list.data.items[0];
}

async function waitForStatus(callId: string, status: string): Promise<any> {
  let call: any;
  for (let i = 0; i < 200; i++) {
    call = (await native(`${API}/stt/calls/${callId}`)).data;
    if (call.status === status) return call;
    await sleep(50);
  }
  throw new Error(`call ${callId} never ${status}: ${JSON.stringify(call)}`);
}

describe('AudioHook v2 on /audiohook/v2', () => {
  it('a signed stereo conversation: each leg its own words as transcript events, ping, pause/resume and discarded as silence, charged per leg', async () => {
    const before = await balance();
    const customer = clip('librivox-0920');
    const agent = clip('librivox-0870');
    const conversationId = randomUUID();
    const c = await connect();
    c.open({ conversationId, ani: '+15555550123', dnis: '+18005550111' });
    const opened = await c.next((m) => m.type === 'opened', 30_000, 'opened');
    expect(opened).toMatchObject({
      version: '2',
      id: c.sessionId,
      seq: 1,
      clientseq: 1,
      parameters: { media: [{ type: 'audio', format: 'PCMU', channels: ['external', 'internal'], rate: 8000 }] },
    });

    const stereo = interleavePcmu(customer.mulaw8k, agent.mulaw8k);
    await stream(c, stereo);
    c.send('ping', {});
    const pong = await c.next((m) => m.type === 'pong', 10_000, 'pong');
    expect(pong.clientseq).toBe(c.seq);
    c.pause();
    c.resume(8000);
    c.discard(4000);
    await stream(c, Buffer.alloc(2 * 8000, 0xff));
    c.send('close', { reason: 'end' });
    await c.next((m) => m.type === 'closed', 60_000, 'closed');
    expect(await c.whenClosed()).toBe(1000);

    // Server messages numbered 1, 2, ... with no gap.
    expect(c.messages.map((m) => m.seq)).toEqual(c.messages.map((_m, i) => i + 1));
    const ext = c.transcripts('external');
    const int = c.transcripts('internal');
    const figures = `external ${JSON.stringify(text(ext))}, internal ${JSON.stringify(text(int))}`;
    expect(wer(customer.reference, text(ext)), figures).toBeLessThan(0.65);
    expect(wer(agent.reference, text(int)), figures).toBeLessThan(0.65);
    expect(wer(agent.reference, text(ext)), figures).toBeGreaterThan(0.8);
    expect(wer(customer.reference, text(int)), figures).toBeGreaterThan(0.8);
    expect(c.transcripts('external', false).length + c.transcripts('internal', false).length).toBeGreaterThan(0);
    for (const e of [...ext, ...int]) {
      expect(e.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(e.offset).toMatch(/^PT\d+(\.\d+)?S$/);
      expect(e.duration).toMatch(/^PT\d+(\.\d+)?S$/);
      for (const t of e.alternatives[0].interpretations[0].tokens ?? []) {
        expect(t.type).toBe('word');
        expect(t.confidence).toBeGreaterThanOrEqual(0);
        expect(t.confidence).toBeLessThanOrEqual(1);
      }
    }
    const tokens = ext.flatMap((e) => e.alternatives[0].interpretations[0].tokens ?? []);
    expect(tokens.length).toBeGreaterThan(3);
    // Offsets are within the speech sent on that channel.
    for (const e of ext) expect(parseFloat(e.offset.slice(2))).toBeLessThan(customer.mulaw8k.length / 8000 + 0.5);

    // The scribed call behind it: the conversation id as its external id, ani/dnis in its title,
    // the customer (external) and agent (internal) legs, each holding the audio sent plus the
    // paused and discarded time as silence.
    const call = await waitForStatus((await openedCall(conversationId)).callId, 'COMPLETED');
    expect(call.title).toBe('Genesys ani +15555550123 (Pat Caller) dnis +18005550111');
    expect(call.legs.map((l: any) => l.speaker)).toEqual(['customer', 'agent']);
    const merged: any = await (
      await fetch(`${svc.baseUrl}${API}/stt/calls/${call.callId}/transcript?format=json`, { headers: { accessKey: alice.accessKey } })
    ).json();
    const samples = stereo.length / 2 + 8000 + 4000 + 8000;
    for (const leg of merged.legs) expect(leg.durationMs).toBe(samples / 8);
    // Each leg is charged for its own audio, gaps included.
    expect(before - (await balance())).toBe(2n * BigInt(Math.ceil(samples / 8000)));
  }, 120_000);

  it('the drain asks for a reconnect: a new connection with continuedSessions continues both legs, nothing lost or duplicated', async () => {
    const first = { external: clip('librivox-0880'), internal: clip('librivox-0890') };
    const second = { external: clip('librivox-0930'), internal: clip('librivox-0870') };
    const conversationId = randomUUID();
    const one = await connect();
    one.open({ conversationId });
    await one.next((m) => m.type === 'opened', 30_000, 'opened');
    const part1 = interleavePcmu(first.external.mulaw8k, first.internal.mulaw8k);
    await stream(one, part1);
    expect(audiohookDrain(svc.service).reconnectAll('draining for a test')).toBeGreaterThanOrEqual(1);
    const reconnect = await one.next((m) => m.type === 'reconnect', 10_000, 'reconnect');
    expect(reconnect.parameters.info).toBe('draining for a test');

    const two = await connect();
    two.open({ conversationId, continuedSessions: [{ id: one.sessionId, serverseq: one.serverseq, clientseq: one.seq }] });
    await two.next((m) => m.type === 'opened', 30_000, 'opened on the new connection');
    one.send('close', { reason: 'reconnect' });
    await one.next((m) => m.type === 'closed', 30_000, 'closed on the old connection');
    const part2 = interleavePcmu(second.external.mulaw8k, second.internal.mulaw8k);
    await stream(two, part2);
    two.send('close', { reason: 'end' });
    await two.next((m) => m.type === 'closed', 60_000, 'closed');

    const call = await waitForStatus((await openedCall(conversationId)).callId, 'COMPLETED');
    expect(call.legs.map((l: any) => l.speaker)).toEqual(['customer', 'agent']);
    const merged: any = await (
      await fetch(`${svc.baseUrl}${API}/stt/calls/${call.callId}/transcript?format=json`, { headers: { accessKey: alice.accessKey } })
    ).json();
    for (const leg of merged.legs) expect(leg.durationMs).toBe((part1.length / 2 + part2.length / 2) / 8);
    const bySpeaker = (speaker: string) =>
      merged.segments
        .filter((s: any) => s.speaker === speaker)
        .map((s: any) => s.text)
        .join(' ');
    const extRef = `${first.external.reference} ${second.external.reference}`;
    const intRef = `${first.internal.reference} ${second.internal.reference}`;
    const figures = `customer ${JSON.stringify(bySpeaker('customer'))}, agent ${JSON.stringify(bySpeaker('agent'))}`;
    expect(wer(extRef, bySpeaker('customer')), figures).toBeLessThan(0.7);
    expect(wer(intRef, bySpeaker('agent')), figures).toBeLessThan(0.7);
    // The events of each connection are on its own position: the second's start near 0.
    const later = two.transcripts('external');
    expect(later.length).toBeGreaterThan(0);
    for (const e of later) expect(parseFloat(e.offset.slice(2))).toBeLessThan(part2.length / 2 / 8000 + 0.5);
  }, 120_000);
});

describe('AudioHook bad input: refused clearly, nothing charged, others served', () => {
  it('upgrades refused before the socket: wrong, expired, replayed or missing signature, unknown key, bad headers', async () => {
    const before = await balance();
    const bystander = await connect();
    bystander.open({ conversationId: randomUUID() });
    await bystander.next((m) => m.type === 'opened', 30_000, 'opened');

    const wrong = await refusal({ sign: { secret: SECRET, corrupt: true } });
    expect(wrong.status).toBe(401);
    expect(JSON.parse(wrong.body)).toMatchObject({ reason: 'signature', message: expect.stringMatching(/does not match/) });
    const expired = await refusal({ sign: { secret: SECRET, created: Math.floor(Date.now() / 1000) - 120 } });
    expect(expired.status).toBe(401);
    expect(JSON.parse(expired.body)).toMatchObject({ reason: 'signature_expired' });
    const unsigned = await refusal({});
    expect(unsigned.status).toBe(401);
    expect(JSON.parse(unsigned.body).message).toMatch(/not signed/);
    const nonce = randomUUID();
    const sessionId = randomUUID();
    const correlationId = randomUUID();
    const created = Math.floor(Date.now() / 1000);
    const once = await connect({ sessionId, correlationId, sign: { secret: SECRET, nonce, created } });
    once.ws.close();
    const replay = await refusal({ sessionId, correlationId, sign: { secret: SECRET, nonce, created } });
    expect(replay.status).toBe(401);
    expect(JSON.parse(replay.body)).toMatchObject({ reason: 'nonce_replayed' });
    expect((await refusal({ apiKey: 'sk_not_a_key_0123456789', organizationId: OTHER_ORG })).status).toBe(401);
    expect((await refusal({ organizationId: 'not-a-uuid' })).status).toBe(400);
    // An organization without a configured secret connects unsigned.
    const plain = await connect({ organizationId: OTHER_ORG, sign: undefined });
    plain.ws.close();

    bystander.send('ping', {});
    await bystander.next((m) => m.type === 'pong', 10_000, "the bystander's pong");
    bystander.send('close', { reason: 'end' });
    await bystander.next((m) => m.type === 'closed', 30_000, 'closed');
    expect(await balance()).toBe(before);
    const metrics = await (await fetch(`${svc.baseUrl}/metrics`)).text();
    for (const reason of ['signature', 'signature_expired', 'nonce_replayed', 'auth', 'headers']) {
      expect(metrics).toMatch(new RegExp(`scribed_audiohook_connections_refused_total\\{reason="${reason}"\\} [1-9]`));
    }
  }, 60_000);

  it('an unknown media format, a bad seq, an oversized message or frame: disconnect with an error, then closed', async () => {
    const before = await balance();
    const expectDisconnect = async (c: AudiohookClient, info: RegExp) => {
      const d = await c.next((m) => m.type === 'disconnect', 15_000, 'disconnect');
      expect(d.parameters.reason).toBe('error');
      expect(d.parameters.info).toMatch(info);
      await c.next((m) => m.type === 'closed', 15_000, 'closed');
      expect(await c.whenClosed()).toBe(1000);
    };

    const opus = await connect();
    const conversationId = randomUUID();
    opus.open({ conversationId, media: [{ type: 'audio', format: 'opus', channels: ['external', 'internal'], rate: 48000 }] });
    await expectDisconnect(opus, /No supported media format offered \(opus\/48000\)/);
    expect((await native(`${API}/stt/calls?externalId=${conversationId}`)).data.items).toHaveLength(0);

    const seq = await connect();
    seq.open({ conversationId: randomUUID() });
    await seq.next((m) => m.type === 'opened', 30_000, 'opened');
    seq.seq += 1; // one message skipped
    seq.send('ping', {});
    await expectDisconnect(seq, /Invalid seq value 3: expected 2/);

    const big = await connect();
    big.open({ conversationId: randomUUID() });
    await big.next((m) => m.type === 'opened', 30_000, 'opened');
    big.send('update', { language: 'en-US', padding: 'x'.repeat(70_000) });
    await expectDisconnect(big, /Text message too large/);

    const frame = await connect();
    frame.open({ conversationId: randomUUID() });
    await frame.next((m) => m.type === 'opened', 30_000, 'opened');
    frame.audio(Buffer.alloc(40_000, 0xff), 2);
    await expectDisconnect(frame, /over the 16000-byte bound/);

    const early = await connect();
    early.audio(Buffer.alloc(320, 0xff), 2);
    await expectDisconnect(early, /Received audio in state PREPARING/);

    expect(await balance()).toBe(before);
    const metrics = await (await fetch(`${svc.baseUrl}/metrics`)).text();
    for (const reason of ['media', 'seq', 'too_large', 'audio'])
      expect(metrics).toMatch(new RegExp(`scribed_audiohook_messages_invalid_total\\{reason="${reason}"\\} [1-9]`));
  }, 60_000);
});
