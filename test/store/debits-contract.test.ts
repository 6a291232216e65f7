// A node's group debit (areas/debits.ts, store.debitMany), on both engines: many sessions'
// debits in one transaction have the effect of debitCharacters called for each in order (same
// answers, balances, ledger rows and charactersCharged), a short balance refuses only the
// debits it cannot cover, an unknown session refuses only its own, and (PostgreSQL) two nodes
// debiting the same accounts at once do not deadlock.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SqlStore } from '../../src/store/sql-store.js';
import type { DebitOutcome, SessionDebit } from '../../src/store/store.js';
import { ENGINES, T0, addAccount, createHarness, type StoreHarness } from './harness.js';

async function newSession(store: SqlStore, accountId: string, n: string): Promise<string> {
  const out = await store.createSession({
    accountId,
    idempotencyKey: `k${n}`,
    requestHash: 'h',
    session: { id: `rts_${n}`, accountId, transcriptionId: `stt_${n}`, title: 't', languageHint: null, options: {}, createdAt: T0 },
    sampleRateHz: 8000,
  });
  if (out.kind !== 'created') throw new Error('no session');
  return out.session.id;
}

const debit = (accountId: string, sessionId: string, amount: bigint): SessionDebit => ({
  accountId,
  sessionId,
  amount,
  reason: 'realtime_audio',
  ref: sessionId,
});

type LedgerRow = {
  account_id: string;
  delta: bigint;
  balance_after: bigint;
  reason: string;
  ref: string | null;
  session_id: string | null;
};
const ledger = (s: SqlStore, accountId: string): Promise<LedgerRow[]> =>
  s.db.all(
    "SELECT account_id, delta, balance_after, reason, ref, session_id FROM characters_ledger WHERE account_id = ? AND reason = 'realtime_audio' ORDER BY id",
    [accountId],
  );

const answer = (o: DebitOutcome): bigint | null | string =>
  o.kind === 'debited' ? o.balance : o.kind === 'short' ? null : o.error.message;

describe.each(ENGINES)('group debit on %s', (engine) => {
  let harness: StoreHarness;
  let store: SqlStore;

  beforeEach(async () => {
    harness = await createHarness(engine);
    store = await harness.open();
  });
  afterEach(async () => {
    await harness.dispose();
  });

  it('has the effect of debitCharacters for each debit in order: answers, balances, ledger rows, charactersCharged', async () => {
    // The same debits on two identical accounts: one batch on acc_b, one call each on acc_s.
    const plan: Array<[string, bigint]> = [
      ['1', 3n],
      ['2', 4n],
      ['1', 2n],
      ['3', 6n],
      ['2', 1n],
      ['3', 0n],
      ['1', 1n],
    ];
    for (const acc of ['acc_b', 'acc_s']) {
      await addAccount(store, acc, 12n);
      for (const n of ['1', '2', '3']) await newSession(store, acc, `${acc}_${n}`);
    }
    const batched = await store.debitMany(plan.map(([n, amount]) => debit('acc_b', `rts_acc_b_${n}`, amount)));
    const single: Array<bigint | null> = [];
    for (const [n, amount] of plan)
      single.push(await store.debitCharacters('acc_s', amount, 'realtime_audio', `rts_acc_s_${n}`, `rts_acc_s_${n}`));

    // 12 -3=9 -4=5 -2=3, 6 is short, -1=2, 0 leaves 2, -1=1
    expect(batched.map(answer)).toEqual([9n, 5n, 3n, null, 2n, 2n, 1n]);
    expect(batched.map(answer)).toEqual(single);
    expect((await store.getAccount('acc_b'))!.characters).toBe(1n);
    const rename = (rows: LedgerRow[]) =>
      rows.map((r) => ({
        ...r,
        account_id: 'acc',
        ref: r.ref?.replace(/acc_[bs]_/, ''),
        session_id: r.session_id?.replace(/acc_[bs]_/, ''),
      }));
    const rows = await ledger(store, 'acc_b');
    expect(rows.map((r) => [r.session_id, r.delta, r.balance_after])).toEqual([
      ['rts_acc_b_1', -3n, 9n],
      ['rts_acc_b_2', -4n, 5n],
      ['rts_acc_b_1', -2n, 3n],
      ['rts_acc_b_2', -1n, 2n],
      ['rts_acc_b_1', -1n, 1n],
    ]);
    expect(rename(rows)).toEqual(rename(await ledger(store, 'acc_s')));
    for (const n of ['1', '2', '3']) {
      const b = (await store.getSession(`rts_acc_b_${n}`, 'acc_b'))!.charactersCharged;
      expect(b).toBe((await store.getSession(`rts_acc_s_${n}`, 'acc_s'))!.charactersCharged);
      expect(b).toBe({ '1': 6n, '2': 5n, '3': 0n }[n]);
    }
  });

  it('charges a debit id once, and a session only up to the charge a debit names', async () => {
    await addAccount(store, 'acc_i', 10n);
    const s = await newSession(store, 'acc_i', 'i');
    const withId = (amount: bigint, id: string): SessionDebit => ({ ...debit('acc_i', s, amount), id });
    const first = await store.debitMany([withId(3n, `${s}:3`), withId(3n, `${s}:3`)]);
    expect(first.map(answer)).toEqual([7n, 7n]);
    const again = await store.debitMany([withId(3n, `${s}:3`), withId(2n, `${s}:5`)]);
    expect(again.map(answer)).toEqual([7n, 5n]);
    expect((await store.getAccount('acc_i'))!.characters).toBe(5n);
    expect((await store.getSession(s, 'acc_i'))!.charactersCharged).toBe(5n);
    expect((await ledger(store, 'acc_i')).map((r) => r.delta)).toEqual([-3n, -2n]);
    // Asked by a node that reckons the session at 3 (its debit to 5 landed unseen): to 9
    // charges only the 4 the session lacks; to 5, nothing.
    const stale = await store.debitMany([
      { ...debit('acc_i', s, 6n), id: `${s}:9`, chargedTo: 9n },
      { ...debit('acc_i', s, 2n), id: `${s}:5b`, chargedTo: 5n },
    ]);
    expect(stale.map(answer)).toEqual([1n, 1n]);
    expect((await store.getSession(s, 'acc_i'))!.charactersCharged).toBe(9n);
    expect((await ledger(store, 'acc_i')).map((r) => r.delta)).toEqual([-3n, -2n, -4n]);
  });

  it('carries many accounts at once; an unknown session, an unknown account or a bad amount refuses only its own debit', async () => {
    await addAccount(store, 'acc_2', 5n);
    await addAccount(store, 'acc_1', 2n);
    const s1 = await newSession(store, 'acc_1', '1');
    const s2 = await newSession(store, 'acc_2', '2');
    const out = await store.debitMany([
      debit('acc_2', s2, 4n),
      debit('acc_1', s1, 3n), // short: acc_1 holds 2
      debit('acc_1', 'rts_none', 1n),
      debit('acc_2', s1, 1n), // s1 is not acc_2's
      debit('acc_none', s1, 1n),
      debit('acc_1', s1, -1n),
      debit('acc_1', s1, 2n),
      debit('acc_2', s2, 2n), // short: 1 left
    ]);
    expect(out.map((o) => o.kind)).toEqual(['debited', 'short', 'refused', 'refused', 'refused', 'refused', 'debited', 'short']);
    expect(out.map(answer).slice(2, 5)).toEqual([
      expect.stringMatching(/session rts_none does not exist/),
      expect.stringMatching(/session rts_1 does not exist for account acc_2/),
      expect.stringMatching(/account acc_none does not exist/),
    ]);
    expect(answer(out[0]!)).toBe(1n);
    expect(answer(out[6]!)).toBe(0n);
    expect((await store.getAccount('acc_1'))!.characters).toBe(0n);
    expect((await store.getAccount('acc_2'))!.characters).toBe(1n);
    expect((await store.getSession(s1, 'acc_1'))!.charactersCharged).toBe(2n);
    expect((await store.getSession(s2, 'acc_2'))!.charactersCharged).toBe(4n);
    expect((await ledger(store, 'acc_1')).map((r) => r.delta)).toEqual([-2n]);
    expect((await ledger(store, 'acc_2')).map((r) => r.delta)).toEqual([-4n]);
    expect(await store.debitMany([])).toEqual([]);
  });

  // Nodes share PostgreSQL only (a second SQLite connection in this process would wait on the
  // first's lock synchronously, blocking the event loop that would release it).
  it.skipIf(engine === 'sqlite')(
    'two nodes debiting the same accounts at once, asked in opposite orders, both finish and every Character is counted',
    async () => {
      const other = await harness.open();
      const accounts = ['acc_a', 'acc_b', 'acc_c'];
      const sessions: string[] = [];
      for (const acc of accounts) {
        await addAccount(store, acc, 1000n);
        sessions.push(await newSession(store, acc, acc));
      }
      const forward = accounts.map((a, i) => debit(a, sessions[i]!, 1n));
      const backward = [...forward].reverse();
      const rounds = 20;
      const runs: Array<Promise<DebitOutcome[]>> = [];
      for (let r = 0; r < rounds; r++) runs.push(store.debitMany(forward), other.debitMany(backward));
      const outs = await Promise.all(runs);
      expect(outs.flat().every((o) => o.kind === 'debited')).toBe(true);
      for (const [i, acc] of accounts.entries()) {
        expect((await store.getAccount(acc))!.characters).toBe(1000n - 2n * BigInt(rounds));
        expect((await store.getSession(sessions[i]!, acc))!.charactersCharged).toBe(2n * BigInt(rounds));
        expect((await ledger(store, acc)).map((r) => r.balance_after)).toEqual(
          Array.from({ length: 2 * rounds }, (_, k) => 999n - BigInt(k)),
        );
      }
    },
  );
});
