// Live rules (src/server/routes/rules.ts, docs/rules.md) in the API document, from the limits
// src/core/rules.ts validates with; spread into ENDPOINTS (endpoints.ts).
import { SPEAKER_PATTERN } from '../../core/calls.js';
import { ID_BODY_CHARS } from '../../core/ids.js';
import {
  MAX_RULE_NAME_CHARS,
  MAX_RULE_PATTERN_CHARS,
  MAX_RULE_PHRASE_CHARS,
  MAX_RULE_PHRASES,
  MAX_SILENCE_SECONDS,
  MAX_TALK_OVER_SECONDS,
  MIN_SILENCE_SECONDS,
  MIN_TALK_OVER_SECONDS,
  RULE_CONDITION_KINDS,
} from '../../core/rules.js';
import { DETECTABLE_CATEGORIES } from '../../core/text-options.js';
import { API } from '../context.js';
import type { Endpoint } from './endpoint.js';
import { nullable, object, text, type JsonSchema } from './json-schema.js';

const BASE = `${API}/stt/rules`;
const TIMESTAMP: JsonSchema = { type: 'string', description: 'ISO 8601 UTC time' };
const RULE_ID: JsonSchema = { type: 'string', pattern: `^rul_[0-9a-hjkmnp-tv-z]{${ID_BODY_CHARS}}$`, description: 'a rule id' };
const CONDITIONS = ['phrases', 'pattern', 'entity', 'silenceSeconds', 'talkOverSeconds'];

const FIELDS: Record<string, JsonSchema> = {
  name: text(1, MAX_RULE_NAME_CHARS, { notBlank: true, description: 'what the alert is called' }),
  phrases: {
    type: 'array',
    minItems: 1,
    maxItems: MAX_RULE_PHRASES,
    items: { ...text(1, MAX_RULE_PHRASE_CHARS), pattern: '[\\p{L}\\p{N}]' },
    description: 'alert when any of these is said: whole words in this order, case and punctuation ignored',
  },
  pattern: { ...text(1, MAX_RULE_PATTERN_CHARS), description: 'alert when this regular expression (RE2 syntax: no backreferences or lookaround) matches the text; one RE2 refuses is 422 RULE_PATTERN_INVALID' },
  caseSensitive: { type: 'boolean', default: false, description: 'with pattern only' },
  entity: { enum: [...DETECTABLE_CATEGORIES], description: 'alert when an entity of this type is said (src/text/entities.ts, docs/options.md entityCategories)' },
  silenceSeconds: { type: 'number', minimum: MIN_SILENCE_SECONDS, maximum: MAX_SILENCE_SECONDS, description: 'alert when speech follows a silence longer than this' },
  talkOverSeconds: { type: 'number', minimum: MIN_TALK_OVER_SECONDS, maximum: MAX_TALK_OVER_SECONDS, description: 'alert when this leg and another leg of its call speak at once for longer than this' },
  speaker: nullable({ type: 'string', pattern: SPEAKER_PATTERN.source, description: 'only legs with this speaker label; null (the default): any leg' }),
  partials: { type: 'boolean', default: false, description: 'read partials too (not with talkOverSeconds); finals are always read' },
  enabled: { type: 'boolean', default: true },
};

/** At most one condition field; a pattern's caseSensitive only beside it; partials not with talk-over. */
const pairs = CONDITIONS.flatMap((a, i) => CONDITIONS.slice(i + 1).map((b) => ({ required: [a, b] })));
const CROSS_FIELD: JsonSchema = {
  not: { anyOf: [...pairs, { required: ['talkOverSeconds', 'partials'], properties: { partials: { const: true } } }] },
  dependentRequired: { caseSensitive: ['pattern'] },
};

const CREATE_BODY: JsonSchema = { ...object(FIELDS, ['name'], { closed: true }), ...CROSS_FIELD, anyOf: CONDITIONS.map((c) => ({ required: [c] })) };
const PATCH_BODY: JsonSchema = { ...object(FIELDS, [], { closed: true }), ...CROSS_FIELD, minProperties: 1 };

const RULE_VIEW: JsonSchema = object(
  {
    id: RULE_ID,
    name: { type: 'string' },
    condition: { enum: [...RULE_CONDITION_KINDS], description: 'which condition the rule has; its field is beside this' },
    phrases: FIELDS.phrases!,
    pattern: { type: 'string' },
    caseSensitive: { type: 'boolean' },
    entity: FIELDS.entity!,
    silenceSeconds: { type: 'number' },
    talkOverSeconds: { type: 'number' },
    speaker: nullable({ type: 'string' }),
    partials: { type: 'boolean' },
    enabled: { type: 'boolean' },
    createdAt: TIMESTAMP,
    updatedAt: TIMESTAMP,
  },
  ['id', 'name', 'condition', 'speaker', 'partials', 'enabled', 'createdAt', 'updatedAt'],
);

const json = (schema: JsonSchema) => ({ contentType: 'application/json' as const, schema: () => schema, required: true });

export const RULE_ENDPOINTS: readonly Endpoint[] = [
  {
    method: 'post', path: BASE, operationId: 'createRule', tag: 'Live rules', auth: 'accessKey',
    summary: 'Create a live rule: an alert on the session sockets and an alert.triggered webhook when it matches',
    description: 'One condition: phrases, pattern, entity, silenceSeconds or talkOverSeconds. At most 50 rules an account. docs/rules.md.',
    body: json(CREATE_BODY),
    response: { kind: 'envelope', data: RULE_VIEW, description: 'the rule, created', status: 201 },
    errors: ['VALIDATION_FAILED', 'RULE_PATTERN_INVALID', 'RULE_LIMIT'],
  },
  {
    method: 'get', path: BASE, operationId: 'listRules', tag: 'Live rules', auth: 'accessKey',
    summary: "The account's live rules, oldest first",
    response: { kind: 'envelope', data: object({ rules: { type: 'array', items: RULE_VIEW } }, ['rules']), description: 'every rule' },
    errors: [],
  },
  {
    method: 'get', path: `${BASE}/{id}`, operationId: 'getRule', tag: 'Live rules', auth: 'accessKey',
    summary: 'Read a live rule',
    response: { kind: 'envelope', data: RULE_VIEW, description: 'the rule' },
    errors: ['NOT_FOUND'],
  },
  {
    method: 'patch', path: `${BASE}/{id}`, operationId: 'updateRule', tag: 'Live rules', auth: 'accessKey',
    summary: 'Change a live rule; a condition field given replaces its condition',
    body: json(PATCH_BODY),
    response: { kind: 'envelope', data: RULE_VIEW, description: 'the rule, changed' },
    errors: ['VALIDATION_FAILED', 'RULE_PATTERN_INVALID', 'NOT_FOUND'],
  },
  {
    method: 'delete', path: `${BASE}/{id}`, operationId: 'deleteRule', tag: 'Live rules', auth: 'accessKey',
    summary: 'Delete a live rule',
    response: { kind: 'envelope', data: object({ id: RULE_ID, deleted: { const: true } }, ['id', 'deleted']), description: 'deleted' },
    errors: ['NOT_FOUND'],
  },
];
