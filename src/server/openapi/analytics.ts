// Conversation analytics and post-call categories (src/server/routes/analytics.ts and
// categories.ts, docs/analytics.md) in the API document, from the limits the cores validate
// with; spread into ENDPOINTS (endpoints.ts).
import { SPEAKER_PATTERN } from '../../core/calls.js';
import { MAX_CATEGORY_CONDITIONS, MAX_INTERRUPTIONS, MAX_WINDOW_SECONDS } from '../../core/analytics/categories.js';
import { ID_BODY_CHARS } from '../../core/ids.js';
import { MAX_RULE_NAME_CHARS, MAX_RULE_PATTERN_CHARS, MAX_RULE_PHRASE_CHARS, MAX_RULE_PHRASES } from '../../core/rules.js';
import { SEARCH_TIME_PATTERN } from '../../core/search-query.js';
import { DETECTABLE_CATEGORIES } from '../../core/text-options.js';
import { API } from '../context.js';
import { FIGURE_NAMES, MAX_FIGURE_FILTER } from '../../core/analytics/search-filters.js';
import type { Endpoint, Parameter } from './endpoint.js';
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

const ANALYTICS_VIEW: JsonSchema = object(
  {
    subjectId: { type: 'string', description: 'the call id, or the lone transcription id' },
    callId: nullable({ type: 'string' }),
    transcriptionId: nullable({ type: 'string' }),
    agentId: nullable({ type: 'string' }),
    completedAt: TIMESTAMP,
    figures: {
      type: 'object',
      description: 'talk, non-talk, overtalk, interruptions, turns and per-leg figures with loudness (docs/analytics.md)',
    },
    categories: {
      type: 'array',
      items: object({ categoryId: CATEGORY_ID, name: { type: 'string' }, hits: { type: 'array', items: { type: 'object' } } }, [
        'categoryId',
        'name',
        'hits',
      ]),
    },
  },
  ['subjectId', 'callId', 'transcriptionId', 'agentId', 'completedAt', 'figures', 'categories'],
);

const json = (schema: JsonSchema) => ({ contentType: 'application/json' as const, schema: () => schema, required: true });
const TIME_QUERY: JsonSchema = { type: 'string', pattern: SEARCH_TIME_PATTERN };

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
    errors: ['VALIDATION_FAILED', 'RULE_PATTERN_INVALID', 'CATEGORY_LIMIT'],
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
    errors: ['VALIDATION_FAILED', 'RULE_PATTERN_INVALID', 'NOT_FOUND'],
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
  {
    method: 'get',
    path: `${API}/stt/calls/{callId}/analytics`,
    operationId: 'getCallAnalytics',
    tag: 'Analytics',
    auth: 'accessKey',
    summary: "A finished call's conversation figures and matched categories",
    description: 'Computed when the last leg ends; before that, 404 saying so.',
    response: { kind: 'envelope', data: ANALYTICS_VIEW, description: 'the analytics' },
    errors: ['NOT_FOUND'],
  },
  {
    method: 'get',
    path: `${API}/stt/transcriptions/{transcriptionId}/analytics`,
    operationId: 'getTranscriptionAnalytics',
    tag: 'Analytics',
    auth: 'accessKey',
    summary: "A completed transcription's conversation figures (a leg of a call: its call's)",
    response: { kind: 'envelope', data: ANALYTICS_VIEW, description: 'the analytics' },
    errors: ['NOT_FOUND'],
  },
  {
    method: 'get',
    path: `${API}/stt/agents/{agentId}/analytics`,
    operationId: 'getAgentAnalytics',
    tag: 'Analytics',
    auth: 'accessKey',
    summary: "An agent's calls over a range: count, average talk share, interruptions, pace, category hit rates",
    description:
      "The calls created with this agentId and finished in [from, to); the agent's leg is the one whose speaker is agent. At most 10,000 calls.",
    query: {
      from: { schema: TIME_QUERY, description: 'finished at or after this time; default: a week before to' },
      to: { schema: TIME_QUERY, description: 'finished before this time; default: now' },
    },
    response: {
      kind: 'envelope',
      description: "the agent's figures",
      data: object(
        {
          agentId: { type: 'string' },
          from: TIMESTAMP,
          to: TIMESTAMP,
          calls: { type: 'integer', minimum: 0 },
          callsWithAgentLeg: { type: 'integer', minimum: 0 },
          averageDurationMs: nullable({ type: 'number' }),
          averageTalkShare: nullable({ type: 'number' }),
          interruptionsMade: { type: 'integer', minimum: 0 },
          interruptionsPerCall: nullable({ type: 'number' }),
          interruptionsReceived: { type: 'integer', minimum: 0 },
          averageWordsPerMinute: nullable({ type: 'number' }),
          categories: {
            type: 'array',
            items: object({ categoryId: CATEGORY_ID, name: { type: 'string' }, calls: { type: 'integer' }, rate: { type: 'number' } }, [
              'categoryId',
              'name',
              'calls',
              'rate',
            ]),
          },
          items: {
            type: 'array',
            description: 'the calls, newest first; the agent leg figures are null where a call has no agent leg',
            items: object(
              {
                callId: { type: 'string' },
                completedAt: TIMESTAMP,
                durationMs: { type: 'integer', minimum: 0 },
                talkShare: nullable({ type: 'number' }),
                wordsPerMinute: nullable({ type: 'number' }),
                interruptionsMade: nullable({ type: 'integer' }),
                categories: { type: 'array', items: { type: 'string' } },
              },
              ['callId', 'completedAt', 'durationMs', 'talkShare', 'wordsPerMinute', 'interruptionsMade', 'categories'],
            ),
          },
        },
        [
          'agentId',
          'from',
          'to',
          'calls',
          'callsWithAgentLeg',
          'averageDurationMs',
          'averageTalkShare',
          'interruptionsMade',
          'interruptionsPerCall',
          'interruptionsReceived',
          'averageWordsPerMinute',
          'categories',
          'items',
        ],
      ),
    },
    errors: ['VALIDATION_FAILED'],
  },
  {
    method: 'get',
    path: `${API}/stt/analytics/export`,
    operationId: 'exportAnalytics',
    tag: 'Analytics',
    auth: 'accessKey',
    summary: 'The analytics of calls and lone transcriptions finished in a range, as CSV',
    description: 'One row a call, oldest first; at most 10,000 rows (past that, 422 naming from: narrow the range).',
    query: {
      from: { schema: TIME_QUERY, description: 'finished at or after this time; default: a week before to' },
      to: { schema: TIME_QUERY, description: 'finished before this time; default: now' },
    },
    response: { kind: 'raw', contentTypes: ['text/csv'], description: 'the CSV, as an attachment' },
    errors: ['VALIDATION_FAILED'],
  },
];

/** The search's filters by analytics (docs/search.md): a category matched, and each figure over
 * or under a value. */
export const ANALYTICS_SEARCH_FILTERS: Record<string, Parameter> = {
  category: { schema: CATEGORY_ID, description: 'only calls (and lone transcriptions) that matched this post-call category' },
  ...Object.fromEntries(
    FIGURE_NAMES.flatMap((figure) => {
      const unit = figure === 'interruptions' ? 'interruptions' : 'seconds';
      const schema: JsonSchema = { type: 'number', minimum: 0, maximum: MAX_FIGURE_FILTER };
      return [
        [`${figure}Over`, { schema, description: `only calls whose ${figure} figure is over this many ${unit} (docs/analytics.md)` }],
        [`${figure}Under`, { schema, description: `only calls whose ${figure} figure is under this many ${unit}` }],
      ];
    }),
  ),
};
