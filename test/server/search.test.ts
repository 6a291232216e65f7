// GET .../stt/search against the real app on the store under test (docs/search.md): three
// calls of two legs each whose finals are known, found by phrase with the right call, speaker
// and times; OR and -exclusion; filters; keyset pages that give each hit once; another
// account's hits never shown; bad input refused in the native envelope.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';

const STT = '/sound_clone/api/v1/stt';
const SEARCH = `${STT}/search`;

let svc: TestService;
let alice: ProvisionedAccount;
let bob: ProvisionedAccount;
/** speaker@call number -> its transcription id */
const legs = new Map<string, string>();
const calls: string[] = [];

async function post(path: string, body: unknown, key: string) {
  const res = await fetch(`${svc.baseUrl}${path}`, {
    method: 'POST',
    headers: { accessKey: key, 'content-type': 'application/json', 'Idempotency-Key': `search-${randomUUID()}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as any };
}

async function search(params: Record<string, string>, key = alice.accessKey) {
  const res = await fetch(`${svc.baseUrl}${SEARCH}?${new URLSearchParams(params)}`, { headers: { accessKey: key } });
  return { status: res.status, json: (await res.json()) as any };
}

const keys = (items: any[]): string[] => items.map((h) => `${h.speaker}@${calls.indexOf(h.callId) + 1}:${h.segmentId}`);

/** [call number (4: bob's), speaker, index, text, second the final was stored] */
const FINALS: [number, string, number, string, number][] = [
  [1, 'agent', 0, 'thank you for calling how can I help', 1],
  [1, 'customer', 0, 'I want to cancel my subscription please', 2],
  [1, 'agent', 1, 'I am sorry to hear that', 3],
  [2, 'agent', 0, 'good morning how can I help', 10],
  [2, 'customer', 0, 'my invoice is wrong this month', 11],
  [2, 'customer', 1, 'please cancel the invoice', 12],
  [3, 'agent', 0, 'hello you are through to billing', 20],
  [3, 'customer', 0, 'can I upgrade my subscription', 21],
  [3, 'customer', 1, 'and cancel my subscription to the other plan', 22],
  [4, 'customer', 0, 'I want to cancel my subscription today', 5],
];
const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const at = (s: number): string => new Date(T0 + s * 1000).toISOString();

beforeAll(async () => {
  svc = await startService({ maxStreamsPerAccount: 0 });
  alice = await svc.account(100_000n);
  bob = await svc.account(100_000n);
  for (const n of [1, 2, 3, 4]) {
    const key = n === 4 ? bob.accessKey : alice.accessKey;
    const call = await post(`${STT}/calls`, { title: `call ${n}`, externalId: `CA-search-${n}` }, key);
    expect(call.status, JSON.stringify(call.json)).toBe(201);
    calls.push(call.json.data.callId);
    for (const speaker of ['agent', 'customer']) {
      const leg = await post(`${STT}/realtime/sessions`, { title: `leg ${speaker} ${n}`, callId: call.json.data.callId, speaker }, key);
      expect(leg.status, JSON.stringify(leg.json)).toBe(200);
      legs.set(`${speaker}@${n}`, leg.json.data.transcriptionId);
    }
  }
  // The finals as the session writes them (the store's appendSegment), with known words: the
  // recognizer's own words are not what this test is about.
  for (const [n, speaker, index, text, s] of FINALS) {
    await svc.service.store.appendSegment({
      transcriptionId: legs.get(`${speaker}@${n}`)!,
      index,
      startSample: BigInt(16_000 * (2 * index + 1)),
      endSample: BigInt(16_000 * (2 * index + 2)),
      text,
      words: [],
      createdAt: at(s),
    });
  }
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

describe('searching what was said', () => {
  it('finds a phrase with the right call, speaker, transcription, times and highlighted words, newest first', async () => {
    const r = await search({ q: '"cancel my subscription"' });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(r.json.code).toBe(1);
    expect(keys(r.json.data.items)).toEqual(['customer@3:seg_1', 'customer@1:seg_0']);
    const hit = r.json.data.items[1];
    const rate = (await svc.service.store.getTranscription(legs.get('customer@1')!, alice.accountId))!.sampleRateHz;
    expect(hit).toEqual({
      transcriptionId: legs.get('customer@1'),
      segmentId: 'seg_0',
      callId: calls[0],
      speaker: 'customer',
      startMs: Math.round((16_000 / rate) * 1000),
      endMs: Math.round((32_000 / rate) * 1000),
      text: 'I want to cancel my subscription please',
      highlights: [
        { text: 'I want to ', match: false },
        { text: 'cancel my subscription', match: true },
        { text: ' please', match: false },
      ],
      createdAt: at(2),
    });
    expect(r.json.data.nextCursor).toBeNull();
  });

  it('ORs alternatives and excludes with -', async () => {
    expect(keys((await search({ q: 'invoice OR upgrade' })).json.data.items)).toEqual([
      'customer@3:seg_0',
      'customer@2:seg_1',
      'customer@2:seg_0',
    ]);
    expect(keys((await search({ q: 'cancel -subscription' })).json.data.items)).toEqual(['customer@2:seg_1']);
    expect(keys((await search({ q: 'help OR hello -morning' })).json.data.items)).toEqual(['agent@3:seg_0', 'agent@1:seg_0']);
  });

  it('filters by time, call, external id, speaker and title', async () => {
    expect(keys((await search({ q: 'cancel', from: at(2), to: at(12) })).json.data.items)).toEqual(['customer@1:seg_0']);
    expect(keys((await search({ q: 'cancel', callId: calls[1]! })).json.data.items)).toEqual(['customer@2:seg_1']);
    expect(keys((await search({ q: 'cancel', externalId: 'CA-search-3' })).json.data.items)).toEqual(['customer@3:seg_1']);
    expect(keys((await search({ q: 'can', speaker: 'agent' })).json.data.items)).toEqual(['agent@2:seg_0', 'agent@1:seg_0']);
    expect(keys((await search({ q: 'help', title: 'call 2' })).json.data.items)).toEqual(['agent@2:seg_0']);
  });

  it('pages by keyset: each hit once, in order, then no cursor', async () => {
    const q = 'my OR you OR I OR the OR can';
    const all = keys((await search({ q, limit: '100' })).json.data.items);
    expect(all.length).toBe(9);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const r: { status: number; json: any } = await search({ q, limit: '3', ...(cursor ? { cursor } : {}) });
      expect(r.status).toBe(200);
      expect(r.json.data.items.length).toBeLessThanOrEqual(3);
      seen.push(...keys(r.json.data.items));
      cursor = r.json.data.nextCursor;
    } while (cursor);
    expect(seen).toEqual(all);
  });

  it("never shows another account's hits", async () => {
    expect(keys((await search({ q: 'today' })).json.data.items)).toEqual([]);
    const b = await search({ q: '"cancel my subscription"' }, bob.accessKey);
    expect(keys(b.json.data.items)).toEqual(['customer@4:seg_0']);
    // Not even by naming the other account's call.
    expect(keys((await search({ q: 'cancel', callId: calls[3]! })).json.data.items)).toEqual([]);
  });

  it('refuses bad input in the native envelope: empty, too long, exclusions only, bad cursor or limit', async () => {
    for (const params of [
      {},
      { q: '' },
      { q: '   ' },
      { q: 'x'.repeat(257) },
      { q: '-cancel' },
      { q: 'cancel', cursor: 'nonsense' },
      { q: 'cancel', limit: '0' },
      { q: 'cancel', limit: '101' },
      { q: 'cancel', from: 'yesterday' },
    ]) {
      const r = await search(params as Record<string, string>);
      expect(r.status, JSON.stringify(params)).toBe(422);
      expect(r.json.code).toBe(-1);
      expect(r.json.message).toMatch(/^VALIDATION_FAILED/);
    }
    const noKey = await fetch(`${svc.baseUrl}${SEARCH}?q=cancel`);
    expect(noKey.status).toBe(401);
  });

  it('treats query syntax characters as text, never as engine syntax', async () => {
    for (const q of [
      'cancel*',
      'cancel AND NOT',
      'NEAR(cancel my)',
      'cancel:subscription',
      '"unclosed cancel',
      "'; DROP TABLE segments; --",
      'cancel ^ & | ! ( )',
    ]) {
      const r = await search({ q });
      expect(r.status, `${q}: ${JSON.stringify(r.json)}`).toBe(200);
    }
    expect(keys((await search({ q: 'cancel*' })).json.data.items)).toEqual(keys((await search({ q: 'cancel' })).json.data.items));
  });
});
