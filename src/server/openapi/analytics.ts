// Post-call categories (src/server/routes/categories.ts, docs/analytics.md) in the API
// document, from the limits the cores validate with; spread into ENDPOINTS (endpoints.ts).
import { SPEAKER_PATTERN } from '../../core/calls.js';
import { MAX_CATEGORY_CONDITIONS, MAX_INTERRUPTIONS, MAX_WINDOW_SECONDS } from '../../core/analytics/categories.js';
import { ID_BODY_CHARS } from '../../core/ids.js';
import { MAX_RULE_NAME_CHARS, MAX_RULE_PATTERN_CHARS, MAX_RULE_PHRASE_CHARS, MAX_RULE_PHRASES } from '../../core/rules.js';
import { DETECTABLE_CATEGORIES } from '../../core/text-options.js';
import { API } from '../context.js';
import type { Endpoint } from './endpoint.js';
import { nullable, object, text, type JsonSchema } from './json-schema.js';

const BASE = `${API}/stt/categories`;
const TIMESTAMP: JsonSchema = { type: 'string', description: 'ISO 8601 UTC time' };
const CATEGORY_ID: JsonSchema = { type: 'string', pattern: `^cat_[0-9a-hjkmnp-tv-z]{${ID_BODY_CHARS}}$`, description: 'a category id' };
const SPEAKER: JsonSchema = { type: 'string', pattern: SPEAKER_PATTERN.source, description: 'only legs with this speaker label' };
const SHARE: JsonSchema = { type: 'number', exclusiveMinimum: 0, maximum: 1 };
const SECONDS: JsonSchema = { type: 'number', exclusiveMinimum: 0, maximum: MAX_WINDOW_SECONDS };

const WINDOW: JsonSchema = {
  description: 'where in the call the condition looks (clipped to the call); absent or null: the whole call',
  anyOf: [
    object({ first: SECONDS }, ['first'], { closed: true, description: 'the first N seconds' }),
    object({ last: SECONDS }, ['last'], { closed: true, description: 'the last N seconds' }),
    object({ firstShare: SHARE }, ['firstShare'], { closed: true, description: 'the first share of the call' }),
    object({ lastShare: SHARE }, ['lastShare'], { closed: true, description: 'the last share of the call' }),
    { type: 'null' },
  ],
};

const COMMON: Record<string, JsonSchema> = {
  speaker: nullable(SPEAKER),
  window: WINDOW,
  negate: { type: 'boolean', default: false, description: 'the condition holds when its test finds nothing in its window' },
};

const TEST_ALTERNATIVES: JsonSchema[] = [
  object(
    {
      phrases: {
        type: 'array',
        minItems: 1,
        maxItems: MAX_RULE_PHRASES,
        items: { ...text(1, MAX_RULE_PHRASE_CHARS), pattern: '[\\p{L}\\p{N}]' },
        description: 'whole words in this order, case and punctuation ignored',
      },
      match: { enum: ['any', 'all'], default: 'any', description: 'any of the phrases, or all of them' },
      ...COMMON,
    },
    ['phrases'],
    { closed: true },
  ),
  object(
    {
      pattern: {
        ...text(1, MAX_RULE_PATTERN_CHARS),
        description: 'RE2 syntax over each final of the scoped legs; one RE2 refuses is 422 RULE_PATTERN_INVALID',
      },
      caseSensitive: { type: 'boolean', default: false },
      ...COMMON,
    },
    ['pattern'],
    { closed: true },
  ),
  object({ entity: { enum: [...DETECTABLE_CATEGORIES] }, ...COMMON }, ['entity'], { closed: true }),
  object(
    {
      silenceSeconds: { type: 'number', minimum: 1, maximum: MAX_WINDOW_SECONDS, description: 'nobody talks for longer than this' },
      window: WINDOW,
      negate: COMMON.negate!,
    },
    ['silenceSeconds'],
    { closed: true },
  ),
  object(
    {
      interruptions: {
        type: 'integer',
        minimum: 1,
        maximum: MAX_INTERRUPTIONS,
        description: 'at least this many interruptions by the speaker (any leg when null)',
      },
      ...COMMON,
    },
    ['interruptions'],
    { closed: true },
  ),
  object(
    {
      talkShare: {
        ...object({ min: { type: 'number', minimum: 0, maximum: 1 }, max: { type: 'number', minimum: 0, maximum: 1 } }, [], {
          closed: true,
        }),
        minProperties: 1,
        description: "the speaker's share of the talk time in the window is at least min and at most max (min not above max)",
      },
      speaker: SPEAKER,
      window: WINDOW,
      negate: COMMON.negate!,
    },
    ['talkShare', 'speaker'],
    { closed: true },
  ),
];

const CONDITION: JsonSchema = {
  description: 'one test (phrases, pattern, entity, silenceSeconds, interruptions or talkShare) with its scope',
  anyOf: TEST_ALTERNATIVES,
};
const CONDITIONS: JsonSchema = {
  type: 'array',
  minItems: 1,
  maxItems: MAX_CATEGORY_CONDITIONS,
  items: CONDITION,
  description: 'every one must hold',
};

const FIELDS: Record<string, JsonSchema> = {
  name: text(1, MAX_RULE_NAME_CHARS, { notBlank: true, description: 'what the category is called' }),
  conditions: CONDITIONS,
  enabled: { type: 'boolean', default: true },
};

const CATEGORY_VIEW: JsonSchema = object(
  {
    id: CATEGORY_ID,
    name: { type: 'string' },
    conditions: { type: 'array', items: { type: 'object' } },
    enabled: { type: 'boolean' },
    createdAt: TIMESTAMP,
    updatedAt: TIMESTAMP,
  },
  ['id', 'name', 'conditions', 'enabled', 'createdAt', 'updatedAt'],
);

const json = (schema: JsonSchema) => ({ contentType: 'application/json' as const, schema: () => schema, required: true });

export const ANALYTICS_ENDPOINTS: readonly Endpoint[] = [
  {
    method: 'post',
    path: BASE,
    operationId: 'createCategory',
    tag: 'Analytics',
    auth: 'accessKey',
    summary: 'Create a post-call category: conditions read when each call ends',
    description: 'At most 50 categories an account, 10 conditions a category. docs/analytics.md.',
    body: json({ ...object(FIELDS, ['name', 'conditions'], { closed: true }) }),
    response: { kind: 'envelope', data: CATEGORY_VIEW, description: 'the category, created', status: 201 },
    errors: ['VALIDATION_FAILED', 'RULE_PATTERN_INVALID', 'PHRASE_NOT_SPOTTABLE', 'CATEGORY_LIMIT'],
  },
  {
    method: 'get',
    path: BASE,
    operationId: 'listCategories',
    tag: 'Analytics',
    auth: 'accessKey',
    summary: "The account's post-call categories, oldest first",
    response: {
      kind: 'envelope',
      data: object({ categories: { type: 'array', items: CATEGORY_VIEW } }, ['categories']),
      description: 'every category',
    },
    errors: [],
  },
  {
    method: 'get',
    path: `${BASE}/{id}`,
    operationId: 'getCategory',
    tag: 'Analytics',
    auth: 'accessKey',
    summary: 'Read a post-call category',
    response: { kind: 'envelope', data: CATEGORY_VIEW, description: 'the category' },
    errors: ['NOT_FOUND'],
  },
  {
    method: 'patch',
    path: `${BASE}/{id}`,
    operationId: 'updateCategory',
    tag: 'Analytics',
    auth: 'accessKey',
    summary: 'Change a post-call category (conditions given replace its conditions); calls that end afterwards read the change',
    body: json({ ...object(FIELDS, [], { closed: true }), minProperties: 1 }),
    response: { kind: 'envelope', data: CATEGORY_VIEW, description: 'the category, changed' },
    errors: ['VALIDATION_FAILED', 'RULE_PATTERN_INVALID', 'PHRASE_NOT_SPOTTABLE', 'NOT_FOUND'],
  },
  {
    method: 'delete',
    path: `${BASE}/{id}`,
    operationId: 'deleteCategory',
    tag: 'Analytics',
    auth: 'accessKey',
    summary: 'Delete a post-call category',
    response: { kind: 'envelope', data: object({ id: CATEGORY_ID, deleted: { const: true } }, ['id', 'deleted']), description: 'deleted' },
    errors: ['NOT_FOUND'],
  },
];
