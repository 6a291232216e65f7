// AudioHook L16 media (docs/audiohook.md): Genesys offers 16-bit linear PCM at 8 kHz beside
// PCMU; the server takes it (before PCMU for the same channels), its legs then take 16-bit PCM
// as sent. A conversation opened in L16 and continued after a reconnect in PCMU keeps its legs
// (the PCMU converted to the legs' encoding): each leg's words are its channel's speech across
// both connections, its time exactly the audio sent on both.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.js';
import { loadClips, type Clip } from '../helpers/audio.js';
import { AudiohookClient, ORG_ID, interleaveL16, interleavePcmu } from '../helpers/audiohook-client.js';
import { decodeMulaw } from '../../src/core/audio/encodings.js';
import { wordErrorRate } from '../../src/core/wer.js';
import { audiohookDrain } from '../../src/server/audiohook/registry.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';

const clips = loadClips();
const clip = (id: string): Clip => clips.find((c) => c.id === id)!;
const API = '/sound_clone/api/v1';
const SECRET = Buffer.from('genesys client secret, 32 bytes!').toString('base64');
const L16 = { type: 'audio', format: 'L16', channels: ['external', 'internal'], rate: 8000 };
const PCMU = { ...L16, format: 'PCMU' };

let svc: TestService;
let alice: ProvisionedAccount;

beforeAll(async () => {
  svc = await startService({ maxDecoders: 2, audiohookClientSecrets: new Map([[ORG_ID, SECRET]]) });
  alice = await svc.account(10_000n);
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function native(p: string): Promise<any> {
  return (await fetch(`${svc.baseUrl}${p}`, { headers: { accessKey: alice.accessKey } })).json();
}
const wer = (ref: string, hyp: string) => Number(wordErrorRate(ref, hyp).wer.toFixed(3));

async function connect(): Promise<AudiohookClient> {
  const c = await AudiohookClient.connect({ wsBase: svc.wsBase, apiKey: alice.accessKey, sign: { secret: SECRET } });
  if (!(c instanceof AudiohookClient)) throw new Error(`refused: ${c.status} ${c.body}`);
  return c;
}

/** Interleaved stereo in 200 ms frames (`width` bytes a sample), a little faster than real time. */
async function stream(c: AudiohookClient, stereo: Buffer, width: number): Promise<void> {
  const frame = 2 * 1600 * width;
  for (let at = 0; at < stereo.length; at += frame) {
    c.audio(stereo.subarray(at, Math.min(stereo.length, at + frame)), 2, width);
    await sleep(20);
  }
}

describe('AudioHook L16', () => {
  it('negotiates L16 over PCMU, transcribes each channel, and continues the conversation in PCMU after a reconnect', async () => {
    const first = { external: clip('librivox-0920'), internal: clip('librivox-0870') };
    const second = { external: clip('librivox-0880'), internal: clip('librivox-0890') };
    const conversationId = randomUUID();
    const one = await connect();
    one.open({ conversationId, media: [PCMU, L16, { ...L16, channels: ['external'] }] });
    const opened = await one.next((m) => m.type === 'opened', 30_000, 'opened');
    expect(opened.parameters.media).toEqual([L16]);
    const part1 = interleaveL16(decodeMulaw(first.external.mulaw8k), decodeMulaw(first.internal.mulaw8k));
    await stream(one, part1, 2);
    expect(audiohookDrain(svc.service).reconnectAll('moving for a test')).toBe(1);
    await one.next((m) => m.type === 'reconnect', 10_000, 'reconnect');

    const two = await connect();
    two.open({ conversationId, media: [PCMU], continuedSessions: [{ id: one.sessionId, serverseq: one.serverseq, clientseq: one.seq }] });
    expect((await two.next((m) => m.type === 'opened', 30_000, 'opened again')).parameters.media).toEqual([PCMU]);
    one.send('close', { reason: 'reconnect' });
    await one.next((m) => m.type === 'closed', 30_000, 'closed on the old connection');
    const part2 = interleavePcmu(second.external.mulaw8k, second.internal.mulaw8k);
    await stream(two, part2, 1);
    two.send('close', { reason: 'end' });
    await two.next((m) => m.type === 'closed', 60_000, 'closed');

    const items = (await native(`${API}/stt/calls?externalId=${conversationId}`)).data.items;
    expect(items).toHaveLength(1);
    let call: any;
    for (let i = 0; i < 200 && call?.status !== 'COMPLETED'; i++) {
      call = (await native(`${API}/stt/calls/${items[0].callId}`)).data;
      if (call.status !== 'COMPLETED') await sleep(50);
    }
    expect(call.legs.map((l: any) => l.speaker)).toEqual(['customer', 'agent']);
    const merged: any = await (
      await fetch(`${svc.baseUrl}${API}/stt/calls/${call.callId}/transcript?format=json`, { headers: { accessKey: alice.accessKey } })
    ).json();
    // Nothing lost or doubled: each leg holds the samples of both connections.
    for (const leg of merged.legs) expect(leg.durationMs).toBe((part1.length / 4 + part2.length / 2) / 8);
    const part1Ms = (part1.length / 4 / 8000) * 1000;
    const bySpeaker = (speaker: string, from = 0, to = Infinity) =>
      merged.segments
        .filter((s: any) => s.speaker === speaker && s.startMs >= from && s.startMs < to)
        .map((s: any) => s.text)
        .join(' ');
    // The L16 part alone (the customer's clip is the shorter, so its segments end before the
    // reconnect): its words, decoded as sent, not noise.
    const l16 = `customer ${JSON.stringify(bySpeaker('customer', 0, part1Ms))}`;
    expect(wer(first.external.reference, bySpeaker('customer', 0, part1Ms)), l16).toBeLessThan(0.65);
    expect(wer(first.internal.reference, bySpeaker('customer', 0, part1Ms)), l16).toBeGreaterThan(0.8);
    const figures = `customer ${JSON.stringify(bySpeaker('customer'))}, agent ${JSON.stringify(bySpeaker('agent'))}`;
    expect(wer(`${first.external.reference} ${second.external.reference}`, bySpeaker('customer')), figures).toBeLessThan(0.7);
    expect(wer(`${first.internal.reference} ${second.internal.reference}`, bySpeaker('agent')), figures).toBeLessThan(0.7);
    // The legs take the samples as L16 sent them (16-bit PCM), not re-quantized to G.711.
    for (const leg of call.legs)
      expect((await svc.service.store.getSession(leg.sessionId, alice.accountId))?.options.inputEncoding).toBe('pcm_s16le_8000');
  }, 120_000);
});
