// The node's group debit (src/session/debit-batcher.ts) on the run's store: the debits many
// sessions ask within a window are one transaction, each answered on its own (its balance, or
// null when the account cannot cover it), later debits go to the next window, and a
// transaction that fails rejects every debit it carried and writes nothing; at shutdown the
// debits still waiting for their window are carried out at once (drain) before the store closes.
import { afterEach, describe, expect, it } from 'vitest';
import { DebitBatcher } from '../../src/session/debit-batcher.js';
import { openStore } from '../../src/store/index.js';
import type { SqlStore } from '../../src/store/sql-store.js';
import type { SessionDebit } from '../../src/store/store.js';
import { storeSettingsFor, tempDir } from '../helpers/service.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function node(sessions: number, characters: bigint) {
  const settings = await storeSettingsFor(tempDir('scribed-debits-'));
  const store = (await openStore(settings)) as SqlStore;
  cleanups.push(() => (store.isOpen() ? store.close() : Promise.resolve()));
  await store.createAccount({
    id: 'acc_1',
    name: 'debit test',
    characters,
    accessKey: { id: 'ak_1', secretHash: Buffer.alloc(32) },
    apiToken: { id: 'at_1', secretHash: Buffer.alloc(32) },
    createdAt: new Date().toISOString(),
  });
  const ids: string[] = [];
  for (let n = 0; n < sessions; n++) {
    const out = await store.createSession({
      accountId: 'acc_1',
      idempotencyKey: `k${n}`,
      requestHash: 'h',
      session: {
        id: `rts_${n}`,
        accountId: 'acc_1',
        transcriptionId: `stt_${n}`,
        title: 't',
        languageHint: null,
        options: {},
        createdAt: new Date().toISOString(),
      },
      sampleRateHz: 8000,
    });
    if (out.kind !== 'created') throw new Error('no session');
    ids.push(out.session.id);
  }
  const calls: SessionDebit[][] = [];
  const counted = { debitMany: (d: readonly SessionDebit[]) => (calls.push([...d]), store.debitMany(d)) };
  return { store, ids, calls, counted, settings };
}

const ledgerCount = async (store: SqlStore) =>
  (await store.db.one<{ n: bigint | number }>("SELECT COUNT(*) AS n FROM characters_ledger WHERE reason = 'realtime_audio'"))!.n;

describe('debit batcher', () => {
  it('carries the debits of many sessions asked within a window in one transaction, each answered in order', async () => {
    const { store, ids, calls, counted } = await node(20, 25n);
    const batcher = new DebitBatcher({ store: counted, windowMs: 30 });
    // 20 sessions ask 1 Character each, then 3 of them ask 2 more: 25 cover the first 20 and
    // two of the three (in the order asked); the third is refused, its session not charged.
    const first = ids.map((id) => batcher.debit('acc_1', 1n, 'realtime_audio', id, id));
    const more = ids.slice(0, 3).map((id) => batcher.debit('acc_1', 2n, 'realtime_audio', id, id));
    const answers = await Promise.all([...first, ...more]);
    expect(batcher.transactions).toBe(1);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.map((d) => d.sessionId)).toEqual([...ids, ...ids.slice(0, 3)]);
    expect(answers).toEqual([...Array.from({ length: 20 }, (_, k) => 24n - BigInt(k)), 3n, 1n, null]);
    expect((await store.getAccount('acc_1'))!.characters).toBe(1n);
    expect((await store.getSession(ids[0]!, 'acc_1'))!.charactersCharged).toBe(3n);
    expect((await store.getSession(ids[2]!, 'acc_1'))!.charactersCharged).toBe(1n);
    expect(Number(await ledgerCount(store))).toBe(22);

    // A debit asked while a transaction runs waits for the next window.
    await store.creditCharacters('acc_1', 10n, 'test', null);
    const a = batcher.debit('acc_1', 1n, 'realtime_audio', ids[5]!, ids[5]!);
    await new Promise((r) => setTimeout(r, 45));
    const b = batcher.debit('acc_1', 1n, 'realtime_audio', ids[6]!, ids[6]!);
    expect(await Promise.all([a, b])).toEqual([10n, 9n]);
    expect(batcher.transactions).toBe(3);
  });

  it('a debit goes at once when the last transaction started over a window ago (few calls wait for nothing); one asked sooner waits for the window', async () => {
    const first = await node(2, 10n);
    const batcher = new DebitBatcher({ store: first.counted, windowMs: 1000 });
    let t = Date.now();
    expect(await batcher.debit('acc_1', 1n, 'realtime_audio', first.ids[0]!, first.ids[0]!)).toBe(9n);
    const firstMs = Date.now() - t;
    expect(firstMs).toBeLessThan(700);
    t = Date.now();
    expect(await batcher.debit('acc_1', 1n, 'realtime_audio', first.ids[1]!, first.ids[1]!)).toBe(8n);
    // it waited for the window that began when the first transaction started
    expect(Date.now() - t).toBeGreaterThanOrEqual(1000 - firstMs - 50);
    expect(batcher.transactions).toBe(2);
  });

  it('a transaction that fails rejects every debit it carried and writes nothing', async () => {
    const { store, ids } = await node(3, 100n);
    let fail = true;
    const failing = {
      debitMany: (d: readonly SessionDebit[]) =>
        fail ? Promise.reject(Object.assign(new Error('connection terminated'), { code: '57P01' })) : store.debitMany(d),
    };
    const batcher = new DebitBatcher({ store: failing, windowMs: 10 });
    const asked = ids.map((id) => batcher.debit('acc_1', 1n, 'realtime_audio', id, id));
    const settled = await Promise.allSettled(asked);
    expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect((await store.getAccount('acc_1'))!.characters).toBe(100n);
    expect(Number(await ledgerCount(store))).toBe(0);
    // The batcher goes on with the next window.
    fail = false;
    expect(await batcher.debit('acc_1', 1n, 'realtime_audio', ids[0]!, ids[0]!)).toBe(99n);

    // A real failure: the store is gone.
    const closed = new DebitBatcher({ store, windowMs: 10 });
    await store.close();
    await expect(closed.debit('acc_1', 1n, 'realtime_audio', ids[1]!, ids[1]!)).rejects.toThrow();
  });

  it('drain carries out the debits waiting for their window at once, answers them, and they are stored before the store closes', async () => {
    const { store, ids, calls, counted, settings } = await node(3, 10n);
    // A long window: the first debit goes at once, the next two wait for it.
    const batcher = new DebitBatcher({ store: counted, windowMs: 60_000 });
    expect(await batcher.debit('acc_1', 1n, 'realtime_audio', ids[0]!, ids[0]!)).toBe(9n);
    const waiting = [
      batcher.debit('acc_1', 1n, 'realtime_audio', ids[1]!, ids[1]!),
      batcher.debit('acc_1', 1n, 'realtime_audio', ids[2]!, ids[2]!),
    ];
    const t = Date.now();
    await batcher.drain();
    expect(Date.now() - t).toBeLessThan(5_000);
    expect(await Promise.all(waiting)).toEqual([8n, 7n]);
    expect(calls).toHaveLength(2);
    // Asked after the drain began, a debit does not wait for a window either.
    expect(await batcher.debit('acc_1', 1n, 'realtime_audio', ids[0]!, ids[0]!)).toBe(6n);
    await batcher.drain();
    await store.close();
    const reopened = (await openStore(settings)) as SqlStore;
    cleanups.push(() => reopened.close());
    expect((await reopened.getAccount('acc_1'))!.characters).toBe(6n);
    expect(Number(await ledgerCount(reopened))).toBe(4);
  });

  it('an unknown session is refused alone', async () => {
    const { store, ids } = await node(1, 5n);
    const batcher = new DebitBatcher({ store, windowMs: 10 });
    const [bad, good] = await Promise.allSettled([
      batcher.debit('acc_1', 1n, 'realtime_audio', 'rts_gone', 'rts_gone'),
      batcher.debit('acc_1', 1n, 'realtime_audio', ids[0]!, ids[0]!),
    ]);
    expect(bad).toMatchObject({ status: 'rejected', reason: { code: 'NOT_FOUND' } });
    expect(good).toEqual({ status: 'fulfilled', value: 4n });
    expect(batcher.transactions).toBe(1);
  });
});
