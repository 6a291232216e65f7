// Fastify's validation errors mapped to the error table (src/server/validation-errors.ts): the
// field named as the API names it, the message the failing schema gives (one, or one per
// keyword), a union answered with its own message, a list's items as the list, a message
// alone, the route's own identifier, and a plain fallback when no schema names a message.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fieldName } from '../../src/server/validation-errors.js';
import { fieldNamed, invalid, operation, unknownKey } from '../../src/server/openapi/route-schema.js';
import { answer, schemaApp } from '../helpers/schema-app.js';

let app: FastifyInstance;

const BODY = Type.Object(
  {
    options: Type.Optional(
      Type.Object(
        { hints: Type.Optional(Type.Array(Type.String({ maxLength: 3 }), invalid('a list of short words'))) },
        { additionalProperties: false, ...invalid('an object') },
      ),
    ),
    tags: Type.Optional(Type.Array(Type.String({ ...invalid('a list of strings'), ...fieldNamed('tags') }), invalid('a list of strings'))),
    level: Type.Optional(Type.Integer({ minimum: 1, ...invalid({ type: 'an integer', minimum: 'at least 1' }) })),
    label: Type.Optional(Type.Union([Type.String({ pattern: '^[a-z]+$' }), Type.Null()], invalid('null or lower-case letters'))),
    plain: Type.Optional(Type.Boolean()),
  },
  {
    additionalProperties: false,
    ...invalid('the body must be a JSON object'),
    ...fieldNamed(false),
    ...unknownKey({ old: 'renamed to level', default: 'unknown field' }),
  },
);

beforeAll(async () => {
  app = await schemaApp((typed) => {
    const ok = async () => ({ code: 1 as const, message: 'success', data: null });
    typed.route({
      method: 'POST',
      url: '/v',
      schema: { ...operation({ operationId: 'v', tag: 't', summary: 's', auth: 'none', errors: [] }), body: BODY },
      handler: ok,
    });
    typed.route({
      method: 'POST',
      url: '/w',
      schema: {
        ...operation({ operationId: 'w', tag: 't', summary: 's', auth: 'none', errors: [], validationError: 'BAD_REQUEST' }),
        body: BODY,
      },
      handler: ok,
    });
  });
});
afterAll(async () => {
  await app?.close();
});

describe('validation errors in the table', () => {
  it('names fields as the API does', () => {
    expect(fieldName('', 'body')).toBe('body');
    expect(fieldName('/options/hints/2', 'body')).toBe('options.hints[2]');
    expect(fieldName('/a~1b/c~0d', 'query')).toBe('a/b.c~d');
  });

  it("answers each refusal with the schema's message and the route's identifier", async () => {
    const cases: [unknown, number, string][] = [
      [[], 422, 'VALIDATION_FAILED: the body must be a JSON object'],
      [{ options: 1 }, 422, 'VALIDATION_FAILED: options: an object'],
      // The failing schema (an item) names no message: Ajv's own words, at the item's path.
      [{ options: { hints: ['ok', 'long'] } }, 422, 'VALIDATION_FAILED: options.hints[1]: must NOT have more than 3 characters'],
      [{ options: { hints: 'ok' } }, 422, 'VALIDATION_FAILED: options.hints: a list of short words'],
      [{ options: { colour: 1 } }, 422, 'VALIDATION_FAILED: options.colour: unknown field'],
      [{ tags: ['a', 2] }, 422, 'VALIDATION_FAILED: tags: a list of strings'],
      [{ level: 'x' }, 422, 'VALIDATION_FAILED: level: an integer'],
      [{ level: 0 }, 422, 'VALIDATION_FAILED: level: at least 1'],
      [{ label: 'A' }, 422, 'VALIDATION_FAILED: label: null or lower-case letters'],
      [{ old: 1 }, 422, 'VALIDATION_FAILED: old: renamed to level'],
      [{ plain: 'x' }, 422, 'VALIDATION_FAILED: plain: must be boolean'],
    ];
    for (const [body, status, message] of cases)
      expect(await answer(app, 'POST', '/v', body), JSON.stringify(body)).toMatchObject({ status, message });
    expect(await answer(app, 'POST', '/w', { level: 0 })).toMatchObject({ status: 400, message: 'BAD_REQUEST: level: at least 1' });
    expect(await answer(app, 'POST', '/v', { label: null, level: 2, tags: [] })).toMatchObject({ status: 200 });
  });
});
