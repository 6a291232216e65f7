// Live rules (docs/rules.md): what an account asks to be alerted about during its sessions,
// as the API takes it. A rule has one condition (phrases, a regular expression, an entity
// type, silence, talk-over), a scope (one speaker label or any leg) and whether partials are
// read too. Validation and limits only; matching is rules-match.ts. Pure: whether a regular
// expression compiles is asked of the caller's engine (RE2, src/text/rule-pattern.ts).
import { SPEAKER_PATTERN } from './calls.js';
import { ScribedError } from './errors.js';
import type { EntityCategory } from './session-options.js';
import { DETECTABLE_CATEGORIES } from './text-options.js';

export const MAX_RULES_PER_ACCOUNT = 50;
export const MAX_RULE_NAME_CHARS = 100;
export const MAX_RULE_PHRASES = 50;
export const MAX_RULE_PHRASE_CHARS = 200;
export const MAX_RULE_PATTERN_CHARS = 500;
export const MIN_SILENCE_SECONDS = 1;
export const MAX_SILENCE_SECONDS = 3600;
export const MIN_TALK_OVER_SECONDS = 0.5;
export const MAX_TALK_OVER_SECONDS = 600;

export type RuleCondition =
  | { kind: 'phrases'; phrases: string[] }
  | { kind: 'pattern'; pattern: string; caseSensitive: boolean }
  | { kind: 'entity'; entity: EntityCategory }
  | { kind: 'silence'; seconds: number }
  | { kind: 'talkOver'; seconds: number };

export type RuleConditionKind = RuleCondition['kind'];
export const RULE_CONDITION_KINDS: readonly RuleConditionKind[] = ['phrases', 'pattern', 'entity', 'silence', 'talkOver'];

/** The body fields that each name one condition; exactly one is given. */
const CONDITION_FIELDS = ['phrases', 'pattern', 'entity', 'silenceSeconds', 'talkOverSeconds'] as const;

export interface RuleInput {
  name: string;
  condition: RuleCondition;
  /** Only legs with this speaker label; null: any leg (and sessions outside calls). */
  speaker: string | null;
  /** Read partials too (text and silence conditions); finals are always read. */
  partials: boolean;
  enabled: boolean;
}

export type RulePatch = Partial<RuleInput>;

/** Whether the engine takes a pattern: null when it does, else why not. */
export type PatternCheck = (pattern: string, caseSensitive: boolean) => string | null;

function field(name: string, message: string): ScribedError {
  return new ScribedError('VALIDATION_FAILED', `${name}: ${message}`, { details: { field: name } });
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Words as rules and the matcher read them: runs of letters and digits (an apostrophe inside
 * a word kept), lower-case. */
export function ruleWords(text: string): string[] {
  return [...text.toLowerCase().matchAll(/[\p{L}\p{N}]+(?:['’][\p{L}\p{N}]+)*/gu)].map((m) => m[0].replace(/’/g, "'"));
}

function name(v: unknown): string {
  if (typeof v !== 'string' || v.trim().length === 0 || v.length > MAX_RULE_NAME_CHARS) throw field('name', `a non-empty string of at most ${MAX_RULE_NAME_CHARS} characters`);
  return v;
}

function seconds(v: unknown, fieldName: string, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) throw field(fieldName, `a number of seconds from ${min} to ${max}`);
  return v;
}

function condition(body: Record<string, unknown>, check: PatternCheck): RuleCondition {
  const given = CONDITION_FIELDS.filter((f) => body[f] !== undefined);
  if (given.length !== 1) throw field(given[1] ?? 'phrases', `exactly one of ${CONDITION_FIELDS.join(', ')}`);
  if (body.caseSensitive !== undefined && given[0] !== 'pattern') throw field('caseSensitive', 'only with pattern');
  switch (given[0]!) {
    case 'phrases': {
      const v = body.phrases;
      if (!Array.isArray(v) || v.length === 0 || v.length > MAX_RULE_PHRASES) throw field('phrases', `a list of 1 to ${MAX_RULE_PHRASES} phrases`);
      v.forEach((p, i) => {
        if (typeof p !== 'string' || p.length > MAX_RULE_PHRASE_CHARS || ruleWords(p).length === 0) {
          throw field(`phrases[${i}]`, `a phrase of at most ${MAX_RULE_PHRASE_CHARS} characters with at least one word`);
        }
      });
      return { kind: 'phrases', phrases: v as string[] };
    }
    case 'pattern': {
      const v = body.pattern;
      if (typeof v !== 'string' || v.length === 0 || v.length > MAX_RULE_PATTERN_CHARS) throw field('pattern', `a regular expression of 1 to ${MAX_RULE_PATTERN_CHARS} characters`);
      const caseSensitive = body.caseSensitive ?? false;
      if (typeof caseSensitive !== 'boolean') throw field('caseSensitive', 'a boolean');
      const refused = check(v, caseSensitive);
      if (refused !== null) throw new ScribedError('RULE_PATTERN_INVALID', `pattern: ${refused}`, { details: { field: 'pattern' } });
      return { kind: 'pattern', pattern: v, caseSensitive };
    }
    case 'entity': {
      const v = body.entity;
      if (typeof v !== 'string' || !(DETECTABLE_CATEGORIES as readonly string[]).includes(v)) throw field('entity', `one of ${DETECTABLE_CATEGORIES.join(', ')}`);
      return { kind: 'entity', entity: v as EntityCategory };
    }
    case 'silenceSeconds':
      return { kind: 'silence', seconds: seconds(body.silenceSeconds, 'silenceSeconds', MIN_SILENCE_SECONDS, MAX_SILENCE_SECONDS) };
    default:
      return { kind: 'talkOver', seconds: seconds(body.talkOverSeconds, 'talkOverSeconds', MIN_TALK_OVER_SECONDS, MAX_TALK_OVER_SECONDS) };
  }
}

function speaker(v: unknown): string | null {
  if (v === null) return null;
  if (typeof v !== 'string' || !SPEAKER_PATTERN.test(v)) throw field('speaker', `null (any leg) or a speaker label matching ${SPEAKER_PATTERN.source}`);
  return v;
}

function bool(v: unknown, fieldName: string): boolean {
  if (typeof v !== 'boolean') throw field(fieldName, 'a boolean');
  return v;
}

function partials(v: boolean, c: RuleCondition): boolean {
  if (v && c.kind === 'talkOver') throw field('partials', 'talk-over is read from finals only');
  return v;
}

const KNOWN = new Set<string>(['name', 'speaker', 'partials', 'enabled', 'caseSensitive', ...CONDITION_FIELDS]);

function known(body: Record<string, unknown>): void {
  for (const k of Object.keys(body)) if (!KNOWN.has(k)) throw field(k, 'unknown field');
}

export function validateCreateRule(body: unknown, check: PatternCheck): RuleInput {
  if (!isObject(body)) throw field('body', 'a JSON object');
  known(body);
  const c = condition(body, check);
  return {
    name: name(body.name),
    condition: c,
    speaker: body.speaker === undefined ? null : speaker(body.speaker),
    partials: partials(body.partials === undefined ? false : bool(body.partials, 'partials'), c),
    enabled: body.enabled === undefined ? true : bool(body.enabled, 'enabled'),
  };
}

/** A change to a rule: any field of create; a condition given replaces the rule's condition. */
export function validatePatchRule(body: unknown, check: PatternCheck): RulePatch {
  if (!isObject(body)) throw field('body', 'a JSON object');
  known(body);
  if (Object.keys(body).length === 0) throw field('body', 'at least one field to change');
  const patch: RulePatch = {};
  if (body.name !== undefined) patch.name = name(body.name);
  if (CONDITION_FIELDS.some((f) => body[f] !== undefined) || body.caseSensitive !== undefined) {
    if (!CONDITION_FIELDS.some((f) => body[f] !== undefined)) throw field('caseSensitive', 'only with pattern');
    patch.condition = condition(body, check);
  }
  if (body.speaker !== undefined) patch.speaker = speaker(body.speaker);
  if (body.partials !== undefined) patch.partials = bool(body.partials, 'partials');
  if (body.enabled !== undefined) patch.enabled = bool(body.enabled, 'enabled');
  if (patch.partials !== undefined && patch.condition !== undefined) partials(patch.partials, patch.condition);
  return patch;
}

/** The rule a change makes, checked as a whole (partials with talk-over is refused). */
export function applyRulePatch(current: RuleInput, patch: RulePatch): RuleInput {
  const next = { ...current, ...patch };
  partials(next.partials, next.condition);
  return next;
}

/** The condition as the API shows it: the one body field that gave it. */
export function conditionFields(c: RuleCondition): Record<string, unknown> {
  switch (c.kind) {
    case 'phrases':
      return { phrases: c.phrases };
    case 'pattern':
      return { pattern: c.pattern, caseSensitive: c.caseSensitive };
    case 'entity':
      return { entity: c.entity };
    case 'silence':
      return { silenceSeconds: c.seconds };
    case 'talkOver':
      return { talkOverSeconds: c.seconds };
  }
}
