// Rule patterns on RE2 (src/text/rule-pattern.ts): a catastrophic pattern for a backtracking
// engine, (a+)+$ on a long input, runs in bounded (linear) time; backreferences and
// lookaround are refused; case folding and offsets as JavaScript's.
import { describe, expect, it } from 'vitest';
import { checkRulePattern, findRulePattern } from '../../src/text/rule-pattern.js';

describe('rule patterns (RE2)', () => {
  it('runs (a+)+$ over 100,000 characters in bounded time where a backtracking engine would not finish', () => {
    const input = 'a'.repeat(100_000) + 'b';
    expect(checkRulePattern('(a+)+$', false)).toBeNull();
    const t0 = performance.now();
    expect(findRulePattern('(a+)+$', false, input)).toBeNull();
    const ms = performance.now() - t0;
    // Linear: a few ms here; the bound is generous for a loaded machine. V8's backtracking on
    // the same input takes exponential time (2^n steps; n = 30 is already seconds).
    expect(ms).toBeLessThan(1000);
    const t1 = performance.now();
    expect(findRulePattern('(x+x+)+y', false, 'x'.repeat(50_000))).toBeNull();
    expect(performance.now() - t1).toBeLessThan(1000);
  });

  it('refuses what RE2 does not run: backreferences, lookahead, lookbehind', () => {
    expect(checkRulePattern('(a)\\1', false)).toMatch(/escape/);
    expect(checkRulePattern('cancel(?= now)', false)).not.toBeNull();
    expect(checkRulePattern('(?<=my )card', false)).not.toBeNull();
    expect(checkRulePattern('(unclosed', false)).not.toBeNull();
  });

  it('matches case-insensitively unless asked, with JavaScript string offsets', () => {
    const text = 'Héllo, I want a REFUND today';
    expect(findRulePattern('refund(ed)?', false, text)).toEqual({ start: 16, end: 22 });
    expect(findRulePattern('refund', true, text)).toBeNull();
    expect(findRulePattern('\\d{4}', false, 'card ending 4242')).toEqual({ start: 12, end: 16 });
    expect(findRulePattern('x*', false, 'abc')).toBeNull();
  });
});
