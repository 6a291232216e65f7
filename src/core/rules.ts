// Live rules (docs/rules.md): what an account asks to be alerted about during its sessions,
// as the API takes it. A rule has one condition (phrases, a regular expression, an entity
// type, silence, talk-over), a scope (one speaker label or any leg) and whether partials are
// read too. Limits and the rules between fields; the body's shape is its schema
// (src/server/schemas/rules.ts); matching is rules-match.ts. Pure: whether a regular
// expression compiles is asked of the caller's engine (RE2, src/text/rule-pattern.ts).
import { ScribedError } from './errors.js';
import type { EntityCategory } from './session-options.js';

export const MAX_RULES_PER_ACCOUNT = 50;
export const MAX_RULE_NAME_CHARS = 100;
export const MAX_RULE_PHRASES = 50;
export const MAX_RULE_PHRASE_CHARS = 200;
export const MAX_RULE_PATTERN_CHARS = 500;
export const MIN_SILENCE_SECONDS = 1;
export const MAX_SILENCE_SECONDS = 3600;
export const MIN_TALK_OVER_SECONDS = 0.5;
export const MAX_TALK_OVER_SECONDS = 600;
/** Phrase spotting's detection threshold (pocketsphinx keyphrase search: the smaller, the more
 * it detects, and the more false alarms). The default is the strictest bench/phrase-spotting.ts
 * measured (docs/benchmarks.md); the bounds take in every value measured and then some. */
export const DEFAULT_SPOT_THRESHOLD = 1e-5;
export const MIN_SPOT_THRESHOLD = 1e-50;
export const MAX_SPOT_THRESHOLD = 1e-1;

/** Spot the phrases in the audio too, each at this threshold (docs/analytics.md). */
export interface PhraseSpotting {
  threshold: number;
}

export type RuleCondition =
  | { kind: 'phrases'; phrases: string[]; spot?: PhraseSpotting }
  | { kind: 'pattern'; pattern: string; caseSensitive: boolean }
  | { kind: 'entity'; entity: EntityCategory }
  | { kind: 'silence'; seconds: number }
  | { kind: 'talkOver'; seconds: number };

export type RuleConditionKind = RuleCondition['kind'];
export const RULE_CONDITION_KINDS: readonly RuleConditionKind[] = ['phrases', 'pattern', 'entity', 'silence', 'talkOver'];

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

/** A rule body's field refused: VALIDATION_FAILED naming it. */
export function ruleField(name: string, message: string): ScribedError {
  return new ScribedError('VALIDATION_FAILED', `${name}: ${message}`, { details: { field: name } });
}

/** Words as rules and the matcher read them: runs of letters and digits (an apostrophe inside
 * a word kept), lower-case. */
export function ruleWords(text: string): string[] {
  return [...text.toLowerCase().matchAll(/[\p{L}\p{N}]+(?:['’][\p{L}\p{N}]+)*/gu)].map((m) => m[0].replace(/’/g, "'"));
}

/** Talk-over is read from finals only: partials are refused beside it. */
export function checkPartials(partials: boolean, c: RuleCondition): void {
  if (partials && c.kind === 'talkOver') throw ruleField('partials', 'talk-over is read from finals only');
}

/** The rule a change makes, checked as a whole (partials with talk-over is refused). */
export function applyRulePatch(current: RuleInput, patch: RulePatch): RuleInput {
  const next = { ...current, ...patch };
  checkPartials(next.partials, next.condition);
  return next;
}

/** A phrase condition's spotting as the API shows it: `spot` and its threshold when asked. */
export function spotFields(spot: PhraseSpotting | undefined): Record<string, unknown> {
  return spot ? { spot: true, spotThreshold: spot.threshold } : {};
}

/** A phrase as the keyphrase search is given it: its words, lower-case, one space between. */
export function spotPhrase(phrase: string): string {
  return ruleWords(phrase).join(' ');
}

/** The spotting a body asks for (`spot`, `spotThreshold`), checked: a threshold only with
 * spot; `at` prefixes the field names (a category's condition). */
export function spottingOf(spot: unknown, threshold: unknown, at = ''): PhraseSpotting | undefined {
  if (spot !== undefined && typeof spot !== 'boolean') throw ruleField(`${at}spot`, 'a boolean');
  if (threshold !== undefined) {
    if (spot !== true) throw ruleField(`${at}spotThreshold`, 'only with spot: true');
    if (typeof threshold !== 'number' || !Number.isFinite(threshold) || threshold < MIN_SPOT_THRESHOLD || threshold > MAX_SPOT_THRESHOLD)
      throw ruleField(`${at}spotThreshold`, `a number from ${MIN_SPOT_THRESHOLD} to ${MAX_SPOT_THRESHOLD}`);
  }
  return spot === true ? { threshold: (threshold as number | undefined) ?? DEFAULT_SPOT_THRESHOLD } : undefined;
}

/** The condition as the API shows it: the one body field that gave it. */
export function conditionFields(c: RuleCondition): Record<string, unknown> {
  switch (c.kind) {
    case 'phrases':
      return { phrases: c.phrases, ...spotFields(c.spot) };
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
