// Interpretation projects: request validation, the Characters price of one reservation
// cycle, retry plans and the retry request check. Pure: time is passed in.
//
// Money model (docs/api.md, Interpretation). Each target reserves the Characters of one
// processing cycle when it is queued: at creation (cycle 1) and at every confirmed retry
// (cycle n+1). A failure releases the reservation back to the balance (FAILED_RELEASED).
// The price of a cycle is the source's code points times the target language's rate, with
// a floor, under a versioned rate table: a plan quoted under one rateVersion is stale once
// the table changes.
import { createHash } from 'node:crypto';
import { ScribedError } from './errors.js';

export const RATE_VERSION = '2026-11-01';
/** Percent of one Character per source code point, by target language; others pay 100. */
const RATE_PERCENT: Readonly<Record<string, number>> = { ja: 150, ko: 150, zh: 150, ar: 120, hi: 120 };
export const MIN_CHARACTERS_PER_CYCLE = 100n;
export const RETRY_PLAN_TTL_MS = 15 * 60 * 1000;
export const MAX_TARGETS = 10;
export const MAX_TITLE_CODE_POINTS = 200;
export const MAX_SOURCE_TEXT_CODE_POINTS = 100_000;
/** rateVersion's length in a retry body (UTF-16 code units, as checked). */
export const MAX_RATE_VERSION_CHARS = 64;
/** `en`, `pt-BR`, `zh-Hans`: a language subtag with an optional region or script. */
export const LANGUAGE = /^[a-z]{2,3}(-[A-Za-z0-9]{2,4})?$/;

export type TargetState = 'QUEUED' | 'PROCESSING' | 'COMPLETED' | 'FAILED_RELEASED';

export function codePoints(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

export interface ProjectRequest {
  title: string;
  sourceLanguage: string;
  targetLanguages: string[];
  source: { text: string } | null;
}

function invalid(detail: string): never {
  throw new ScribedError('VALIDATION_FAILED', detail);
}

export function validateProjectRequest(body: unknown): ProjectRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) invalid('body must be a JSON object');
  const b = body as Record<string, unknown>;
  for (const k of Object.keys(b)) if (!['title', 'sourceLanguage', 'targetLanguages', 'source'].includes(k)) invalid(`${k}: unknown field`);
  if (typeof b.title !== 'string' || codePoints(b.title.trim()) < 1 || codePoints(b.title) > MAX_TITLE_CODE_POINTS) {
    invalid(`title: 1 to ${MAX_TITLE_CODE_POINTS} characters required`);
  }
  if (typeof b.sourceLanguage !== 'string' || !LANGUAGE.test(b.sourceLanguage))
    invalid('sourceLanguage: a language code such as en or pt-BR');
  const targets = b.targetLanguages;
  if (!Array.isArray(targets) || targets.length < 1 || targets.length > MAX_TARGETS)
    invalid(`targetLanguages: 1 to ${MAX_TARGETS} language codes`);
  for (const t of targets)
    if (typeof t !== 'string' || !LANGUAGE.test(t)) invalid('targetLanguages: each entry is a language code such as en or pt-BR');
  if (new Set(targets).size !== targets.length) invalid('targetLanguages: entries must be distinct');
  if (targets.includes(b.sourceLanguage)) invalid('targetLanguages: must not include sourceLanguage');
  let source: ProjectRequest['source'] = null;
  if (b.source !== undefined && b.source !== null) {
    const s = b.source as Record<string, unknown>;
    if (typeof s !== 'object' || Array.isArray(s) || Object.keys(s).some((k) => k !== 'text')) invalid('source: an object {text}');
    if (typeof s.text !== 'string' || codePoints(s.text) < 1 || codePoints(s.text) > MAX_SOURCE_TEXT_CODE_POINTS) {
      invalid(`source.text: 1 to ${MAX_SOURCE_TEXT_CODE_POINTS} characters`);
    }
    source = { text: s.text };
  }
  return { title: b.title, sourceLanguage: b.sourceLanguage, targetLanguages: targets as string[], source };
}

/** Characters one processing cycle of a target costs under the current rate table. */
export function cycleCharacters(sourceUnits: bigint, language: string): bigint {
  const pct = BigInt(RATE_PERCENT[language.split('-')[0]!] ?? 100);
  const cost = (sourceUnits * pct + 99n) / 100n;
  return cost > MIN_CHARACTERS_PER_CYCLE ? cost : MIN_CHARACTERS_PER_CYCLE;
}

export interface RetryPlan {
  nextReservationCycle: number;
  characters: bigint;
  rateVersion: string;
  expiresAt: string;
}

export interface RetryRequest {
  nextReservationCycle: number;
  characters: bigint;
  rateVersion: string;
}

/** Shape check of the retry body; values are compared with the plan later (47118). */
export function validateRetryRequest(body: unknown): RetryRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) invalid('body must be a JSON object');
  const b = body as Record<string, unknown>;
  if (!Number.isSafeInteger(b.nextReservationCycle) || (b.nextReservationCycle as number) < 1)
    invalid('nextReservationCycle: a positive integer');
  if (!Number.isSafeInteger(b.characters) || (b.characters as number) < 0) invalid('characters: a non-negative integer');
  if (typeof b.rateVersion !== 'string' || b.rateVersion.length < 1 || b.rateVersion.length > MAX_RATE_VERSION_CHARS)
    invalid('rateVersion: a string');
  return { nextReservationCycle: b.nextReservationCycle as number, characters: BigInt(b.characters as number), rateVersion: b.rateVersion };
}

/** What an Idempotency-Key binds: the target addressed and the confirmed plan values. */
export function retryRequestHash(projectId: string, targetId: string, r: RetryRequest): string {
  const canonical = JSON.stringify([projectId, targetId, r.nextReservationCycle, r.characters.toString(), r.rateVersion]);
  return createHash('sha256').update(canonical).digest('hex');
}

export interface PlanState {
  state: TargetState;
  plan: RetryPlan | null;
}

/** Why a retry request does not confirm the target's current plan, or null if it does. */
export function retryRefusal(target: PlanState, req: RetryRequest, now: Date): string | null {
  if (target.state !== 'FAILED_RELEASED') return `target is ${target.state}, not FAILED_RELEASED`;
  const plan = target.plan;
  if (!plan) return 'no retry plan was issued for this failure; GET retry-plan first';
  if (Date.parse(plan.expiresAt) <= now.getTime()) return 'the retry plan expired; GET a new retry plan';
  if (plan.rateVersion !== RATE_VERSION) return 'the rate table changed; GET a new retry plan';
  if (
    req.nextReservationCycle !== plan.nextReservationCycle ||
    req.characters !== plan.characters ||
    req.rateVersion !== plan.rateVersion
  ) {
    return 'the values do not match the current retry plan; GET a new retry plan and send its values unchanged';
  }
  return null;
}
