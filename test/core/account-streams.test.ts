import { describe, expect, it } from 'vitest';
import { accountStreamLimit, AccountStreams } from '../../src/core/account-streams.js';

describe('accountStreamLimit', () => {
  it('by default bounds no account (fair share, not a cap: src/core/fair-share.ts)', () => {
    expect(accountStreamLimit(undefined)).toBe(Infinity);
  });

  it("the operator's setting is the cap, 0 meaning no bound", () => {
    expect(accountStreamLimit(3)).toBe(3);
    expect(accountStreamLimit(20)).toBe(20);
    expect(accountStreamLimit(0)).toBe(Infinity);
  });
});

describe('AccountStreams', () => {
  it('counts streaming sessions and handshakes in flight against the limit, per account', () => {
    const t = new AccountStreams();
    expect(t.tryAdmit('a', 's1', 2, [])).toBe(true);
    expect(t.tryAdmit('a', 's2', 2, [])).toBe(true);
    expect(t.tryAdmit('a', 's3', 2, [])).toBe(false);
    expect(t.tryAdmit('b', 's4', 2, [])).toBe(true);
    // s1 attached: its session counts it now, the handshake is settled
    t.settle('a', 's1');
    expect(t.tryAdmit('a', 's3', 2, ['s1'])).toBe(false);
    // s1's session gave its socket up: the place is back
    expect(t.tryAdmit('a', 's3', 2, [])).toBe(true);
    expect(t.inFlight('a')).toBe(2);
  });

  it('a socket for a session already counted is admitted at the limit and counts once', () => {
    const t = new AccountStreams();
    expect(t.tryAdmit('a', 's1', 1, ['s1'])).toBe(true);
    expect(t.tryAdmit('a', 's1', 1, ['s1'])).toBe(true);
    expect(t.tryAdmit('a', 's2', 1, ['s1'])).toBe(false);
    t.settle('a', 's1');
    expect(t.inFlight('a')).toBe(1);
    t.settle('a', 's1');
    expect(t.inFlight('a')).toBe(0);
    expect(t.tryAdmit('a', 's2', 1, [])).toBe(true);
  });

  it('settling what was never admitted changes nothing', () => {
    const t = new AccountStreams();
    t.tryAdmit('a', 's1', 1, []);
    t.settle('a', 'other');
    t.settle('b', 's1');
    expect(t.inFlight('a')).toBe(1);
    expect(t.tryAdmit('a', 's2', 1, [])).toBe(false);
  });
});
