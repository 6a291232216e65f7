// Live rules' validation and matching (src/core/rules.ts, rules-match.ts; docs/rules.md):
// exactly one condition, limits refused with the error table's codes, a pattern RE2 refuses
// answered RULE_PATTERN_INVALID; phrases by whole words in order, case and punctuation
// ignored; silence before speech; runs of speech and their overlap (talk-over); scope.
import { describe, expect, it } from 'vitest';
import { ScribedError } from '../../src/core/errors.js';
import { applyRulePatch, MAX_RULE_PHRASES, validateCreateRule, validatePatchRule } from '../../src/core/rules.js';
import { findPhrase, matchText, overlapLongerThan, ruleReads, silenceBefore, speechRuns } from '../../src/core/rules-match.js';

const anyPattern = () => null;

function refused(fn: () => unknown): ScribedError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ScribedError);
    return e as ScribedError;
  }
  throw new Error('not refused');
}

describe('validateCreateRule', () => {
  it('takes each condition with defaults (any leg, finals only, enabled)', () => {
    expect(validateCreateRule({ name: 'cancel', phrases: ['cancel my subscription'] }, anyPattern)).toEqual({
      name: 'cancel', condition: { kind: 'phrases', phrases: ['cancel my subscription'] }, speaker: null, partials: false, enabled: true,
    });
    expect(validateCreateRule({ name: 'p', pattern: 'refund(ed)?', caseSensitive: true }, anyPattern).condition).toEqual({ kind: 'pattern', pattern: 'refund(ed)?', caseSensitive: true });
    expect(validateCreateRule({ name: 'e', entity: 'credit_card', speaker: 'customer', partials: true }, anyPattern)).toMatchObject({ condition: { kind: 'entity', entity: 'credit_card' }, speaker: 'customer', partials: true });
    expect(validateCreateRule({ name: 's', silenceSeconds: 10 }, anyPattern).condition).toEqual({ kind: 'silence', seconds: 10 });
    expect(validateCreateRule({ name: 't', talkOverSeconds: 2.5, enabled: false }, anyPattern)).toMatchObject({ condition: { kind: 'talkOver', seconds: 2.5 }, enabled: false });
  });

  it('refuses none or two conditions, bad fields and limits with VALIDATION_FAILED naming the field', () => {
    const cases: [unknown, string][] = [
      [{ name: 'x' }, 'phrases'],
      [{ name: 'x', phrases: ['a'], silenceSeconds: 5 }, 'silenceSeconds'],
      [{ phrases: ['a'] }, 'name'],
      [{ name: ' ', phrases: ['a'] }, 'name'],
      [{ name: 'x', phrases: [] }, 'phrases'],
      [{ name: 'x', phrases: Array.from({ length: MAX_RULE_PHRASES + 1 }, () => 'a') }, 'phrases'],
      [{ name: 'x', phrases: ['ok', '?!'] }, 'phrases[1]'],
      [{ name: 'x', entity: 'person' }, 'entity'],
      [{ name: 'x', silenceSeconds: 0.5 }, 'silenceSeconds'],
      [{ name: 'x', talkOverSeconds: 601 }, 'talkOverSeconds'],
      [{ name: 'x', talkOverSeconds: 2, partials: true }, 'partials'],
      [{ name: 'x', phrases: ['a'], caseSensitive: true }, 'caseSensitive'],
      [{ name: 'x', phrases: ['a'], speaker: 'two words' }, 'speaker'],
      [{ name: 'x', phrases: ['a'], colour: 'red' }, 'colour'],
      [{ name: 'x', pattern: 'a'.repeat(501) }, 'pattern'],
    ];
    for (const [body, fieldName] of cases) {
      const e = refused(() => validateCreateRule(body, anyPattern));
      expect(e.code, JSON.stringify(body)).toBe('VALIDATION_FAILED');
      expect(e.details, JSON.stringify(body)).toEqual({ field: fieldName });
    }
  });

  it('answers RULE_PATTERN_INVALID with the engine\'s reason for a pattern it refuses', () => {
    const e = refused(() => validateCreateRule({ name: 'x', pattern: '(a)\\1' }, () => 'invalid escape sequence: \\1'));
    expect(e.code).toBe('RULE_PATTERN_INVALID');
    expect(e.message).toContain('invalid escape sequence');
  });

  it('patches: a condition replaces the old; partials with talk-over is refused on the whole rule', () => {
    const current = validateCreateRule({ name: 't', talkOverSeconds: 2 }, anyPattern);
    expect(refused(() => validatePatchRule({}, anyPattern)).details).toEqual({ field: 'body' });
    const patch = validatePatchRule({ partials: true }, anyPattern);
    expect(refused(() => applyRulePatch(current, patch)).details).toEqual({ field: 'partials' });
    expect(applyRulePatch(current, validatePatchRule({ partials: true, phrases: ['hello'] }, anyPattern))).toMatchObject({ partials: true, condition: { kind: 'phrases' } });
  });
});

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
    const runs = speechRuns([{ startMs: 0, endMs: 400 }, { startMs: 500, endMs: 900 }, { startMs: 2000, endMs: 2600 }], 300);
    expect(runs).toEqual([{ startMs: 0, endMs: 900 }, { startMs: 2000, endMs: 2600 }]);
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
