// Validation of the create-session body (spec: "Create a real-time session") and the
// canonical request hash used for Idempotency-Key replays.
//
// Decisions the spec leaves open, made here:
// - Every failure is VALIDATION_FAILED with the message `<field path>: <reason>` and
//   details.field; checks run in a fixed order and the first failure wins. Mutual-exclusion
//   violations (the spec does not say how they are answered) are VALIDATION_FAILED too,
//   reported on the second field of the pair.
// - Unknown keys are refused, in `options` and at the top level, so a misspelt option is
//   never silently ignored.
// - `null` means "not given", for every field, so JSON clients that serialise absent values
//   as null are not refused.
// - Lengths are counted in Unicode code points, not UTF-16 units.
// - An empty title takes the default title.
// - includeAlignment defaults to true, except when suppressBackgroundSpeech is true and
//   includeAlignment is unset: then it is false (spec: "when background filtering is on and
//   this is unset, alignment is off"). Both true is refused.
// - readableText is this server's own option (the spec's list has no text formatting; peers
//   call it smart_format, format_text, output formatting): numerals and sentence case on
//   finals (src/text/readable-text.ts). On unless the request says false; sessions stored
//   before it existed have no readableText and keep the recognizer's text.
// - effectiveOptions names every option: the spec's defaults where it gives one, false for
//   unset booleans, [] for unset lists, null for unset numbers and strings (the server
//   then uses its own behaviour).
// - requestHash hashes the *effective* request (after defaulting), so `{}` and a body
//   spelling out the defaults are the same request under one Idempotency-Key.
import { createHash } from 'node:crypto';
import { ScribedError } from './errors.js';
import {
  DEFAULT_INPUT_ENCODING,
  INPUT_ENCODINGS,
  INPUT_ENCODING_NAMES,
  isInputEncodingName,
  type InputEncodingName,
} from './audio/encodings.js';

export const DEFAULT_TITLE = 'Untitled recording';
export const MAX_TITLE_CHARS = 200;
export const MAX_LANGUAGE_TAG_CHARS = 35;
export const MAX_ADDITIONAL_LANGUAGE_HINTS = 8;
export const MAX_VOCABULARY_HINTS = 50;
export const MAX_VOCABULARY_HINT_CHARS = 100;
export const MAX_REWRITE_INSTRUCTION_CHARS = 2000;

export const ENTITY_CATEGORIES = [
  'phone_number',
  'email',
  'credit_card',
  'money',
  'date',
  'spelled_digits',
  'person',
  'organization',
  'location',
] as const;
export type EntityCategory = (typeof ENTITY_CATEGORIES)[number];

export type SegmentCommitMode = 'manual' | 'vad';

/** The `redact` option's policies (docs/redaction.md; src/text/redaction/). */
export const REDACTION_POLICIES = ['pci', 'numbers', 'ssn', 'phone', 'email'] as const;
export type RedactionPolicy = (typeof REDACTION_POLICIES)[number];

export interface EffectiveOptions {
  inputEncoding: InputEncodingName;
  sampleRateHz: number;
  segmentCommitMode: SegmentCommitMode;
  additionalLanguageHints: string[];
  speechDetectionThreshold: number | null;
  commitSilenceMs: number | null;
  minimumSpeechMs: number | null;
  minimumSilenceMs: number | null;
  includeAlignment: boolean;
  includeDetectedLanguage: boolean;
  vocabularyHints: string[];
  removeDisfluencies: boolean;
  readableText: boolean;
  entityCategories: EntityCategory[];
  rewriteInstruction: string | null;
  suppressBackgroundSpeech: boolean;
  heartbeatIntervalMs: number | null;
  processingContentStorage: boolean;
  /** Policies whose spans become tokens in every output, live and batch (docs/redaction.md).
   * Named only when requested: effectiveOptions of requests without it (and their hashes)
   * are what they were before the option existed. */
  redact?: RedactionPolicy[];
  /** Keep the audio, redacted spans masked (docs/recordings.md). Named only when true, as
   * `redact` is. */
  recordAudio?: true;
}

export interface ValidSessionRequest {
  title: string;
  languageHint: string | null;
  effectiveOptions: EffectiveOptions;
}

export const TOP_LEVEL_KEYS = ['title', 'languageHint', 'options'] as const;

export const OPTION_KEYS = [
  'inputEncoding',
  'segmentCommitMode',
  'additionalLanguageHints',
  'speechDetectionThreshold',
  'commitSilenceMs',
  'minimumSpeechMs',
  'minimumSilenceMs',
  'includeAlignment',
  'includeDetectedLanguage',
  'vocabularyHints',
  'removeDisfluencies',
  'readableText',
  'entityCategories',
  'rewriteInstruction',
  'suppressBackgroundSpeech',
  'heartbeatIntervalMs',
  'processingContentStorage',
  'redact',
  'recordAudio',
] as const;

/** BCP-47-ish: a 2-3 letter language, then subtags of 1-8 letters or digits. */
export const LANGUAGE_TAG = /^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*$/;

/** The numeric options' ranges (the spec's Limits; the OpenAPI document reads them too). */
export const OPTION_RANGES = {
  speechDetectionThreshold: { min: 0, max: 1, integer: false },
  commitSilenceMs: { min: 0, max: 60000, integer: false },
  minimumSpeechMs: { min: 0, max: 60000, integer: true },
  minimumSilenceMs: { min: 0, max: 60000, integer: true },
  heartbeatIntervalMs: { min: 500, max: 10000, integer: false },
} as const;

function invalid(field: string, reason: string): never {
  throw new ScribedError('VALIDATION_FAILED', `${field}: ${reason}`, { details: { field } });
}

function codePoints(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function given(obj: Record<string, unknown>, key: string): boolean {
  return obj[key] !== undefined && obj[key] !== null;
}

function rejectUnknownKeys(obj: Record<string, unknown>, known: readonly string[], prefix: string): void {
  for (const key of Object.keys(obj)) {
    if (!known.includes(key)) invalid(`${prefix}${key}`, 'unknown field');
  }
}

function optString(obj: Record<string, unknown>, key: string, path: string): string | null {
  const v = obj[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string') invalid(path, 'must be a string');
  return v;
}

function optBoolean(obj: Record<string, unknown>, key: string, path: string): boolean | null {
  const v = obj[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'boolean') invalid(path, 'must be a boolean');
  return v;
}

function optNumber(
  obj: Record<string, unknown>,
  key: string,
  path: string,
  range: { min: number; max: number; integer: boolean },
): number | null {
  const v = obj[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isFinite(v)) invalid(path, 'must be a finite number');
  if (range.integer && !Number.isInteger(v)) invalid(path, 'must be an integer');
  if (v < range.min || v > range.max) invalid(path, `must be between ${range.min} and ${range.max}`);
  return v;
}

function optStringArray(obj: Record<string, unknown>, key: string, path: string, maxEntries: number): string[] {
  const v = obj[key];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) invalid(path, 'must be an array of strings');
  if (v.length > maxEntries) invalid(path, `must have at most ${maxEntries} entries`);
  v.forEach((item, i) => {
    if (typeof item !== 'string') invalid(`${path}[${i}]`, 'must be a string');
  });
  return [...(v as string[])];
}

function checkLanguageTag(tag: string, path: string): void {
  if (codePoints(tag) > MAX_LANGUAGE_TAG_CHARS) invalid(path, `must be at most ${MAX_LANGUAGE_TAG_CHARS} characters`);
  if (!LANGUAGE_TAG.test(tag)) invalid(path, 'must be a language tag such as "en" or "pt-BR"');
}

export function validateCreateSession(body: unknown): ValidSessionRequest {
  if (!isPlainObject(body)) invalid('body', 'must be a JSON object');
  rejectUnknownKeys(body, TOP_LEVEL_KEYS, '');

  const rawTitle = optString(body, 'title', 'title');
  if (rawTitle !== null && codePoints(rawTitle) > MAX_TITLE_CHARS) invalid('title', `must be at most ${MAX_TITLE_CHARS} characters`);
  const title = rawTitle === null || rawTitle === '' ? DEFAULT_TITLE : rawTitle;

  const languageHint = optString(body, 'languageHint', 'languageHint');
  if (languageHint !== null) checkLanguageTag(languageHint, 'languageHint');

  const rawOptions = body.options ?? {};
  if (!isPlainObject(rawOptions)) invalid('options', 'must be a JSON object');
  return { title, languageHint, effectiveOptions: resolveOptions(rawOptions) };
}

function resolveOptions(o: Record<string, unknown>): EffectiveOptions {
  rejectUnknownKeys(o, OPTION_KEYS, 'options.');

  const encoding = o.inputEncoding ?? DEFAULT_INPUT_ENCODING;
  if (!isInputEncodingName(encoding)) invalid('options.inputEncoding', `must be one of ${INPUT_ENCODING_NAMES.join(', ')}`);

  const mode = o.segmentCommitMode ?? 'manual';
  if (mode !== 'manual' && mode !== 'vad') invalid('options.segmentCommitMode', 'must be manual or vad');

  const additionalLanguageHints = optStringArray(
    o,
    'additionalLanguageHints',
    'options.additionalLanguageHints',
    MAX_ADDITIONAL_LANGUAGE_HINTS,
  );
  additionalLanguageHints.forEach((tag, i) => checkLanguageTag(tag, `options.additionalLanguageHints[${i}]`));

  const speechDetectionThreshold = optNumber(
    o,
    'speechDetectionThreshold',
    'options.speechDetectionThreshold',
    OPTION_RANGES.speechDetectionThreshold,
  );
  const commitSilenceMs = optNumber(o, 'commitSilenceMs', 'options.commitSilenceMs', OPTION_RANGES.commitSilenceMs);
  const minimumSpeechMs = optNumber(o, 'minimumSpeechMs', 'options.minimumSpeechMs', OPTION_RANGES.minimumSpeechMs);
  const minimumSilenceMs = optNumber(o, 'minimumSilenceMs', 'options.minimumSilenceMs', OPTION_RANGES.minimumSilenceMs);

  const includeAlignment = optBoolean(o, 'includeAlignment', 'options.includeAlignment');
  const includeDetectedLanguage = optBoolean(o, 'includeDetectedLanguage', 'options.includeDetectedLanguage');

  const vocabularyHints = optStringArray(o, 'vocabularyHints', 'options.vocabularyHints', MAX_VOCABULARY_HINTS);
  vocabularyHints.forEach((hint, i) => {
    const n = codePoints(hint);
    if (n < 1 || n > MAX_VOCABULARY_HINT_CHARS)
      invalid(`options.vocabularyHints[${i}]`, `must be 1 to ${MAX_VOCABULARY_HINT_CHARS} characters`);
  });

  const removeDisfluencies = optBoolean(o, 'removeDisfluencies', 'options.removeDisfluencies');
  const readableText = optBoolean(o, 'readableText', 'options.readableText');

  const entityCategories = optStringArray(o, 'entityCategories', 'options.entityCategories', ENTITY_CATEGORIES.length);
  entityCategories.forEach((c, i) => {
    if (!(ENTITY_CATEGORIES as readonly string[]).includes(c)) {
      invalid(`options.entityCategories[${i}]`, `must be one of ${ENTITY_CATEGORIES.join(', ')}`);
    }
    if (entityCategories.indexOf(c) !== i) invalid(`options.entityCategories[${i}]`, `duplicate category ${c}`);
  });

  const rewriteInstruction = optString(o, 'rewriteInstruction', 'options.rewriteInstruction');
  if (rewriteInstruction !== null) {
    const n = codePoints(rewriteInstruction);
    if (n < 1 || n > MAX_REWRITE_INSTRUCTION_CHARS)
      invalid('options.rewriteInstruction', `must be 1 to ${MAX_REWRITE_INSTRUCTION_CHARS} characters`);
  }

  const suppressBackgroundSpeech = optBoolean(o, 'suppressBackgroundSpeech', 'options.suppressBackgroundSpeech');
  const heartbeatIntervalMs = optNumber(o, 'heartbeatIntervalMs', 'options.heartbeatIntervalMs', OPTION_RANGES.heartbeatIntervalMs);
  const processingContentStorage = optBoolean(o, 'processingContentStorage', 'options.processingContentStorage');

  const redact = optStringArray(o, 'redact', 'options.redact', REDACTION_POLICIES.length);
  redact.forEach((p, i) => {
    if (!(REDACTION_POLICIES as readonly string[]).includes(p))
      invalid(`options.redact[${i}]`, `must be one of ${REDACTION_POLICIES.join(', ')}`);
    if (redact.indexOf(p) !== i) invalid(`options.redact[${i}]`, `duplicate policy ${p}`);
  });

  const recordAudio = optBoolean(o, 'recordAudio', 'options.recordAudio');

  // Mutual exclusions, after every field is individually valid.
  if (includeAlignment === true && suppressBackgroundSpeech === true) {
    invalid('options.suppressBackgroundSpeech', 'cannot be true together with includeAlignment; alignment needs every word timed');
  }
  if (given(o, 'entityCategories') && given(o, 'rewriteInstruction')) {
    invalid('options.rewriteInstruction', 'cannot be combined with entityCategories');
  }

  return {
    inputEncoding: encoding,
    sampleRateHz: INPUT_ENCODINGS[encoding].sampleRateHz,
    segmentCommitMode: mode,
    additionalLanguageHints,
    speechDetectionThreshold,
    commitSilenceMs,
    minimumSpeechMs,
    minimumSilenceMs,
    includeAlignment: includeAlignment ?? suppressBackgroundSpeech !== true,
    includeDetectedLanguage: includeDetectedLanguage ?? false,
    vocabularyHints,
    removeDisfluencies: removeDisfluencies ?? false,
    readableText: readableText ?? true,
    entityCategories: entityCategories as EntityCategory[],
    rewriteInstruction,
    suppressBackgroundSpeech: suppressBackgroundSpeech ?? false,
    heartbeatIntervalMs,
    processingContentStorage: processingContentStorage ?? false,
    ...(redact.length > 0 ? { redact: redact as RedactionPolicy[] } : {}),
    ...(recordAudio === true ? { recordAudio: true as const } : {}),
  };
}

/** Options with the account's default redaction policies added (docs/redaction.md, "Account
 * default"): a request adds policies to the default and cannot remove one, as a compliance
 * rule expects. The requested ones come first, in their order; unknown names are dropped. The
 * Idempotency-Key hash is of the request, not of this: a change of the default does not turn
 * a replay into a conflict. */
export function withRedactionDefault<T extends { redact?: RedactionPolicy[] }>(
  options: T,
  defaults: readonly string[] | null | undefined,
): T {
  const known = (defaults ?? []).filter((p): p is RedactionPolicy => (REDACTION_POLICIES as readonly string[]).includes(p));
  const merged = [...new Set([...(options.redact ?? []), ...known])];
  return merged.length === 0 ? options : { ...options, redact: merged };
}

/** JSON with object keys sorted at every level, so equal values serialise identically. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isPlainObject(value)) {
    const keys = Object.keys(value)
      .filter((k) => value[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * The Idempotency-Key comparison hash: sha256 (hex) of the canonical JSON of the
 * normalised effective request. Throws VALIDATION_FAILED for a body that does not validate.
 */
/** Effective options as a request hash reads them: readableText at its default is left out,
 * so a request hashed before the option existed hashes the same now (an Idempotency-Key replay
 * across the upgrade is not a conflict). Sessions and batch uploads both hash through this. */
export function hashedOptions<T extends { readableText?: unknown }>(options: T): Omit<T, 'readableText'> | T {
  const { readableText, ...rest } = options;
  return readableText === true ? rest : options;
}

export function requestHash(body: unknown): string {
  const v = validateCreateSession(body);
  const options = hashedOptions(v.effectiveOptions);
  const canonical = canonicalJson({ title: v.title, languageHint: v.languageHint, options });
  return createHash('sha256').update(canonical, 'utf8').digest('hex');
}
