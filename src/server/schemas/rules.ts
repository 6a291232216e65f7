// Live rules (docs/rules.md, routes/rules.ts): the request and response shapes, declared once.
// Fastify validates bodies against them, the handlers are typed from them and the API document
// is generated from them. What JSON Schema cannot say is checked next to them (ruleFromBody,
// ruleChange): exactly one condition, caseSensitive only beside a pattern, partials not with
// talk-over, and whether RE2 runs the pattern.
import { Type, type Static } from 'typebox';
import { SPEAKER_PATTERN } from '../../core/calls.js';
import { ScribedError } from '../../core/errors.js';
import { ID_BODY_CHARS } from '../../core/ids.js';
import {
  checkPartials,
  DEFAULT_SPOT_THRESHOLD,
  MAX_RULE_NAME_CHARS,
  MAX_RULE_PATTERN_CHARS,
  MAX_RULE_PHRASE_CHARS,
  MAX_RULE_PHRASES,
  MAX_SILENCE_SECONDS,
  MAX_SPOT_THRESHOLD,
  MAX_TALK_OVER_SECONDS,
  MIN_SILENCE_SECONDS,
  MIN_SPOT_THRESHOLD,
  MIN_TALK_OVER_SECONDS,
  RULE_CONDITION_KINDS,
  ruleField,
  spottingOf,
  spotPhrase,
  type PatternCheck,
  type RuleCondition,
  type RuleInput,
  type RulePatch,
} from '../../core/rules.js';
import { DETECTABLE_CATEGORIES } from '../../core/text-options.js';
import { API } from '../context.js';
import { documented, envelope, invalid, operation, PATH_PARAM, type RouteTable } from '../openapi/route-schema.js';

const BASE = `${API}/stt/rules`;
const TAG = 'Live rules';
const CONDITIONS = ['phrases', 'pattern', 'entity', 'silenceSeconds', 'talkOverSeconds'] as const;
const TIMESTAMP = Type.String({ description: 'ISO 8601 UTC time' });
const RULE_ID = Type.String({ pattern: `^rul_[0-9a-hjkmnp-tv-z]{${ID_BODY_CHARS}}$`, description: 'a rule id' });
const seconds = (min: number, max: number, description: string) =>
  Type.Number({ minimum: min, maximum: max, description, ...invalid(`a number of seconds from ${min} to ${max}`) });

/** The fields of a rule body; the condition fields first, as they are checked first. */
const FIELDS = {
  phrases: Type.Array(
    Type.String({
      minLength: 1,
      maxLength: MAX_RULE_PHRASE_CHARS,
      pattern: '[\\p{L}\\p{N}]',
      ...invalid(`a phrase of at most ${MAX_RULE_PHRASE_CHARS} characters with at least one word`),
    }),
    {
      minItems: 1,
      maxItems: MAX_RULE_PHRASES,
      description: 'alert when any of these is said: whole words in this order, case and punctuation ignored',
      ...invalid(`a list of 1 to ${MAX_RULE_PHRASES} phrases`),
    },
  ),
  pattern: Type.String({
    minLength: 1,
    maxLength: MAX_RULE_PATTERN_CHARS,
    description:
      'alert when this regular expression (RE2 syntax: no backreferences or lookaround) matches the text; one RE2 refuses is 422 RULE_PATTERN_INVALID',
    ...invalid(`a regular expression of 1 to ${MAX_RULE_PATTERN_CHARS} characters`),
  }),
  caseSensitive: Type.Boolean({ default: false, description: 'with pattern only', ...invalid('a boolean') }),
  spot: Type.Boolean({
    default: false,
    description:
      'with phrases only: spot the phrases in the audio too (a keyphrase search beside the transcription, docs/analytics.md), so a phrase the transcript garbles still alerts (source "spotted"); every word needs a pronunciation in the engine\'s dictionary',
    ...invalid('a boolean'),
  }),
  spotThreshold: Type.Number({
    minimum: MIN_SPOT_THRESHOLD,
    maximum: MAX_SPOT_THRESHOLD,
    description: `with spot only: each phrase's detection threshold (smaller detects more, with more false alarms); default ${DEFAULT_SPOT_THRESHOLD}`,
    ...invalid(`a number from ${MIN_SPOT_THRESHOLD} to ${MAX_SPOT_THRESHOLD}`),
  }),
  entity: Type.Enum([...DETECTABLE_CATEGORIES], {
    description: 'alert when an entity of this type is said (src/text/entities.ts, docs/options.md entityCategories)',
    ...invalid(`one of ${DETECTABLE_CATEGORIES.join(', ')}`),
  }),
  silenceSeconds: seconds(MIN_SILENCE_SECONDS, MAX_SILENCE_SECONDS, 'alert when speech follows a silence longer than this'),
  talkOverSeconds: seconds(
    MIN_TALK_OVER_SECONDS,
    MAX_TALK_OVER_SECONDS,
    'alert when this leg and another leg of its call speak at once for longer than this',
  ),
  name: Type.String({
    minLength: 1,
    maxLength: MAX_RULE_NAME_CHARS,
    pattern: '\\S',
    description: 'what the alert is called',
    ...invalid(`a non-empty string of at most ${MAX_RULE_NAME_CHARS} characters`),
  }),
  speaker: Type.Union([Type.String({ pattern: SPEAKER_PATTERN.source }), Type.Null()], {
    description: 'only legs with this speaker label; null (the default): any leg',
    ...invalid(`null (any leg) or a speaker label matching ${SPEAKER_PATTERN.source}`),
  }),
  partials: Type.Boolean({
    default: false,
    description: 'read partials too (not with talkOverSeconds); finals are always read',
    ...invalid('a boolean'),
  }),
  enabled: Type.Boolean({ default: true, ...invalid('a boolean') }),
};

const optional = <T extends Record<string, Parameters<typeof Type.Optional>[0]>>(fields: T) =>
  Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, Type.Optional(v)])) as {
    [K in keyof T]: ReturnType<typeof Type.Optional<T[K]>>;
  };

/** The rules between fields, stated for the document (ruleFromBody and ruleChange check them):
 * at most one condition; caseSensitive only beside a pattern; partials not with talk-over. */
const pairs = CONDITIONS.flatMap((a, i) => CONDITIONS.slice(i + 1).map((b) => ({ required: [a, b] })));
const CROSS_FIELD = {
  not: {
    anyOf: [
      ...pairs,
      { required: ['talkOverSeconds', 'partials'], properties: { partials: { const: true } } },
      { required: ['spotThreshold', 'spot'], properties: { spot: { const: false } } },
    ],
  },
  dependentRequired: { caseSensitive: ['pattern'], spot: ['phrases'], spotThreshold: ['spot'] },
};

const { name, ...others } = FIELDS;
export const CREATE_RULE_BODY = Type.Object(
  { ...optional(others), name },
  {
    additionalProperties: false,
    description:
      'One condition: phrases, pattern, entity, silenceSeconds or talkOverSeconds; caseSensitive only with pattern; spot only with phrases; partials not with talkOverSeconds.',
    ...invalid('a JSON object'),
    ...documented({ ...CROSS_FIELD, anyOf: CONDITIONS.map((c) => ({ required: [c] })) }),
  },
);
export const PATCH_RULE_BODY = Type.Object(optional(FIELDS), {
  additionalProperties: false,
  description: 'Any field of create; a condition field given replaces the condition; at least one field.',
  ...invalid('a JSON object'),
  ...documented({ ...CROSS_FIELD, minProperties: 1 }),
});

const RULE_VIEW = Type.Object({
  id: RULE_ID,
  name: Type.String(),
  condition: Type.Enum([...RULE_CONDITION_KINDS], { description: 'which condition the rule has; its field is beside this' }),
  phrases: Type.Optional(Type.Array(Type.String())),
  pattern: Type.Optional(Type.String()),
  caseSensitive: Type.Optional(Type.Boolean()),
  spot: Type.Optional(Type.Literal(true, { description: 'the phrases are spotted in the audio too' })),
  spotThreshold: Type.Optional(Type.Number()),
  entity: Type.Optional(Type.String()),
  silenceSeconds: Type.Optional(Type.Number()),
  talkOverSeconds: Type.Optional(Type.Number()),
  speaker: Type.Union([Type.String(), Type.Null()]),
  partials: Type.Boolean(),
  enabled: Type.Boolean(),
  createdAt: TIMESTAMP,
  updatedAt: TIMESTAMP,
});

const ID = Type.Object({ id: PATH_PARAM });

export const RULE_ROUTES = {
  create: {
    method: 'POST',
    url: BASE,
    schema: {
      ...operation({
        operationId: 'createRule',
        tag: TAG,
        auth: 'accessKey',
        summary: 'Create a live rule: an alert on the session sockets and an alert.triggered webhook when it matches',
        description:
          'One condition: phrases, pattern, entity, silenceSeconds or talkOverSeconds. At most 50 rules an account. docs/rules.md.',
        errors: ['RULE_PATTERN_INVALID', 'PHRASE_NOT_SPOTTABLE', 'RULE_LIMIT'],
      }),
      body: CREATE_RULE_BODY,
      response: { 201: envelope(RULE_VIEW, 'the rule, created') },
    },
  },
  list: {
    method: 'GET',
    url: BASE,
    schema: {
      ...operation({
        operationId: 'listRules',
        tag: TAG,
        auth: 'accessKey',
        summary: "The account's live rules, oldest first",
        errors: [],
      }),
      response: { 200: envelope(Type.Object({ rules: Type.Array(RULE_VIEW) }), 'every rule') },
    },
  },
  get: {
    method: 'GET',
    url: `${BASE}/:id`,
    schema: {
      ...operation({ operationId: 'getRule', tag: TAG, auth: 'accessKey', summary: 'Read a live rule', errors: ['NOT_FOUND'] }),
      params: ID,
      response: { 200: envelope(RULE_VIEW, 'the rule') },
    },
  },
  update: {
    method: 'PATCH',
    url: `${BASE}/:id`,
    schema: {
      ...operation({
        operationId: 'updateRule',
        tag: TAG,
        auth: 'accessKey',
        summary: 'Change a live rule; a condition field given replaces its condition',
        errors: ['RULE_PATTERN_INVALID', 'PHRASE_NOT_SPOTTABLE', 'NOT_FOUND'],
      }),
      params: ID,
      body: PATCH_RULE_BODY,
      response: { 200: envelope(RULE_VIEW, 'the rule, changed') },
    },
  },
  delete: {
    method: 'DELETE',
    url: `${BASE}/:id`,
    schema: {
      ...operation({ operationId: 'deleteRule', tag: TAG, auth: 'accessKey', summary: 'Delete a live rule', errors: ['NOT_FOUND'] }),
      params: ID,
      response: { 200: envelope(Type.Object({ id: RULE_ID, deleted: Type.Literal(true) }), 'deleted') },
    },
  },
} as const satisfies RouteTable['routes'];

export const RULE_TABLE: RouteTable = { routes: RULE_ROUTES };

type CreateRuleBody = Static<typeof CREATE_RULE_BODY>;
type PatchRuleBody = Static<typeof PATCH_RULE_BODY>;

/** The one condition a body gives (its shape already checked by the schema). */
function condition(body: PatchRuleBody, check: PatternCheck): RuleCondition {
  const given = CONDITIONS.filter((f) => body[f] !== undefined);
  if (given.length !== 1) throw ruleField(given[1] ?? 'phrases', `exactly one of ${CONDITIONS.join(', ')}`);
  if (body.caseSensitive !== undefined && given[0] !== 'pattern') throw ruleField('caseSensitive', 'only with pattern');
  if (body.spot !== undefined && given[0] !== 'phrases') throw ruleField('spot', 'only with phrases');
  switch (given[0]!) {
    case 'phrases': {
      const spot = spottingOf(body.spot, body.spotThreshold);
      return { kind: 'phrases', phrases: body.phrases!, ...(spot ? { spot } : {}) };
    }
    case 'pattern': {
      const caseSensitive = body.caseSensitive ?? false;
      const refused = check(body.pattern!, caseSensitive);
      if (refused !== null) throw new ScribedError('RULE_PATTERN_INVALID', `pattern: ${refused}`, { details: { field: 'pattern' } });
      return { kind: 'pattern', pattern: body.pattern!, caseSensitive };
    }
    case 'entity':
      return { kind: 'entity', entity: body.entity! };
    case 'silenceSeconds':
      return { kind: 'silence', seconds: body.silenceSeconds! };
    default:
      return { kind: 'talkOver', seconds: body.talkOverSeconds! };
  }
}

/** A new rule from a create body, with its defaults (any leg, finals only, enabled). */
export function ruleFromBody(body: CreateRuleBody, check: PatternCheck): RuleInput {
  const c = condition(body, check);
  const partials = body.partials ?? false;
  checkPartials(partials, c);
  return { name: body.name, condition: c, speaker: body.speaker ?? null, partials, enabled: body.enabled ?? true };
}

/** A change to a rule: any field of create; a condition given replaces the rule's condition. */
export function ruleChange(body: PatchRuleBody, check: PatternCheck): RulePatch {
  if (Object.keys(body).length === 0) throw ruleField('body', 'at least one field to change');
  const patch: RulePatch = {};
  if (body.name !== undefined) patch.name = body.name;
  if (
    CONDITIONS.some((f) => body[f] !== undefined) ||
    body.caseSensitive !== undefined ||
    body.spot !== undefined ||
    body.spotThreshold !== undefined
  ) {
    if (!CONDITIONS.some((f) => body[f] !== undefined))
      throw body.caseSensitive !== undefined ? ruleField('caseSensitive', 'only with pattern') : ruleField('spot', 'only with phrases');
    patch.condition = condition(body, check);
  }
  if (body.speaker !== undefined) patch.speaker = body.speaker;
  if (body.partials !== undefined) patch.partials = body.partials;
  if (body.enabled !== undefined) patch.enabled = body.enabled;
  if (patch.partials !== undefined && patch.condition !== undefined) checkPartials(patch.partials, patch.condition);
  return patch;
}

/** Phrases to spot, checked against the engine's keyphrase dictionary: 422
 * PHRASE_NOT_SPOTTABLE naming the first phrase with a word it lacks (`at` prefixes the field: a category's condition), or naming
 * `spot` when the engine cannot spot phrases at all. */
export async function checkSpotPhrases(
  engine: { missingKeyphraseWords?(p: readonly string[]): Promise<string[]> },
  phrases: readonly string[],
  at: string,
): Promise<void> {
  const refuse = (field: string, message: string) =>
    new ScribedError('PHRASE_NOT_SPOTTABLE', `${field}: ${message}`, { details: { field } });
  if (!engine.missingKeyphraseWords) throw refuse(`${at}spot`, 'this engine cannot spot phrases (pocketsphinx can)');
  for (const [i, p] of phrases.entries()) {
    const missing = await engine.missingKeyphraseWords([spotPhrase(p)]);
    if (missing.length > 0)
      throw refuse(`${at}phrases[${i}]`, `cannot be spotted: no pronunciation for ${missing.map((w) => JSON.stringify(w)).join(', ')}`);
  }
}
