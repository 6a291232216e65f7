// AudioHook across nodes (docs/audiohook.md, "Reconnect"): two nodes on one PostgreSQL store
// behind the reference HAProxy config. A Genesys client (test/helpers/audiohook-client.ts)
// talks to whichever node the balancer picked; that node drains: /readyz says so, HAProxy takes
// it out, and the drain asks the client to reconnect. The client opens a new session with
// continuedSessions through the balancer, which lands on the other node, and closes the old
// one: the conversation goes on as the same call, each leg holding every sample of both
// connections and its speaker's words of both. Two nodes need a shared store: PostgreSQL only.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, tempDir, testStore, type TestService } from '../helpers/service.js';
import { startHaproxy, type Haproxy } from '../helpers/haproxy.js';
import { loadClips, type Clip } from '../helpers/audio.js';
import { AudiohookClient, ORG_ID, interleavePcmu } from '../helpers/audiohook-client.js';
import { wordErrorRate } from '../../src/core/wer.js';
import { audiohookDrain } from '../../src/server/audiohook/registry.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';

const clips = loadClips();
const clip = (id: string): Clip => clips.find((c) => c.id === id)!;
const API = '/sound_clone/api/v1';
const SECRET = Buffer.from('genesys client secret, 32 bytes!').toString('base64');
const NODE = { maxDecoders: 2, audiohookClientSecrets: new Map([[ORG_ID, SECRET]]), drainGraceMs: 30_000, drainNoticeMs: 1_000 };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const wer = (ref: string, hyp: string) => Number(wordErrorRate(ref, hyp).wer.toFixed(3));

describe.skipIf(testStore() !== 'postgres')('AudioHook on two nodes behind HAProxy', () => {
  const nodes: TestService[] = [];
  let proxy: Haproxy;
  let alice: ProvisionedAccount;

  beforeAll(async () => {
    nodes.push(await startService(NODE));
    nodes.push(await startService({ ...NODE, dataDir: tempDir(), databaseUrl: nodes[0]!.storeSettings.databaseUrl }));
    alice = await nodes[0]!.account(10_000n);
    proxy = await startHaproxy({ serverPorts: nodes.map((n) => Number(new URL(n.baseUrl).port)) });
    for (const name of ['node1', 'node2']) await proxy.waitForServer('scribed_live', name, 'UP', 10_000);
  }, 90_000);
  afterAll(async () => {
    await proxy?.stop();
    for (const n of nodes.reverse()) await n.stop();
  });

  async function connect(): Promise<AudiohookClient> {
    const c = await AudiohookClient.connect({
      wsBase: proxy.url.replace(/^http/, 'ws'),
      apiKey: alice.accessKey,
      sign: { secret: SECRET },
    });
    if (!(c instanceof AudiohookClient)) throw new Error(`refused: ${c.status} ${c.body}`);
    return c;
  }

  async function stream(c: AudiohookClient, stereo: Buffer): Promise<void> {
    for (let at = 0; at < stereo.length; at += 3200) {
      c.audio(stereo.subarray(at, Math.min(stereo.length, at + 3200)), 2);
      await sleep(20);
    }
  }

  it('the serving node drains: the client continues on the other node through the balancer, as the same call, nothing lost', async () => {
    const first = { external: clip('librivox-0880'), internal: clip('librivox-0890') };
    const second = { external: clip('librivox-0930'), internal: clip('librivox-0870') };
    const conversationId = randomUUID();
    const one = await connect();
    one.open({ conversationId, ani: '+15555550199' });
    await one.next((m) => m.type === 'opened', 30_000, 'opened');
    const servedBy = nodes.findIndex((n) => audiohookDrain(n.service).open() === 1);
    expect(servedBy).toBeGreaterThanOrEqual(0);
    const [from, to] = servedBy === 0 ? [nodes[0]!, nodes[1]!] : [nodes[1]!, nodes[0]!];
    const part1 = interleavePcmu(first.external.mulaw8k, first.internal.mulaw8k);
    await stream(one, part1);

    // The drain: HAProxy sees /readyz 503 and takes the node out; after the notice the client
    // is asked to reconnect.
    const drained = from.service.drain();
    await proxy.waitForServer('scribed_live', `node${servedBy + 1}`, 'DOWN', 10_000);
    await one.next((m) => m.type === 'reconnect', 15_000, 'reconnect');

    const two = await connect();
    two.open({ conversationId, continuedSessions: [{ id: one.sessionId, serverseq: one.serverseq, clientseq: one.seq }] });
    await two.next((m) => m.type === 'opened', 30_000, 'opened on the other node');
    expect(audiohookDrain(to.service).open()).toBe(1);
    one.send('close', { reason: 'reconnect' });
    await one.next((m) => m.type === 'closed', 30_000, 'closed on the draining node');
    // The draining node has nothing left: its drain ends without waiting for the grace.
    expect(await drained).toBe('empty');
    const part2 = interleavePcmu(second.external.mulaw8k, second.internal.mulaw8k);
    await stream(two, part2);
    two.send('close', { reason: 'end' });
    await two.next((m) => m.type === 'closed', 60_000, 'closed');

    const get = async (p: string) => (await fetch(`${to.baseUrl}${p}`, { headers: { accessKey: alice.accessKey } })).json() as Promise<any>;
    const items = (await get(`${API}/stt/calls?externalId=${conversationId}`)).data.items;
    expect(items).toHaveLength(1);
    let call: any;
    for (let i = 0; i < 300 && call?.status !== 'COMPLETED'; i++) {
      call = (await get(`${API}/stt/calls/${items[0].callId}`)).data;
      if (call.status !== 'COMPLETED') await sleep(50);
    }
    expect(call.status).toBe('COMPLETED');
    expect(call.title).toMatch(/ani \+15555550199/);
    expect(call.legs.map((l: any) => l.speaker)).toEqual(['customer', 'agent']);
    const merged: any = await (
      await fetch(`${to.baseUrl}${API}/stt/calls/${call.callId}/transcript?format=json`, { headers: { accessKey: alice.accessKey } })
    ).json();
    for (const leg of merged.legs) expect(leg.durationMs).toBe((part1.length / 2 + part2.length / 2) / 8);
    const bySpeaker = (speaker: string) =>
      merged.segments
        .filter((s: any) => s.speaker === speaker)
        .map((s: any) => s.text)
        .join(' ');
    const figures = `customer ${JSON.stringify(bySpeaker('customer'))}, agent ${JSON.stringify(bySpeaker('agent'))}`;
    expect(wer(`${first.external.reference} ${second.external.reference}`, bySpeaker('customer')), figures).toBeLessThan(0.7);
    expect(wer(`${first.internal.reference} ${second.internal.reference}`, bySpeaker('agent')), figures).toBeLessThan(0.7);
    // The second connection's transcript events reached the client from the other node.
    expect(two.transcripts('external').length + two.transcripts('internal').length).toBeGreaterThan(0);
  }, 150_000);
});
