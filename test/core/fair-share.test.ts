import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { accountToYield, competingAccounts, fairShare, nextToServe } from '../../src/core/fair-share.js';

const held = (entries: Record<string, number>) => new Map(Object.entries(entries));

describe('fairShare', () => {
  it('a lone account is owed every recognizer; competing accounts split them', () => {
    expect(fairShare(2, 1)).toBe(2);
    expect(fairShare(2, 0)).toBe(2);
    expect(fairShare(2, 2)).toBe(1);
    expect(fairShare(3, 2)).toBe(1.5);
  });

  it('competing accounts: those holding a recognizer and those waiting', () => {
    expect([...competingAccounts(['b', 'b'], held({ a: 2, c: 0 }))].sort()).toEqual(['a', 'b']);
  });
});

describe('nextToServe', () => {
  it('nobody waits: -1', () => {
    expect(nextToServe([], held({ a: 2 }), 2)).toBe(-1);
  });

  it('an account alone is served in arrival order', () => {
    expect(nextToServe(['a', 'a'], held({ a: 2 }), 2)).toBe(0);
  });

  it('the account furthest below its share comes first, even when it arrived last', () => {
    // a holds both recognizers and waits with another session; b waits with none
    expect(nextToServe(['a', 'b'], held({ a: 2 }), 2)).toBe(1);
    // of three accounts on 3 recognizers, c (0) is below b (1), b below a (2)
    expect(nextToServe(['a', 'b', 'c'], held({ a: 2, b: 1 }), 3)).toBe(2);
  });

  it('ties go to the longest-waiting', () => {
    expect(nextToServe(['b', 'c'], held({ a: 1 }), 3)).toBe(0);
  });

  it('the chosen account is never further above its share than any other waiting account (property)', () => {
    const accounts = fc.constantFrom('a', 'b', 'c', 'd');
    fc.assert(
      fc.property(
        fc.array(accounts, { minLength: 1, maxLength: 12 }),
        fc.dictionary(accounts, fc.nat(8)),
        fc.integer({ min: 1, max: 16 }),
        (waiting, h, decoders) => {
          const m = held(h);
          const i = nextToServe(waiting, m, decoders);
          expect(i).toBeGreaterThanOrEqual(0);
          expect(i).toBeLessThan(waiting.length);
          const chosen = m.get(waiting[i]!) ?? 0;
          for (const [j, account] of waiting.entries()) {
            const other = m.get(account) ?? 0;
            expect(chosen).toBeLessThanOrEqual(other);
            // among equals, nobody earlier in the queue was passed over
            if (j < i) expect(other).toBeGreaterThan(chosen);
          }
        },
      ),
    );
  });

  it('serving repeatedly from a queue converges on equal shares (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 8 }), fc.integer({ min: 2, max: 4 }), (decoders, nAccounts) => {
        // Every account queues more sessions than the node has recognizers, in bursts by account.
        const names = Array.from({ length: nAccounts }, (_, k) => `acct${k}`);
        const waiting = names.flatMap((n) => Array.from({ length: decoders }, () => n));
        const m = new Map<string, number>();
        for (let r = 0; r < decoders; r++) {
          const i = nextToServe(waiting, m, decoders);
          const [account] = waiting.splice(i, 1);
          m.set(account!, (m.get(account!) ?? 0) + 1);
        }
        const counts = names.map((n) => m.get(n) ?? 0);
        expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
        expect(Math.min(...counts)).toBeGreaterThanOrEqual(Math.floor(decoders / nAccounts));
      }),
    );
  });
});

describe('accountToYield (preemption)', () => {
  it('an account holding every recognizer gives one to a waiting account that holds none', () => {
    expect(accountToYield(['b'], held({ a: 2 }))).toEqual({ from: 'a', to: 'b' });
  });

  it('nobody yields to its own account, or when the split is as even as whole recognizers allow', () => {
    expect(accountToYield(['a'], held({ a: 2 }))).toBeNull();
    expect(accountToYield(['b'], held({ a: 1, b: 0 }))).toBeNull();
    expect(accountToYield(['b'], held({ a: 2, b: 1 }))).toBeNull();
    expect(accountToYield([], held({ a: 4 }))).toBeNull();
  });

  it('the account holding most gives first', () => {
    expect(accountToYield(['c'], held({ a: 2, b: 3 }))).toEqual({ from: 'b', to: 'c' });
  });

  it('a yield never reverses: after it the giver holds at least what the taker holds, and nothing is owed once no gap of two is left (property)', () => {
    const accounts = fc.constantFrom('a', 'b', 'c', 'd');
    fc.assert(
      fc.property(fc.array(accounts, { minLength: 1, maxLength: 6 }), fc.dictionary(accounts, fc.nat(8)), (waiting, h) => {
        const m = held(h);
        const pair = accountToYield(waiting, m);
        if (pair) {
          const giver = m.get(pair.from)! - 1;
          const taker = (m.get(pair.to) ?? 0) + 1;
          expect(giver).toBeGreaterThanOrEqual(taker);
          expect(waiting).toContain(pair.to);
        } else {
          for (const w of waiting) for (const [other, n] of m) if (other !== w) expect(n - (m.get(w) ?? 0)).toBeLessThan(2);
        }
      }),
    );
  });
});
