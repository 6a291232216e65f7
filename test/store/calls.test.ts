// The calls part of the Store contract (areas/calls.ts and the call fields of createSession),
// run against both engines like store-contract.test.ts.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_CALL_LEGS } from '../../src/core/calls.js';
import { ScribedError } from '../../src/core/errors.js';
import type { CreateCallInput, CreateSessionInput, Store } from '../../src/store/store.js';
import { ENGINES, T0, addAccount, createHarness, type StoreHarness } from './harness.js';

function callInput(
  accountId: string,
  id: string,
  opts: { key?: string; hash?: string; externalId?: string | null; createdAt?: string } = {},
): CreateCallInput {
  return {
    call: { id, accountId, externalId: opts.externalId ?? null, title: `title ${id}`, createdAt: opts.createdAt ?? T0 },
    idempotency: { key: opts.key ?? `key-${id}`, requestHash: opts.hash ?? 'h1' },
  };
}

function legInput(accountId: string, n: string, call: { callId: string; speaker: string } | null, key = `skey-${n}`): CreateSessionInput {
  return {
    accountId,
    idempotencyKey: key,
    requestHash: 'sh',
    session: { id: `rts_${n}`, accountId, transcriptionId: `stt_${n}`, title: `leg ${n}`, languageHint: null, options: {}, createdAt: T0 },
    sampleRateHz: 8000,
    call,
  };
}

async function rejection(p: Promise<unknown>): Promise<ScribedError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ScribedError);
  return err as ScribedError;
}

describe.each(ENGINES)('calls in the store on %s', (engine) => {
  let h: StoreHarness;
  let store: Store;

  beforeEach(async () => {
    h = await createHarness(engine);
    store = await h.open();
    await addAccount(store, 'acc_a');
    await addAccount(store, 'acc_b');
  });
  afterEach(async () => {
    await h.dispose();
  });

  it('creates a call once per Idempotency-Key: same hash replays it, another hash conflicts', async () => {
    const first = await store.createCall(callInput('acc_a', 'call_1', { externalId: 'CA123' }));
    expect(first.kind).toBe('created');
    if (first.kind !== 'created') return;
    expect(first.call).toEqual({
      id: 'call_1',
      accountId: 'acc_a',
      externalId: 'CA123',
      title: 'title call_1',
      agentId: null,
      legs: [],
      createdAt: T0,
      updatedAt: T0,
    });
    const again = await store.createCall(callInput('acc_a', 'call_2', { key: 'key-call_1', externalId: 'CA123' }));
    expect(again).toEqual({ kind: 'replayed', call: first.call });
    expect(await store.createCall(callInput('acc_a', 'call_3', { key: 'key-call_1', hash: 'other' }))).toEqual({ kind: 'conflict' });
    // Keys are per account.
    expect((await store.createCall(callInput('acc_b', 'call_4', { key: 'key-call_1' }))).kind).toBe('created');
    expect(await store.getCall('call_2', 'acc_a')).toBeNull();
  });

  it('joins sessions as legs with their speakers, visible on the session, the History row and the call', async () => {
    await store.createCall(callInput('acc_a', 'call_1'));
    const agent = await store.createSession(legInput('acc_a', 'a1', { callId: 'call_1', speaker: 'agent' }));
    const customer = await store.createSession(legInput('acc_a', 'a2', { callId: 'call_1', speaker: 'customer' }));
    const alone = await store.createSession(legInput('acc_a', 'a3', null));
    expect(agent.kind === 'created' && agent.session).toMatchObject({ callId: 'call_1', speaker: 'agent' });
    expect(customer.kind === 'created' && customer.session).toMatchObject({ callId: 'call_1', speaker: 'customer' });
    expect(alone.kind === 'created' && alone.session).toMatchObject({ callId: null, speaker: null });
    expect(await store.getSession('rts_a1', 'acc_a')).toMatchObject({ callId: 'call_1', speaker: 'agent' });
    expect(await store.getTranscription('stt_a2', 'acc_a')).toMatchObject({ callId: 'call_1', speaker: 'customer' });
    expect(await store.getTranscription('stt_a3', 'acc_a')).toMatchObject({ callId: null, speaker: null });
    const history = await store.listTranscriptions('acc_a', 10);
    expect(history.map((t) => [t.id, t.callId, t.speaker]).sort()).toEqual([
      ['stt_a1', 'call_1', 'agent'],
      ['stt_a2', 'call_1', 'customer'],
      ['stt_a3', null, null],
    ]);

    await store.setSessionState('rts_a1', 'CLOSED', 'COMPLETED');
    const call = await store.getCall('call_1', 'acc_a');
    expect(call?.legs.map((l) => [l.speaker, l.sessionId, l.transcriptionId, l.kind, l.status, l.sampleRateHz])).toEqual([
      ['agent', 'rts_a1', 'stt_a1', 'realtime', 'COMPLETED', 8000],
      ['customer', 'rts_a2', 'stt_a2', 'realtime', 'RECORDING', 8000],
    ]);
  });

  it('refuses an unknown or foreign call as NOT_FOUND, a taken speaker, and a leg past the limit, writing nothing', async () => {
    await store.createCall(callInput('acc_a', 'call_1'));
    await store.createCall(callInput('acc_b', 'call_b'));
    expect((await rejection(store.createSession(legInput('acc_a', 'x1', { callId: 'call_none', speaker: 'agent' })))).code).toBe(
      'NOT_FOUND',
    );
    expect((await rejection(store.createSession(legInput('acc_a', 'x2', { callId: 'call_b', speaker: 'agent' })))).code).toBe('NOT_FOUND');
    await store.createSession(legInput('acc_a', 'x3', { callId: 'call_1', speaker: 'agent' }));
    expect((await rejection(store.createSession(legInput('acc_a', 'x4', { callId: 'call_1', speaker: 'agent' })))).code).toBe(
      'CALL_SPEAKER_TAKEN',
    );
    // Nothing of the refused creates was stored, and their keys stay free.
    for (const n of ['x1', 'x2', 'x4']) {
      expect(await store.getSession(`rts_${n}`, 'acc_a')).toBeNull();
      expect(await store.getTranscription(`stt_${n}`, 'acc_a')).toBeNull();
    }
    expect((await store.createSession(legInput('acc_a', 'x5', null, 'skey-x4'))).kind).toBe('created');
    // The replay of a leg's create answers with its session, though its speaker is now taken (by itself).
    const replay = await store.createSession(legInput('acc_a', 'x9', { callId: 'call_1', speaker: 'agent' }, 'skey-x3'));
    expect(replay.kind === 'replayed' && replay.session.id).toBe('rts_x3');

    for (let i = 1; i < MAX_CALL_LEGS; i++) await store.createSession(legInput('acc_a', `m${i}`, { callId: 'call_1', speaker: `ch${i}` }));
    expect((await store.getCall('call_1', 'acc_a'))?.legs).toHaveLength(MAX_CALL_LEGS);
    expect((await rejection(store.createSession(legInput('acc_a', 'over', { callId: 'call_1', speaker: 'one-more' })))).code).toBe(
      'CALL_LEG_LIMIT',
    );
  });

  it('two legs racing for one speaker: exactly one joins', async () => {
    await store.createCall(callInput('acc_a', 'call_1'));
    // PostgreSQL: two nodes' connections; SQLite: one process's connection, whose
    // transactions take turns (a second process would wait on the file lock the same way).
    const other = engine === 'postgres' ? await h.open() : store;
    const results = await Promise.allSettled([
      store.createSession(legInput('acc_a', 'r1', { callId: 'call_1', speaker: 'agent' })),
      other.createSession(legInput('acc_a', 'r2', { callId: 'call_1', speaker: 'agent' })),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect((refused.reason as ScribedError).code).toBe('CALL_SPEAKER_TAKEN');
    expect((await store.getCall('call_1', 'acc_a'))?.legs).toHaveLength(1);
  });

  it('lists calls newest first, by external id, in keyset pages, and only the account own', async () => {
    const at = (s: number) => new Date(Date.parse(T0) + s * 1000).toISOString();
    await store.createCall(callInput('acc_a', 'call_1', { externalId: 'CA1', createdAt: at(1) }));
    await store.createCall(callInput('acc_a', 'call_2', { externalId: 'CA2', createdAt: at(2) }));
    await store.createCall(callInput('acc_a', 'call_3', { externalId: 'CA1', createdAt: at(3) }));
    await store.createCall(callInput('acc_a', 'call_4', { createdAt: at(4) }));
    await store.createCall(callInput('acc_b', 'call_5', { externalId: 'CA1', createdAt: at(5) }));
    await store.createSession(legInput('acc_a', 'l1', { callId: 'call_3', speaker: 'inbound' }));

    expect((await store.listCalls('acc_a', 10)).map((c) => c.id)).toEqual(['call_4', 'call_3', 'call_2', 'call_1']);
    const byExternal = await store.listCalls('acc_a', 10, { externalId: 'CA1' });
    expect(byExternal.map((c) => c.id)).toEqual(['call_3', 'call_1']);
    expect(byExternal[0]?.legs.map((l) => l.speaker)).toEqual(['inbound']);
    expect(await store.listCalls('acc_a', 10, { externalId: 'nope' })).toEqual([]);
    const page1 = await store.listCalls('acc_a', 2);
    const last = page1[1]!;
    const page2 = await store.listCalls('acc_a', 2, { after: { createdAt: last.createdAt, id: last.id } });
    expect([...page1, ...page2].map((c) => c.id)).toEqual(['call_4', 'call_3', 'call_2', 'call_1']);
    expect((await store.listCalls('acc_a', 1, { externalId: 'CA1', after: { createdAt: at(3), id: 'call_3' } })).map((c) => c.id)).toEqual([
      'call_1',
    ]);
  });
});
