// Post-call categories (docs/analytics.md, "Categories"): named rules read once a call (or a
// lone session) has ended, against its whole transcript and its conversation figures. A
// category holds 1 to 10 conditions, all of which must hold; each condition is one of phrases
// (any or all of), a pattern (RE2), an entity, a silence, interruptions or a talk share,
// scoped to a speaker, read in a time window, and possibly negated.
// Validation here; evaluation in category-match.ts. Pure, as the live rules (rules.ts) are:
// whether a pattern compiles is asked of the caller's engine.
import { SPEAKER_PATTERN } from '../calls.js';
import { ScribedError } from '../errors.js';
import {
  MAX_RULE_NAME_CHARS,
  MAX_RULE_PATTERN_CHARS,
  MAX_RULE_PHRASE_CHARS,
  MAX_RULE_PHRASES,
  ruleWords,
  spotFields,
  spottingOf,
  type PatternCheck,
  type PhraseSpotting,
} from '../rules.js';
import type { EntityCategory } from '../session-options.js';
import { DETECTABLE_CATEGORIES } from '../text-options.js';

export const MAX_CATEGORIES_PER_ACCOUNT = 50;
export const MAX_CATEGORY_CONDITIONS = 10;
/** A window or a silence is at most a day (the longest level track, levels.ts). */
export const MAX_WINDOW_SECONDS = 86_400;
export const MAX_INTERRUPTIONS = 1000;

/** Where in the call a condition looks: the first or last N seconds, or share of the call. */
export type CategoryWindow = { first: number } | { last: number } | { firstShare: number } | { lastShare: number };

export type CategoryTest =
  | { kind: 'phrases'; phrases: string[]; match: 'any' | 'all'; spot?: PhraseSpotting }
  | { kind: 'pattern'; pattern: string; caseSensitive: boolean }
  | { kind: 'entity'; entity: EntityCategory }
  | { kind: 'silence'; seconds: number }
  | { kind: 'interruptions'; atLeast: number }
  | { kind: 'talkShare'; min: number | null; max: number | null };

export interface CategoryCondition {
  test: CategoryTest;
  /** Only this speaker's legs (phrases, pattern, entity: who said it; interruptions: who
   * interrupted; talk share: whose share); null: any leg. */
  speaker: string | null;
  window: CategoryWindow | null;
  /** The condition holds when the test finds nothing in its window. */
  negate: boolean;
}

export interface CategoryInput {
  name: string;
  conditions: CategoryCondition[];
  enabled: boolean;
}

export type CategoryPatch = Partial<CategoryInput>;

const TEST_FIELDS = ['phrases', 'pattern', 'entity', 'silenceSeconds', 'interruptions', 'talkShare'] as const;
const CONDITION_KNOWN = new Set<string>([...TEST_FIELDS, 'match', 'caseSensitive', 'spot', 'spotThreshold', 'speaker', 'window', 'negate']);
const CATEGORY_KNOWN = new Set(['name', 'conditions', 'enabled']);

function field(name: string, message: string): ScribedError {
  return new ScribedError('VALIDATION_FAILED', `${name}: ${message}`, { details: { field: name } });
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function number(v: unknown, name: string, min: number, max: number, what: string, exclusiveMin = false): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v > max || v < min || (exclusiveMin && v === min)) {
    throw field(name, exclusiveMin ? `${what} over ${min}, at most ${max}` : `${what} from ${min} to ${max}`);
  }
  return v;
}

function windowOf(v: unknown, at: string): CategoryWindow {
  if (!isObject(v)) throw field(at, 'an object with one of first, last (seconds), firstShare, lastShare (of the call, over 0 to 1)');
  const keys = Object.keys(v);
  if (keys.length !== 1 || !['first', 'last', 'firstShare', 'lastShare'].includes(keys[0]!))
    throw field(at, 'exactly one of first, last, firstShare, lastShare');
  const k = keys[0]!;
  if (k === 'first' || k === 'last') {
    const n = number(v[k], `${at}.${k}`, 0, MAX_WINDOW_SECONDS, 'seconds', true);
    return k === 'first' ? { first: n } : { last: n };
  }
  const s = number(v[k], `${at}.${k}`, 0, 1, 'a share of the call', true);
  return k === 'firstShare' ? { firstShare: s } : { lastShare: s };
}

function testOf(c: Record<string, unknown>, at: string, check: PatternCheck): CategoryTest {
  const given = TEST_FIELDS.filter((f) => c[f] !== undefined);
  if (given.length === 0) {
    if (c.negate === true) throw field(`${at}.negate`, `nothing to negate: give one of ${TEST_FIELDS.join(', ')}`);
    throw field(at, `exactly one of ${TEST_FIELDS.join(', ')}`);
  }
  if (given.length > 1) throw field(`${at}.${given[1]}`, `exactly one of ${TEST_FIELDS.join(', ')}`);
  const kind = given[0]!;
  if (c.match !== undefined && kind !== 'phrases') throw field(`${at}.match`, 'only with phrases');
  if (c.caseSensitive !== undefined && kind !== 'pattern') throw field(`${at}.caseSensitive`, 'only with pattern');
  if ((c.spot !== undefined || c.spotThreshold !== undefined) && kind !== 'phrases')
    throw field(`${at}.${c.spot !== undefined ? 'spot' : 'spotThreshold'}`, 'only with phrases');
  switch (kind) {
    case 'phrases': {
      const v = c.phrases;
      if (!Array.isArray(v) || v.length === 0 || v.length > MAX_RULE_PHRASES)
        throw field(`${at}.phrases`, `a list of 1 to ${MAX_RULE_PHRASES} phrases`);
      v.forEach((p, i) => {
        if (typeof p !== 'string' || p.length > MAX_RULE_PHRASE_CHARS || ruleWords(p).length === 0)
          throw field(`${at}.phrases[${i}]`, `a phrase of at most ${MAX_RULE_PHRASE_CHARS} characters with at least one word`);
      });
      const match = c.match ?? 'any';
      if (match !== 'any' && match !== 'all') throw field(`${at}.match`, '"any" (one of the phrases) or "all" (every phrase)');
      const spot = spottingOf(c.spot, c.spotThreshold, `${at}.`);
      return { kind: 'phrases', phrases: v as string[], match, ...(spot ? { spot } : {}) };
    }
    case 'pattern': {
      const v = c.pattern;
      if (typeof v !== 'string' || v.length === 0 || v.length > MAX_RULE_PATTERN_CHARS)
        throw field(`${at}.pattern`, `a regular expression of 1 to ${MAX_RULE_PATTERN_CHARS} characters`);
      const caseSensitive = c.caseSensitive ?? false;
      if (typeof caseSensitive !== 'boolean') throw field(`${at}.caseSensitive`, 'a boolean');
      const refused = check(v, caseSensitive);
      if (refused !== null)
        throw new ScribedError('RULE_PATTERN_INVALID', `${at}.pattern: ${refused}`, { details: { field: `${at}.pattern` } });
      return { kind: 'pattern', pattern: v, caseSensitive };
    }
    case 'entity': {
      const v = c.entity;
      if (typeof v !== 'string' || !(DETECTABLE_CATEGORIES as readonly string[]).includes(v))
        throw field(`${at}.entity`, `one of ${DETECTABLE_CATEGORIES.join(', ')}`);
      return { kind: 'entity', entity: v as EntityCategory };
    }
    case 'silenceSeconds':
      return { kind: 'silence', seconds: number(c.silenceSeconds, `${at}.silenceSeconds`, 1, MAX_WINDOW_SECONDS, 'seconds') };
    case 'interruptions':
      if (!Number.isInteger(c.interruptions)) throw field(`${at}.interruptions`, `a whole number from 1 to ${MAX_INTERRUPTIONS}`);
      return { kind: 'interruptions', atLeast: number(c.interruptions, `${at}.interruptions`, 1, MAX_INTERRUPTIONS, 'a whole number') };
    default: {
      const v = c.talkShare;
      if (!isObject(v) || Object.keys(v).some((k) => k !== 'min' && k !== 'max') || (v.min === undefined && v.max === undefined))
        throw field(`${at}.talkShare`, 'an object with min, max or both (shares from 0 to 1)');
      const min = v.min === undefined ? null : number(v.min, `${at}.talkShare.min`, 0, 1, 'a share');
      const max = v.max === undefined ? null : number(v.max, `${at}.talkShare.max`, 0, 1, 'a share');
      if (min !== null && max !== null && min > max) throw field(`${at}.talkShare`, 'min above max');
      return { kind: 'talkShare', min, max };
    }
  }
}

function conditionOf(v: unknown, at: string, check: PatternCheck): CategoryCondition {
  if (!isObject(v)) throw field(at, 'a condition object');
  for (const k of Object.keys(v)) if (!CONDITION_KNOWN.has(k)) throw field(`${at}.${k}`, 'unknown field');
  if (v.negate !== undefined && typeof v.negate !== 'boolean') throw field(`${at}.negate`, 'a boolean');
  const test = testOf(v, at, check);
  let speaker: string | null = null;
  if (v.speaker !== undefined && v.speaker !== null) {
    if (typeof v.speaker !== 'string' || !SPEAKER_PATTERN.test(v.speaker))
      throw field(`${at}.speaker`, `null (any leg) or a speaker label matching ${SPEAKER_PATTERN.source}`);
    if (test.kind === 'silence') throw field(`${at}.speaker`, "a silence is the whole call's (nobody talks): no speaker");
    speaker = v.speaker;
  }
  if (test.kind === 'talkShare' && speaker === null) throw field(`${at}.speaker`, "a talk share is one speaker's: name it");
  return {
    test,
    speaker,
    window: v.window === undefined || v.window === null ? null : windowOf(v.window, `${at}.window`),
    negate: v.negate === true,
  };
}

function nameOf(v: unknown): string {
  if (typeof v !== 'string' || v.trim().length === 0 || v.length > MAX_RULE_NAME_CHARS)
    throw field('name', `a non-empty string of at most ${MAX_RULE_NAME_CHARS} characters`);
  return v;
}

function conditionsOf(v: unknown, check: PatternCheck): CategoryCondition[] {
  if (!Array.isArray(v) || v.length === 0)
    throw field('conditions', `a list of 1 to ${MAX_CATEGORY_CONDITIONS} conditions (a category with no condition would match every call)`);
  if (v.length > MAX_CATEGORY_CONDITIONS) throw field('conditions', `at most ${MAX_CATEGORY_CONDITIONS} conditions`);
  return v.map((c, i) => conditionOf(c, `conditions[${i}]`, check));
}

export function validateCreateCategory(body: unknown, check: PatternCheck): CategoryInput {
  if (!isObject(body)) throw field('body', 'a JSON object');
  for (const k of Object.keys(body)) if (!CATEGORY_KNOWN.has(k)) throw field(k, 'unknown field');
  if (body.enabled !== undefined && typeof body.enabled !== 'boolean') throw field('enabled', 'a boolean');
  return { name: nameOf(body.name), conditions: conditionsOf(body.conditions, check), enabled: body.enabled !== false };
}

export function validatePatchCategory(body: unknown, check: PatternCheck): CategoryPatch {
  if (!isObject(body)) throw field('body', 'a JSON object');
  for (const k of Object.keys(body)) if (!CATEGORY_KNOWN.has(k)) throw field(k, 'unknown field');
  if (Object.keys(body).length === 0) throw field('body', 'at least one field to change');
  const patch: CategoryPatch = {};
  if (body.name !== undefined) patch.name = nameOf(body.name);
  if (body.conditions !== undefined) patch.conditions = conditionsOf(body.conditions, check);
  if (body.enabled !== undefined) {
    if (typeof body.enabled !== 'boolean') throw field('enabled', 'a boolean');
    patch.enabled = body.enabled;
  }
  return patch;
}

/** A condition as the API shows it: the body fields that gave it. */
export function conditionView(c: CategoryCondition): Record<string, unknown> {
  const t = c.test;
  const test: Record<string, unknown> =
    t.kind === 'phrases'
      ? { phrases: t.phrases, match: t.match, ...spotFields(t.spot) }
      : t.kind === 'pattern'
        ? { pattern: t.pattern, caseSensitive: t.caseSensitive }
        : t.kind === 'entity'
          ? { entity: t.entity }
          : t.kind === 'silence'
            ? { silenceSeconds: t.seconds }
            : t.kind === 'interruptions'
              ? { interruptions: t.atLeast }
              : { talkShare: { ...(t.min === null ? {} : { min: t.min }), ...(t.max === null ? {} : { max: t.max }) } };
  return { ...test, speaker: c.speaker, window: c.window, negate: c.negate };
}
