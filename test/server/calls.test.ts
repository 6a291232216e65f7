// The calls API against the real app (docs/calls.md): create (idempotent), read, list by the
// PBX's id, legs joining through the create-session body, History rows of legs; and end to end,
// a call whose two legs stream two different real speech clips over their sockets at once, read
// back as one transcript merged by time with the right speaker on each line.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.js';
import { loadClips, pcmSamples } from '../helpers/audio.js';
import { concat, streamAndClose } from '../helpers/live.js';
import { expectTurnsHeardOnTheirLegs } from '../helpers/turns.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';

const STT = '/sound_clone/api/v1/stt';
const CALLS = `${STT}/calls`;
const SESSIONS = `${STT}/realtime/sessions`;

let svc: TestService;
let alice: ProvisionedAccount;
let bob: ProvisionedAccount;

beforeAll(async () => {
  // Both legs of a call stream at once from one account: no per-account bound (the
  // default leaves one of the two recognizers to other accounts; docs/calls.md).
  svc = await startService({ maxStreamsPerAccount: 0 });
  alice = await svc.account(100_000n);
  bob = await svc.account(100_000n);
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

async function post(path: string, body: unknown, key = alice.accessKey, idempotencyKey: string | null = `calls-${randomUUID()}`) {
  const res = await fetch(`${svc.baseUrl}${path}`, {
    method: 'POST',
    headers: { accessKey: key, 'content-type': 'application/json', ...(idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {}) },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as any, replayed: res.headers.get('idempotent-replayed') };
}

async function get(path: string, key = alice.accessKey) {
  const res = await fetch(`${svc.baseUrl}${path}`, { headers: { accessKey: key } });
  const text = await res.text();
  return {
    status: res.status,
    text,
    type: res.headers.get('content-type') ?? '',
    json: res.headers.get('content-type')?.startsWith('application/json') ? (JSON.parse(text) as any) : null,
  };
}

async function createCall(body: Record<string, unknown> = {}, key = alice.accessKey) {
  const r = await post(CALLS, body, key);
  expect(r.status, JSON.stringify(r.json)).toBe(201);
  return r.json.data as { callId: string; externalId: string | null; status: string; legs: unknown[] };
}

async function createLeg(callId: string, speaker: string, options: Record<string, unknown> = {}, key = alice.accessKey) {
  const r = await post(SESSIONS, { title: `leg ${speaker}`, options, callId, speaker }, key);
  expect(r.status, JSON.stringify(r.json)).toBe(200);
  return r.json.data as { sessionId: string; transcriptionId: string; streamUrl: string; callId: string; speaker: string };
}

async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${svc.baseUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

describe('creating and reading calls', () => {
  it('creates a call (201), replays it for the same key and body (200), refuses another body (409) and a missing key', async () => {
    const before = await metric('scribed_calls_created_total');
    const key = `calls-${randomUUID()}`;
    const first = await post(CALLS, { title: 'Support line', externalId: 'CA0123456789abcdef' }, alice.accessKey, key);
    expect(first.status).toBe(201);
    expect(first.json.data).toMatchObject({ externalId: 'CA0123456789abcdef', title: 'Support line', status: 'WAITING', legs: [] });
    expect(first.json.data.callId).toMatch(/^call_[0-9a-z]{20}$/);
    const again = await post(CALLS, { externalId: 'CA0123456789abcdef', title: 'Support line' }, alice.accessKey, key);
    expect(again.status).toBe(200);
    expect(again.replayed).toBe('true');
    expect(again.json.data.callId).toBe(first.json.data.callId);
    const other = await post(CALLS, { title: 'Support line', externalId: 'CA-other' }, alice.accessKey, key);
    expect(other.status).toBe(409);
    expect(other.json.message).toMatch(/^IDEMPOTENCY_CONFLICT/);
    const noKey = await post(CALLS, {}, alice.accessKey, null);
    expect(noKey.status).toBe(400);
    expect(noKey.json.message).toMatch(/^IDEMPOTENCY_KEY_REQUIRED/);
    expect(await metric('scribed_calls_created_total')).toBe(before + 1);
  });

  it('validates the body with clear messages', async () => {
    for (const [body, field] of [
      [{ externalId: '' }, 'externalId'],
      [{ externalId: 'x'.repeat(129) }, 'externalId'],
      [{ externalId: 'a\nb' }, 'externalId'],
      [{ externalId: 42 }, 'externalId'],
      [{ title: 'x'.repeat(201) }, 'title'],
      [{ speaker: 'agent' }, 'speaker'],
      [[], 'body'],
    ] as const) {
      const r = await post(CALLS, body);
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(r.json.message).toMatch(new RegExp(`^VALIDATION_FAILED: ${field}: `));
    }
    const long = await post(CALLS, { externalId: 'x'.repeat(128) });
    expect(long.status).toBe(201);
  });

  it('reads a call by id; another account and an unknown id read as does-not-exist', async () => {
    const call = await createCall({ externalId: 'uuid-read' });
    const mine = await get(`${CALLS}/${call.callId}`);
    expect(mine.status).toBe(200);
    expect(mine.json.data).toEqual(call);
    for (const [id, key] of [
      [call.callId, bob.accessKey],
      ['call_00000000000000000000', alice.accessKey],
      ['nonsense', alice.accessKey],
    ] as const) {
      for (const suffix of ['', '/transcript']) {
        const r = await get(`${CALLS}/${id}${suffix}`, key);
        expect(r.status).toBe(404);
        expect(r.json.message).toBe(`NOT_FOUND: call ${id} does not exist`);
      }
    }
    expect((await get(`${CALLS}/${call.callId}`, 'sk_nope.nope')).status).toBe(401);
  });

  it('finds calls by externalId, newest first, in pages; only the account own', async () => {
    const ext = `CA-${randomUUID()}`;
    const a = await createCall({ externalId: ext });
    const b = await createCall({ externalId: ext });
    const c = await createCall({ externalId: ext });
    await createCall({ externalId: `${ext}-other` });
    await createCall({ externalId: ext }, bob.accessKey);
    const all = await get(`${CALLS}?externalId=${encodeURIComponent(ext)}`);
    expect(all.status).toBe(200);
    expect(all.json.data.items.map((i: any) => i.callId)).toEqual([c.callId, b.callId, a.callId]);
    expect(all.json.data.nextCursor).toBeNull();
    const p1 = await get(`${CALLS}?externalId=${encodeURIComponent(ext)}&limit=2`);
    expect(p1.json.data.items.map((i: any) => i.callId)).toEqual([c.callId, b.callId]);
    const p2 = await get(`${CALLS}?externalId=${encodeURIComponent(ext)}&limit=2&cursor=${p1.json.data.nextCursor}`);
    expect(p2.json.data.items.map((i: any) => i.callId)).toEqual([a.callId]);
    expect(p2.json.data.nextCursor).toBeNull();
    // Without externalId: every call of the account, newest first.
    const newest = await get(`${CALLS}?limit=1`);
    expect(newest.json.data.items[0].externalId).toBe(`${ext}-other`);
    for (const q of ['limit=0', 'limit=101', 'limit=x', 'cursor=zzz', `externalId=${'x'.repeat(129)}`]) {
      const r = await get(`${CALLS}?${q}`);
      expect(r.status, q).toBe(422);
      expect(r.json.message).toMatch(/^VALIDATION_FAILED: (limit|cursor|externalId): /);
    }
  });
});

describe('legs joining through the create-session body', () => {
  it('echoes callId and speaker on the session and its History row, and lists the legs on the call', async () => {
    const call = await createCall({ externalId: 'fs-uuid-legs' });
    const agent = await createLeg(call.callId, 'agent');
    const customer = await createLeg(call.callId, 'customer');
    expect(agent).toMatchObject({ callId: call.callId, speaker: 'agent' });
    const read = await get(`${SESSIONS}/${customer.sessionId}`);
    expect(read.json.data).toMatchObject({ callId: call.callId, speaker: 'customer' });
    const plain = await post(SESSIONS, { title: 'no call' });
    expect(plain.json.data).toMatchObject({ callId: null, speaker: null });

    const view = (await get(`${CALLS}/${call.callId}`)).json.data;
    expect(view.status).toBe('ACTIVE');
    expect(view.legs).toEqual([
      {
        speaker: 'agent',
        sessionId: agent.sessionId,
        transcriptionId: agent.transcriptionId,
        kind: 'realtime',
        status: 'RECORDING',
        createdAt: expect.any(String),
      },
      {
        speaker: 'customer',
        sessionId: customer.sessionId,
        transcriptionId: customer.transcriptionId,
        kind: 'realtime',
        status: 'RECORDING',
        createdAt: expect.any(String),
      },
    ]);
    const history = (await get(`${STT}/transcriptions?limit=100`)).json.data.items as any[];
    expect(history.find((t) => t.transcriptionId === agent.transcriptionId)).toMatchObject({ callId: call.callId, speaker: 'agent' });
    expect(history.find((t) => t.transcriptionId === plain.json.data.transcriptionId)).toMatchObject({ callId: null, speaker: null });
    const row = await get(`${STT}/transcriptions/${customer.transcriptionId}`);
    expect(row.json.data).toMatchObject({ callId: call.callId, speaker: 'customer' });
  });

  it('refuses a taken speaker (409), a foreign or unknown call (404), half a link and a bad speaker (422)', async () => {
    const call = await createCall();
    await createLeg(call.callId, 'agent');
    const taken = await post(SESSIONS, { callId: call.callId, speaker: 'agent' });
    expect(taken.status).toBe(409);
    expect(taken.json.message).toMatch(/^CALL_SPEAKER_TAKEN: /);
    const bobs = await createCall({}, bob.accessKey);
    for (const callId of [bobs.callId, 'call_00000000000000000000']) {
      const r = await post(SESSIONS, { callId, speaker: 'customer' });
      expect(r.status).toBe(404);
      expect(r.json.message).toBe(`NOT_FOUND: call ${callId} does not exist`);
    }
    for (const [body, field] of [
      [{ callId: call.callId }, 'speaker'],
      [{ speaker: 'agent' }, 'callId'],
      [{ callId: 'rts_00000000000000000000', speaker: 'agent' }, 'callId'],
      [{ callId: call.callId, speaker: '-agent' }, 'speaker'],
      [{ callId: call.callId, speaker: 'a'.repeat(33) }, 'speaker'],
      [{ callId: call.callId, speaker: 'has space' }, 'speaker'],
    ] as const) {
      const r = await post(SESSIONS, body);
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(r.json.message).toMatch(new RegExp(`^VALIDATION_FAILED: ${field}: `));
    }
    // No refused create left a leg behind.
    expect((await get(`${CALLS}/${call.callId}`)).json.data.legs.map((l: any) => l.speaker)).toEqual(['agent']);
  });

  it('makes callId and speaker part of the session create idempotency', async () => {
    const call = await createCall();
    const key = `leg-${randomUUID()}`;
    const first = await post(SESSIONS, { title: 't', callId: call.callId, speaker: 'inbound' }, alice.accessKey, key);
    expect(first.status).toBe(200);
    const replay = await post(SESSIONS, { title: 't', callId: call.callId, speaker: 'inbound' }, alice.accessKey, key);
    expect(replay.status).toBe(200);
    expect(replay.replayed).toBe('true');
    expect(replay.json.data.sessionId).toBe(first.json.data.sessionId);
    for (const body of [{ title: 't', callId: call.callId, speaker: 'outbound' }, { title: 't' }]) {
      const r = await post(SESSIONS, body, alice.accessKey, key);
      expect(r.status, JSON.stringify(body)).toBe(409);
      expect(r.json.message).toMatch(/^IDEMPOTENCY_CONFLICT: /);
    }
  });
});

describe('a call end to end', () => {
  const RATE = 16000;
  const clip = (id: string) => loadClips().find((c) => c.id === id)!;
  const [a, b, c] = ['librivox-0880', 'librivox-0930', 'librivox-0890'].map(clip) as [
    ReturnType<typeof clip>,
    ReturnType<typeof clip>,
    ReturnType<typeof clip>,
  ];
  const silence = (seconds: number) => new Int16Array(Math.round(seconds * RATE));
  // The agent speaks (0-3 s), the customer answers (4-7.3 s), the agent speaks again (8.5 s on).
  const agentAudio = concat([pcmSamples(a), silence(8.5 - a.durationSec), pcmSamples(c), silence(1)]);
  const customerAudio = concat([silence(4), pcmSamples(b), silence(1)]);

  function lines(txt: string) {
    return txt
      .trim()
      .split('\n')
      .map((l) => {
        const m = /^\[(\d\d):(\d\d):(\d\d)\.(\d{3})\] ([^:]+): (.*)$/.exec(l);
        if (!m) throw new Error(`not a call transcript line: ${l}`);
        const ms = ((Number(m[1]) * 60 + Number(m[2])) * 60 + Number(m[3])) * 1000 + Number(m[4]);
        return { ms, speaker: m[5]!, text: m[6]! };
      });
  }

  it('merges two legs streamed at once into one transcript in time order, each line with its speaker', async () => {
    const call = await createCall({ title: 'Order enquiry', externalId: `CA-${randomUUID()}` });
    const options = { inputEncoding: 'pcm_s16le_16000', segmentCommitMode: 'vad', commitSilenceMs: 500 };
    const agent = await createLeg(call.callId, 'agent', options);
    const customer = await createLeg(call.callId, 'customer', options);
    const [agentRun, customerRun] = await Promise.all([
      streamAndClose(svc, alice.accessKey, agent.streamUrl, agentAudio),
      streamAndClose(svc, alice.accessKey, customer.streamUrl, customerAudio),
    ]);
    expect(agentRun.finals.length).toBeGreaterThanOrEqual(2);
    expect(customerRun.finals.length).toBeGreaterThanOrEqual(1);

    let view: any;
    for (let i = 0; i < 100; i++) {
      view = (await get(`${CALLS}/${call.callId}`)).json.data;
      if (view.status === 'COMPLETED') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(view.status).toBe('COMPLETED');
    expect(view.legs.map((l: any) => [l.speaker, l.status])).toEqual([
      ['agent', 'COMPLETED'],
      ['customer', 'COMPLETED'],
    ]);

    const txt = await get(`${CALLS}/${call.callId}/transcript?format=txt`);
    expect(txt.status).toBe(200);
    expect(txt.type).toBe('text/plain; charset=utf-8');
    const merged = lines(txt.text);
    console.log(`merged call transcript:\n${txt.text}`);
    // Time order, and the turns as spoken: agent, customer, agent.
    for (let i = 1; i < merged.length; i++) expect(merged[i]!.ms).toBeGreaterThanOrEqual(merged[i - 1]!.ms);
    const turns = merged.map((l) => l.speaker).filter((s, i, all) => i === 0 || all[i - 1] !== s);
    expect(turns).toEqual(['agent', 'customer', 'agent']);
    // Each speaker's lines are that leg's own transcript, word for word.
    for (const [speaker, leg] of [
      ['agent', agent],
      ['customer', customer],
    ] as const) {
      const own = (await get(`${STT}/transcriptions/${leg.transcriptionId}/transcript?format=txt`)).text.trim().split('\n');
      expect(merged.filter((l) => l.speaker === speaker).map((l) => l.text)).toEqual(own);
    }
    // The words are the clips' words, each on the leg that spoke them.
    const said = (speaker: string) => merged.filter((l) => l.speaker === speaker).map((l) => l.text);
    expectTurnsHeardOnTheirLegs([
      [a.reference, said('agent')[0]!],
      [b.reference, said('customer').join(' ')],
      [c.reference, said('agent').slice(1).join(' ')],
    ]);
    // The customer's words lie in its speech (after 4 s), the agent's second turn after 8.5 s.
    expect(merged.find((l) => l.speaker === 'customer')!.ms).toBeGreaterThanOrEqual(3500);

    const json = await get(`${CALLS}/${call.callId}/transcript?format=json`);
    expect(json.type).toBe('application/json; charset=utf-8');
    expect(json.json).toMatchObject({ callId: call.callId, externalId: call.externalId, title: 'Order enquiry', status: 'COMPLETED' });
    expect(json.json.legs.map((l: any) => [l.speaker, l.transcriptionId])).toEqual([
      ['agent', agent.transcriptionId],
      ['customer', customer.transcriptionId],
    ]);
    const readable = json.json.segments.filter((s: any) => s.text.trim() !== '');
    expect(readable.map((s: any) => [s.speaker, s.startMs])).toEqual(merged.map((l) => [l.speaker, l.ms]));
    for (const s of json.json.segments)
      expect(s.transcriptionId).toBe(s.speaker === 'agent' ? agent.transcriptionId : customer.transcriptionId);

    const srt = await get(`${CALLS}/${call.callId}/transcript?format=srt`);
    expect(srt.text.split('\n\n')[0]).toMatch(/^1\n\d\d:\d\d:\d\d,\d{3} --> \d\d:\d\d:\d\d,\d{3}\nagent: \S/);
    const vtt = await get(`${CALLS}/${call.callId}/transcript?format=vtt`);
    expect(vtt.text.startsWith('WEBVTT\n\n')).toBe(true);
    expect(vtt.text).toContain(`customer: ${said('customer')[0]}`);
    expect((await get(`${CALLS}/${call.callId}/transcript?format=doc`)).status).toBe(422);
  }, 180_000);
});
