// Live rules' matching (src/core/rules-match.ts; docs/rules.md; their bodies' validation:
// test/server/schemas/rules.test.ts): phrases by whole words in order, case and punctuation
// ignored; silence before speech; runs of speech and their overlap (talk-over); scope.
import { describe, expect, it } from 'vitest';
import { findPhrase, matchText, overlapLongerThan, ruleReads, silenceBefore, speechRuns } from '../../src/core/rules-match.js';

describe('matching', () => {
  it('finds a phrase by whole words in order, case and punctuation ignored, with its offsets', () => {
    const text = 'Okay, I want to Cancel, my subscription please';
    const span = findPhrase(text, ['refund', 'cancel my subscription'])!;
    expect(text.slice(span.start, span.end)).toBe('Cancel, my subscription');
    expect(findPhrase('cancelled my subscription', ['cancel my subscription'])).toBeNull();
    expect(findPhrase('my subscription cancel', ['cancel my subscription'])).toBeNull();
    expect(findPhrase("I don't know", ["don't"])).toEqual({ start: 2, end: 7 });
  });

  it('reads patterns and entities through the given matchers only for their conditions', () => {
    const m = { pattern: () => ({ start: 1, end: 3 }), entities: (_t: string, c: string) => (c === 'money' ? [{ start: 0, end: 2 }] : []) };
    expect(matchText({ kind: 'pattern', pattern: 'x', caseSensitive: false }, 'abcd', m)).toEqual({ start: 1, end: 3 });
    expect(matchText({ kind: 'entity', entity: 'money' }, '$5', m)).toEqual({ start: 0, end: 2 });
    expect(matchText({ kind: 'entity', entity: 'email' }, '$5', m)).toBeNull();
    expect(matchText({ kind: 'silence', seconds: 1 }, 'abc', m)).toBeNull();
  });

  it('measures silence before speech and overlapping runs of speech', () => {
    expect(silenceBefore(1000, 12_500, 10)).toEqual({ startMs: 1000, endMs: 12_500 });
    expect(silenceBefore(1000, 11_000, 10)).toBeNull();
    const runs = speechRuns(
      [
        { startMs: 0, endMs: 400 },
        { startMs: 500, endMs: 900 },
        { startMs: 2000, endMs: 2600 },
      ],
      300,
    );
    expect(runs).toEqual([
      { startMs: 0, endMs: 900 },
      { startMs: 2000, endMs: 2600 },
    ]);
    expect(overlapLongerThan(runs, [{ startMs: 200, endMs: 5000 }], 0.6)).toEqual({ startMs: 200, endMs: 900 });
    expect(overlapLongerThan(runs, [{ startMs: 200, endMs: 5000 }], 0.7)).toBeNull();
  });

  it('scopes a rule to its speaker and to finals unless it reads partials', () => {
    const rule = { speaker: 'customer', partials: false, enabled: true };
    expect(ruleReads(rule, 'customer', true)).toBe(true);
    expect(ruleReads(rule, 'agent', true)).toBe(false);
    expect(ruleReads(rule, 'customer', false)).toBe(false);
    expect(ruleReads({ ...rule, speaker: null, partials: true }, null, false)).toBe(true);
    expect(ruleReads({ ...rule, enabled: false }, 'customer', true)).toBe(false);
  });
});
