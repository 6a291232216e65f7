// The call view's pure module (src/console/public/call.js): the fragment it is opened with, the
// address it leaves behind (no ticket), its download links and where a line goes on the time
// line, checked against the merged transcript's own order (src/core/calls.ts).
import { describe, expect, it } from 'vitest';
import { MAX_LEGS, callFragmentWithoutTickets, callHistoryLink, parseCallFragment, timelineIndex } from '../../src/console/public/call.js';

const PAGE = 'http://scribed.example:8080/console/call.html';
const CALL = 'call_01jx0000000000000000';
const A = 'rts_01jxaaaaaaaaaaaaaaaaaa';
const B = 'rts_01jxbbbbbbbbbbbbbbbbbb';

const hash = (params: Record<string, string>) => `#${new URLSearchParams(params)}`;

describe('call view fragment', () => {
  it('reads the call, its legs in order with their tickets, renew, origin and history', () => {
    const f = parseCallFragment(
      hash({
        call: CALL,
        legs: `agent:${A}:tkt_one,customer.2:${B}:tkt_two`,
        renew: 'https://app.example/console/ticket',
        history: 'https://app.example/calls/{callId}/transcript?format={format}',
      }),
      PAGE,
    );
    expect(f.problems).toEqual([]);
    expect(f.call).toBe(CALL);
    expect(f.legs).toEqual([
      { speaker: 'agent', session: A, ticket: 'tkt_one' },
      { speaker: 'customer.2', session: B, ticket: 'tkt_two' },
    ]);
    expect(f.renew?.toString()).toBe('https://app.example/console/ticket');
    expect(f.origin).toBe('https://app.example');
    expect(callHistoryLink(f.history!, CALL, 'srt', PAGE)).toBe(`https://app.example/calls/${CALL}/transcript?format=srt`);
  });

  it('a leg without a ticket is kept (a reload); malformed, repeated and surplus legs are reported and left out', () => {
    const many = Array.from({ length: MAX_LEGS + 1 }, (_, i) => `s${i}:rts_${String(i).padStart(20, '0')}`);
    const f = parseCallFragment(
      hash({
        call: CALL,
        legs: [`agent:${A}`, `agent:${B}:tkt_x`, `-bad:${B}`, `x:${B}:nope`, `y:${B}:tkt_a:tkt_b`, `z:sess`, ...many].join(','),
      }),
      PAGE,
    );
    expect(f.legs[0]).toEqual({ speaker: 'agent', session: A, ticket: null });
    expect(f.legs).toHaveLength(MAX_LEGS);
    expect(f.problems.filter((p) => /left out/.test(p))).toHaveLength(6);
    expect(f.problems).toContain('the leg agent is named twice; the first is kept');
  });

  it('refuses a missing or malformed call id and non-http links', () => {
    const f = parseCallFragment(
      hash({ call: 'rts_nope', legs: '', renew: 'javascript:alert(1)', history: 'data:text/plain,{callId}' }),
      PAGE,
    );
    expect([f.call, f.renew, f.history, f.legs]).toEqual([null, null, null, []]);
    expect(f.problems).toEqual([
      'the call id in the link is not a call id (call_...)',
      'the link names no legs',
      'renew is not an http(s) URL; ignored',
      'history is not an http(s) URL template; ignored',
    ]);
    expect(parseCallFragment('', PAGE).problems).toContain('the link names no call');
  });

  it('takes every ticket out of the address and keeps the rest', () => {
    const before = hash({ call: CALL, legs: `agent:${A}:tkt_one,customer:${B}:tkt_two`, renew: 'https://app.example/r' });
    const after = callFragmentWithoutTickets(before);
    expect(after).not.toMatch(/tkt_/);
    const f = parseCallFragment(after, PAGE);
    expect(f.legs).toEqual([
      { speaker: 'agent', session: A, ticket: null },
      { speaker: 'customer', session: B, ticket: null },
    ]);
    expect(f.renew?.toString()).toBe('https://app.example/r');
  });
});

describe('call view time line', () => {
  it('orders lines as the merged transcript does: by start, then by the leg order, arrival order kept', () => {
    // Lines arriving in an order that is not the time order (the legs' events interleave).
    const arrivals = [
      { startMs: 4000, leg: 1, id: 'c0' },
      { startMs: 0, leg: 0, id: 'a0' },
      { startMs: 8500, leg: 0, id: 'a1' },
      { startMs: 4000, leg: 0, id: 'a-same' },
      { startMs: 9000, leg: 1, id: 'c1' },
      { startMs: 9000, leg: 1, id: 'c2' },
    ];
    const shown: typeof arrivals = [];
    for (const line of arrivals) shown.splice(timelineIndex(shown, line), 0, line);
    // The server's merge: a stable sort by startMs then leg.
    const merged = [...arrivals].sort((x, y) => x.startMs - y.startMs || x.leg - y.leg);
    expect(shown.map((l) => l.id)).toEqual(merged.map((l) => l.id));
    expect(shown.map((l) => l.id)).toEqual(['a0', 'a-same', 'c0', 'a1', 'c1', 'c2']);
  });
});
