// Post-call categories (routes/categories.ts, docs/analytics.md, "Categories"): the request and
// response shapes, declared once, from the limits the core validates with. The body is stated
// for the document only (servedWithout): its checks and their messages are the core's
// (validateCreateCategory, validatePatchCategory), which name the field at any depth
// (`conditions[2].window.first`) as clients have always been answered.
import { Type, type TSchema } from 'typebox';
import { SPEAKER_PATTERN } from '../../core/calls.js';
import { MAX_CATEGORY_CONDITIONS, MAX_INTERRUPTIONS, MAX_WINDOW_SECONDS } from '../../core/analytics/categories.js';
import {
  DEFAULT_SPOT_THRESHOLD,
  MAX_RULE_NAME_CHARS,
  MAX_RULE_PATTERN_CHARS,
  MAX_RULE_PHRASE_CHARS,
  MAX_RULE_PHRASES,
  MAX_SPOT_THRESHOLD,
  MIN_SPOT_THRESHOLD,
} from '../../core/rules.js';
import { DETECTABLE_CATEGORIES } from '../../core/text-options.js';
import { API } from '../context.js';
import { documented, envelope, operation, PATH_PARAM, type RouteTable } from '../openapi/route-schema.js';
import { ANY_OBJECT, idOf, nullable, TIMESTAMP } from './shared.js';

const BASE = `${API}/stt/categories`;
const TAG = 'Analytics';
const CATEGORY_ID = idOf('cat', 'a category id');
const SPEAKER = Type.String({ pattern: SPEAKER_PATTERN.source, description: 'only legs with this speaker label' });
const SHARE = Type.Number({ exclusiveMinimum: 0, maximum: 1 });
const SECONDS = Type.Number({ exclusiveMinimum: 0, maximum: MAX_WINDOW_SECONDS });
const closed = <T extends Record<string, TSchema>>(fields: T, description?: string, extra: Record<string, unknown> = {}) =>
  Type.Object(fields, { additionalProperties: false, ...(description ? { description } : {}), ...extra });

const WINDOW = Type.Union(
  [
    closed({ first: SECONDS }, 'the first N seconds'),
    closed({ last: SECONDS }, 'the last N seconds'),
    closed({ firstShare: SHARE }, 'the first share of the call'),
    closed({ lastShare: SHARE }, 'the last share of the call'),
    Type.Null(),
  ],
  { description: 'where in the call the condition looks (clipped to the call); absent or null: the whole call' },
);
const NEGATE = Type.Boolean({ default: false, description: 'the condition holds when its test finds nothing in its window' });
const COMMON = { speaker: Type.Optional(nullable(SPEAKER)), window: Type.Optional(WINDOW), negate: Type.Optional(NEGATE) };

const TESTS = [
  closed(
    {
      phrases: Type.Array(Type.String({ minLength: 1, maxLength: MAX_RULE_PHRASE_CHARS, pattern: '[\\p{L}\\p{N}]' }), {
        minItems: 1,
        maxItems: MAX_RULE_PHRASES,
        description: 'whole words in this order, case and punctuation ignored',
      }),
      match: Type.Optional(Type.Enum(['any', 'all'], { default: 'any', description: 'any of the phrases, or all of them' })),
      spot: Type.Optional(
        Type.Boolean({
          default: false,
          description:
            'spot the phrases in the audio too (docs/analytics.md, "Phrase spotting"): a hit the keyphrase search found carries spotted: true; every word needs a pronunciation in the engine\'s dictionary (422 PHRASE_NOT_SPOTTABLE)',
        }),
      ),
      spotThreshold: Type.Optional(
        Type.Number({
          minimum: MIN_SPOT_THRESHOLD,
          maximum: MAX_SPOT_THRESHOLD,
          description: `with spot: true only: each phrase's detection threshold (smaller detects more); default ${DEFAULT_SPOT_THRESHOLD}`,
        }),
      ),
      ...COMMON,
    },
    undefined,
    // Checked by the core: a threshold only beside spot: true.
    documented({
      dependentRequired: { spotThreshold: ['spot'] },
      not: { required: ['spotThreshold', 'spot'], properties: { spot: { const: false } } },
    }),
  ),
  closed({
    pattern: Type.String({
      minLength: 1,
      maxLength: MAX_RULE_PATTERN_CHARS,
      description: 'RE2 syntax over each final of the scoped legs; one RE2 refuses is 422 RULE_PATTERN_INVALID',
    }),
    caseSensitive: Type.Optional(Type.Boolean({ default: false })),
    ...COMMON,
  }),
  closed({ entity: Type.Enum([...DETECTABLE_CATEGORIES]), ...COMMON }),
  closed({
    silenceSeconds: Type.Number({ minimum: 1, maximum: MAX_WINDOW_SECONDS, description: 'nobody talks for longer than this' }),
    window: Type.Optional(WINDOW),
    negate: Type.Optional(NEGATE),
  }),
  closed({
    interruptions: Type.Integer({
      minimum: 1,
      maximum: MAX_INTERRUPTIONS,
      description: 'at least this many interruptions by the speaker (any leg when null)',
    }),
    ...COMMON,
  }),
  closed({
    talkShare: Type.Object(
      { min: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })), max: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })) },
      {
        additionalProperties: false,
        minProperties: 1,
        description: "the speaker's share of the talk time in the window is at least min and at most max (min not above max)",
      },
    ),
    speaker: SPEAKER,
    window: Type.Optional(WINDOW),
    negate: Type.Optional(NEGATE),
  }),
];

const CONDITIONS = Type.Array(
  Type.Union(TESTS, { description: 'one test (phrases, pattern, entity, silenceSeconds, interruptions or talkShare) with its scope' }),
  { minItems: 1, maxItems: MAX_CATEGORY_CONDITIONS, description: 'every one must hold' },
);
const NAME = Type.String({ minLength: 1, maxLength: MAX_RULE_NAME_CHARS, pattern: '\\S', description: 'what the category is called' });
const ENABLED = Type.Boolean({ default: true });

export const CREATE_CATEGORY_BODY = Type.Object(
  { name: NAME, conditions: CONDITIONS, enabled: Type.Optional(ENABLED) },
  { additionalProperties: false },
);
export const PATCH_CATEGORY_BODY = Type.Object(
  { name: Type.Optional(NAME), conditions: Type.Optional(CONDITIONS), enabled: Type.Optional(ENABLED) },
  { additionalProperties: false, minProperties: 1 },
);

const CATEGORY_VIEW = Type.Object({
  id: CATEGORY_ID,
  name: Type.String(),
  conditions: Type.Array(ANY_OBJECT('a condition as given, with its defaults')),
  enabled: Type.Boolean(),
  createdAt: TIMESTAMP,
  updatedAt: TIMESTAMP,
});
const ID = Type.Object({ id: PATH_PARAM });

export const CATEGORY_ROUTES = {
  create: {
    method: 'POST',
    url: BASE,
    schema: {
      ...operation({
        operationId: 'createCategory',
        tag: TAG,
        auth: 'accessKey',
        summary: 'Create a post-call category: conditions read when each call ends',
        description: 'At most 50 categories an account, 10 conditions a category. docs/analytics.md.',
        errors: ['VALIDATION_FAILED', 'RULE_PATTERN_INVALID', 'PHRASE_NOT_SPOTTABLE', 'CATEGORY_LIMIT'],
      }),
      body: CREATE_CATEGORY_BODY,
      response: { 201: envelope(CATEGORY_VIEW, 'the category, created') },
    },
  },
  list: {
    method: 'GET',
    url: BASE,
    schema: {
      ...operation({
        operationId: 'listCategories',
        tag: TAG,
        auth: 'accessKey',
        summary: "The account's post-call categories, oldest first",
        errors: [],
      }),
      response: { 200: envelope(Type.Object({ categories: Type.Array(CATEGORY_VIEW) }), 'every category') },
    },
  },
  get: {
    method: 'GET',
    url: `${BASE}/:id`,
    schema: {
      ...operation({
        operationId: 'getCategory',
        tag: TAG,
        auth: 'accessKey',
        summary: 'Read a post-call category',
        errors: ['NOT_FOUND'],
      }),
      params: ID,
      response: { 200: envelope(CATEGORY_VIEW, 'the category') },
    },
  },
  update: {
    method: 'PATCH',
    url: `${BASE}/:id`,
    schema: {
      ...operation({
        operationId: 'updateCategory',
        tag: TAG,
        auth: 'accessKey',
        summary: 'Change a post-call category (conditions given replace its conditions); calls that end afterwards read the change',
        errors: ['VALIDATION_FAILED', 'RULE_PATTERN_INVALID', 'PHRASE_NOT_SPOTTABLE', 'NOT_FOUND'],
      }),
      params: ID,
      body: PATCH_CATEGORY_BODY,
      response: { 200: envelope(CATEGORY_VIEW, 'the category, changed') },
    },
  },
  delete: {
    method: 'DELETE',
    url: `${BASE}/:id`,
    schema: {
      ...operation({
        operationId: 'deleteCategory',
        tag: TAG,
        auth: 'accessKey',
        summary: 'Delete a post-call category',
        errors: ['NOT_FOUND'],
      }),
      params: ID,
      response: { 200: envelope(Type.Object({ id: CATEGORY_ID, deleted: Type.Literal(true) }), 'deleted') },
    },
  },
} as const satisfies RouteTable['routes'];

export const CATEGORY_TABLE: RouteTable = { routes: CATEGORY_ROUTES };
