// Interpretation projects (routes/interpretation.ts, docs/api.md): the request and response
// shapes, declared once. What JSON Schema cannot check with today's message is checked next to
// them (projectRequest, retryRequest): the target list must not repeat the source language, a
// source object holds `text` only, and a rate version counts UTF-16 units as the plan does.
import { Type, type Static, type TSchema } from 'typebox';
import { ScribedError } from '../../core/errors.js';
import {
  LANGUAGE,
  MAX_RATE_VERSION_CHARS,
  MAX_SOURCE_TEXT_CODE_POINTS,
  MAX_TARGETS,
  MAX_TITLE_CODE_POINTS,
  type ProjectRequest,
  type RetryRequest,
} from '../../core/interpretation.js';
import { API } from '../context.js';
import {
  documented,
  envelope,
  fieldNamed,
  idempotencyKeyHeader,
  invalid,
  operation,
  PATH_PARAM,
  type RouteTable,
} from '../openapi/route-schema.js';

const BASE = `${API}/interpretation/projects`;
const TAG = 'Interpretation';
const OBJECT = { ...invalid('body must be a JSON object'), ...fieldNamed(false) };
const TIMESTAMP = Type.String({ description: 'ISO 8601 UTC time' });
const DECIMAL = Type.String({ pattern: '^[0-9]+$', description: 'a 64-bit count as a decimal string' });
const id = (prefix: string) => Type.String({ pattern: `^${prefix}_` });
const nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
const LANGUAGE_MESSAGE = 'a language code such as en or pt-BR';

export const CREATE_PROJECT_BODY = Type.Object(
  {
    title: Type.String({
      minLength: 1,
      maxLength: MAX_TITLE_CODE_POINTS,
      pattern: '\\S',
      ...invalid(`1 to ${MAX_TITLE_CODE_POINTS} characters required`),
    }),
    sourceLanguage: Type.String({ pattern: LANGUAGE.source, ...invalid(LANGUAGE_MESSAGE) }),
    targetLanguages: Type.Array(
      Type.String({ pattern: LANGUAGE.source, ...invalid(`each entry is ${LANGUAGE_MESSAGE}`), ...fieldNamed('targetLanguages') }),
      {
        minItems: 1,
        maxItems: MAX_TARGETS,
        uniqueItems: true,
        description: 'must not include sourceLanguage',
        ...invalid({ uniqueItems: 'entries must be distinct', default: `1 to ${MAX_TARGETS} language codes` }),
      },
    ),
    source: Type.Optional(
      nullable(
        Type.Object(
          {
            text: Type.String({
              minLength: 1,
              maxLength: MAX_SOURCE_TEXT_CODE_POINTS,
              ...invalid(`1 to ${MAX_SOURCE_TEXT_CODE_POINTS} characters`),
            }),
          },
          { ...invalid('an object {text}'), ...documented({ additionalProperties: false }) },
        ),
      ),
    ),
  },
  { additionalProperties: false, ...OBJECT },
);

export const RETRY_BODY = Type.Object(
  {
    nextReservationCycle: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, ...invalid('a positive integer') }),
    characters: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, ...invalid('a non-negative integer') }),
    // The plan's rateVersion is printable ASCII (documented); its length is counted in UTF-16
    // units, as the plan's, by retryRequest.
    rateVersion: Type.String({
      minLength: 1,
      description: 'as the retry plan gave it',
      ...invalid('a string'),
      ...documented({ maxLength: MAX_RATE_VERSION_CHARS, pattern: '^[\\x20-\\x7e]*$' }),
    }),
  },
  { description: 'the values of the current retry plan, unchanged', ...OBJECT },
);

const TARGET_VIEW = Type.Object({
  targetId: id('it'),
  language: Type.String(),
  state: Type.String(),
  generationId: id('ia'),
  reservationCycle: Type.Integer(),
  reservedCharacters: DECIMAL,
});
const PROJECT_VIEW = Type.Object({
  projectId: id('ip'),
  title: Type.String(),
  sourceLanguage: Type.String(),
  targets: Type.Array(TARGET_VIEW),
  createdAt: TIMESTAMP,
});
const RETRY_PLAN_VIEW = Type.Object({
  targetId: id('it'),
  generationId: id('ia'),
  nextReservationCycle: Type.Integer(),
  characters: Type.Integer(),
  rateVersion: Type.String(),
  expiresAt: TIMESTAMP,
});
const RETRY_RESULT_VIEW = Type.Object({
  targetId: id('it'),
  language: Type.String(),
  generationId: id('ia'),
  state: Type.String(),
  reservationCycle: Type.Integer(),
  reservedCharacters: DECIMAL,
  message: Type.String(),
  requestId: id('req'),
});

const PROJECT = Type.Object({ projectId: PATH_PARAM });
const TARGET = Type.Object({ projectId: PATH_PARAM, targetId: PATH_PARAM });
const op = (info: Omit<Parameters<typeof operation>[0], 'tag' | 'auth'>) => operation({ ...info, tag: TAG, auth: 'accessKey' });

export const INTERPRETATION_ROUTES = {
  create: {
    method: 'POST',
    url: BASE,
    schema: {
      ...op({
        operationId: 'createInterpretationProject',
        summary: 'Create an interpretation project (reserves the first cycle of every target)',
        errors: ['VALIDATION_FAILED', 'INSUFFICIENT_CHARACTERS'],
      }),
      body: CREATE_PROJECT_BODY,
      response: { 200: envelope(PROJECT_VIEW, 'the project') },
    },
  },
  get: {
    method: 'GET',
    url: `${BASE}/:projectId`,
    schema: {
      ...op({ operationId: 'getInterpretationProject', summary: 'Read an interpretation project', errors: ['NOT_FOUND'] }),
      params: PROJECT,
      response: { 200: envelope(PROJECT_VIEW, 'the project') },
    },
  },
  retryPlan: {
    method: 'GET',
    url: `${BASE}/:projectId/targets/:targetId/retry-plan`,
    schema: {
      ...op({
        operationId: 'getRetryPlan',
        summary: 'Issue (or read again) the retry plan of a failed target',
        errors: ['INTERPRETATION_TARGET_NOT_FOUND', 'INTERPRETATION_NOT_RETRYABLE'],
      }),
      params: TARGET,
      response: { 200: envelope(RETRY_PLAN_VIEW, 'the plan; send its values unchanged to retry') },
    },
  },
  headRetryPlan: {
    method: 'HEAD',
    url: `${BASE}/:projectId/targets/:targetId/retry-plan`,
    schema: {
      ...op({ operationId: 'headRetryPlan', summary: 'Refused: reading a retry plan issues one', errors: ['METHOD_NOT_ALLOWED'] }),
      params: TARGET,
    },
  },
  retry: {
    method: 'POST',
    url: `${BASE}/:projectId/targets/:targetId/retry`,
    schema: {
      ...op({
        operationId: 'retryTarget',
        summary: 'Retry a FAILED_RELEASED target by confirming its plan',
        errors: [
          'IDEMPOTENCY_KEY_REQUIRED',
          'VALIDATION_FAILED',
          'INTERPRETATION_IDEMPOTENCY_MISMATCH',
          'INTERPRETATION_TARGET_NOT_FOUND',
          'INTERPRETATION_NOT_RETRYABLE',
          'INTERPRETATION_INSUFFICIENT_CHARACTERS',
        ],
      }),
      params: TARGET,
      headers: idempotencyKeyHeader(true),
      body: RETRY_BODY,
      response: { 200: envelope(RETRY_RESULT_VIEW, 'the retry, QUEUED (the same key and body replay it)') },
    },
  },
} as const satisfies RouteTable['routes'];

/** A retry's answer, as the store keeps it for a replay. */
export type RetryResultView = Static<typeof RETRY_RESULT_VIEW>;

export const INTERPRETATION_TABLE: RouteTable = { routes: INTERPRETATION_ROUTES };

const refused = (message: string) => new ScribedError('VALIDATION_FAILED', message);

/** A create body as the store takes it (its shape already checked by the schema). */
export function projectRequest(body: Static<typeof CREATE_PROJECT_BODY>): ProjectRequest {
  const source = body.source ?? null;
  if (body.targetLanguages.includes(body.sourceLanguage)) throw refused('targetLanguages: must not include sourceLanguage');
  if (source !== null && Object.keys(source).some((k) => k !== 'text')) throw refused('source: an object {text}');
  return {
    title: body.title,
    sourceLanguage: body.sourceLanguage,
    targetLanguages: body.targetLanguages,
    source: source && { text: source.text },
  };
}

/** A retry body as the store takes it; the values are compared with the plan later (47118). */
export function retryRequest(body: Static<typeof RETRY_BODY>): RetryRequest {
  if (body.rateVersion.length > MAX_RATE_VERSION_CHARS) throw refused('rateVersion: a string');
  return { nextReservationCycle: body.nextReservationCycle, characters: BigInt(body.characters), rateVersion: body.rateVersion };
}
