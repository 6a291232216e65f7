// Live rules' bodies (src/server/schemas/rules.ts; docs/rules.md) through Fastify's validation
// and the server's error handling, as a route sees them: each condition taken with its
// defaults; none or two conditions, bad fields and limits refused with VALIDATION_FAILED and a
// message naming the field; a pattern RE2 refuses answered RULE_PATTERN_INVALID; a patch's
// partials checked against the whole rule.
import Fastify, { type FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyRulePatch, MAX_RULE_PHRASES, type PatternCheck, type RuleInput } from '../../../src/core/rules.js';
import { ScribedError } from '../../../src/core/errors.js';
import { installErrorHandling } from '../../../src/server/error-handler.js';
import { AJV_OPTIONS, plainSerializerCompiler } from '../../../src/server/openapi/route-schema.js';
import { RULE_ROUTES, ruleChange, ruleFromBody } from '../../../src/server/schemas/rules.js';

let app: FastifyInstance;
let check: PatternCheck = () => null;

beforeAll(async () => {
  app = Fastify({ ajv: AJV_OPTIONS });
  installErrorHandling(app);
  app.setSerializerCompiler(plainSerializerCompiler);
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  // The declared routes with handlers that answer what the body became.
  typed.route({
    ...RULE_ROUTES.create,
    handler: async (req) => ({ code: 1 as const, message: 'success', data: ruleFromBody(req.body, check) as never }),
  });
  typed.route({
    ...RULE_ROUTES.update,
    handler: async (req) => ({ code: 1 as const, message: 'success', data: ruleChange(req.body, check) as never }),
  });
  await app.ready();
});
afterAll(async () => {
  await app?.close();
});

async function create(body: unknown): Promise<{ status: number; code: number; message: string; data: RuleInput }> {
  const res = await app.inject({ method: 'POST', url: RULE_ROUTES.create.url, payload: body as object });
  const json = res.json() as { code: number; message: string; data: RuleInput };
  return { status: res.statusCode, ...json };
}

async function patch(body: unknown) {
  const res = await app.inject({ method: 'PATCH', url: RULE_ROUTES.update.url.replace(':id', 'rul_x'), payload: body as object });
  return { status: res.statusCode, ...(res.json() as { code: number; message: string; data: Partial<RuleInput> }) };
}

describe('a rule body', () => {
  it('takes each condition with defaults (any leg, finals only, enabled)', async () => {
    expect((await create({ name: 'cancel', phrases: ['cancel my subscription'] })).data).toEqual({
      name: 'cancel',
      condition: { kind: 'phrases', phrases: ['cancel my subscription'] },
      speaker: null,
      partials: false,
      enabled: true,
    });
    expect((await create({ name: 'p', pattern: 'refund(ed)?', caseSensitive: true })).data.condition).toEqual({
      kind: 'pattern',
      pattern: 'refund(ed)?',
      caseSensitive: true,
    });
    expect((await create({ name: 'e', entity: 'credit_card', speaker: 'customer', partials: true })).data).toMatchObject({
      condition: { kind: 'entity', entity: 'credit_card' },
      speaker: 'customer',
      partials: true,
    });
    expect((await create({ name: 's', silenceSeconds: 10 })).data.condition).toEqual({ kind: 'silence', seconds: 10 });
    expect((await create({ name: 't', talkOverSeconds: 2.5, enabled: false })).data).toMatchObject({
      condition: { kind: 'talkOver', seconds: 2.5 },
      enabled: false,
    });
  });

  it('refuses none or two conditions, bad fields and limits with VALIDATION_FAILED naming the field, in the same words as before', async () => {
    const cases: [unknown, string][] = [
      [{ name: 'x' }, 'phrases: exactly one of phrases, pattern, entity, silenceSeconds, talkOverSeconds'],
      [
        { name: 'x', phrases: ['a'], silenceSeconds: 5 },
        'silenceSeconds: exactly one of phrases, pattern, entity, silenceSeconds, talkOverSeconds',
      ],
      [{ phrases: ['a'] }, 'name: a non-empty string of at most 100 characters'],
      [{ name: ' ', phrases: ['a'] }, 'name: a non-empty string of at most 100 characters'],
      [{ name: 7, phrases: ['a'] }, 'name: a non-empty string of at most 100 characters'],
      [{ name: 'x', phrases: [] }, `phrases: a list of 1 to ${MAX_RULE_PHRASES} phrases`],
      [{ name: 'x', phrases: 'a' }, `phrases: a list of 1 to ${MAX_RULE_PHRASES} phrases`],
      [
        { name: 'x', phrases: Array.from({ length: MAX_RULE_PHRASES + 1 }, () => 'a') },
        `phrases: a list of 1 to ${MAX_RULE_PHRASES} phrases`,
      ],
      [{ name: 'x', phrases: ['ok', '?!'] }, 'phrases[1]: a phrase of at most 200 characters with at least one word'],
      [{ name: 'x', phrases: ['ok', 3] }, 'phrases[1]: a phrase of at most 200 characters with at least one word'],
      [{ name: 'x', entity: 'person' }, 'entity: one of email, money, date, credit_card, phone_number, spelled_digits'],
      [{ name: 'x', silenceSeconds: 0.5 }, 'silenceSeconds: a number of seconds from 1 to 3600'],
      [{ name: 'x', silenceSeconds: '5' }, 'silenceSeconds: a number of seconds from 1 to 3600'],
      [{ name: 'x', talkOverSeconds: 601 }, 'talkOverSeconds: a number of seconds from 0.5 to 600'],
      [{ name: 'x', talkOverSeconds: 2, partials: true }, 'partials: talk-over is read from finals only'],
      [{ name: 'x', phrases: ['a'], caseSensitive: true }, 'caseSensitive: only with pattern'],
      [{ name: 'x', pattern: 'a', caseSensitive: 'yes' }, 'caseSensitive: a boolean'],
      [
        { name: 'x', phrases: ['a'], speaker: 'two words' },
        'speaker: null (any leg) or a speaker label matching ^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$',
      ],
      [{ name: 'x', phrases: ['a'], enabled: 1 }, 'enabled: a boolean'],
      [{ name: 'x', phrases: ['a'], colour: 'red' }, 'colour: unknown field'],
      [{ name: 'x', pattern: 'a'.repeat(501) }, 'pattern: a regular expression of 1 to 500 characters'],
      [[1, 2], 'body: a JSON object'],
    ];
    for (const [body, message] of cases) {
      const r = await create(body);
      expect([r.status, r.code, r.message], JSON.stringify(body)).toEqual([422, -1, `VALIDATION_FAILED: ${message}`]);
    }
  });

  it("answers RULE_PATTERN_INVALID with the engine's reason for a pattern it refuses", async () => {
    check = () => 'invalid escape sequence: \\1';
    try {
      const r = await create({ name: 'x', pattern: '(a)\\1' });
      expect(r.status).toBe(422);
      expect(r.message).toBe('RULE_PATTERN_INVALID: pattern: invalid escape sequence: \\1');
    } finally {
      check = () => null;
    }
  });

  it('patches: a condition replaces the old; partials with talk-over is refused on the whole rule', async () => {
    const current = (await create({ name: 't', talkOverSeconds: 2 })).data;
    expect((await patch({})).message).toBe('VALIDATION_FAILED: body: at least one field to change');
    expect((await patch({ caseSensitive: true })).message).toBe('VALIDATION_FAILED: caseSensitive: only with pattern');
    const partials = (await patch({ partials: true })).data;
    expect(() => applyRulePatch(current, partials)).toThrow(ScribedError);
    const both = (await patch({ partials: true, phrases: ['hello'] })).data;
    expect(applyRulePatch(current, both)).toMatchObject({ partials: true, condition: { kind: 'phrases' } });
  });
});
