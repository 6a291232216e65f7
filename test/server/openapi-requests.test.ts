// The documented request rules are the ones the server applies: against the real app
// (inject), instances generated from each documented JSON body and query schema of the served
// document are never refused as invalid (and a 200 answer matches the documented response),
// and each documented bound broken (one over maxLength or maxItems, one under minLength or
// minItems, past minimum or maximum, out of the enum, a required field left out, an unknown
// key where keys are closed) is refused with the operation's documented identifier and status.
// fast-check with a fixed seed; multipart bodies are not generated here.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { startService, type TestService } from '../helpers/service.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';
import { ERRORS, type ErrorCode } from '../../src/core/errors.js';
import type { OpenApiDocument, Operation } from '../../src/server/openapi/document.js';
import type { JsonSchema } from '../../src/server/openapi/document-types.js';

let svc: TestService;
let alice: ProvisionedAccount;
let doc: OpenApiDocument;
let musicProjectId: string;
const ajv = new Ajv2020({ strict: false, validateFormats: false });

beforeAll(async () => {
  svc = await startService({ maxDecoders: 1 });
  alice = await svc.account(10_000_000n);
  doc = (await svc.service.app.inject({ method: 'GET', url: '/openapi.json' })).json() as OpenApiDocument;
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

// ------------------------------------------------------------------ instances of a schema

function stringArb(s: JsonSchema): fc.Arbitrary<string> {
  const min = (s.minLength as number | undefined) ?? 0;
  const max = Math.min((s.maxLength as number | undefined) ?? 40, 400);
  const fits = (v: string) => [...v].length >= min && [...v].length <= ((s.maxLength as number | undefined) ?? Infinity);
  if (s.format === 'uri') return fc.webUrl().filter(fits);
  const pattern = typeof s.pattern === 'string' ? new RegExp(s.pattern, 'u') : null;
  if (pattern && s.pattern !== '\\S') return fc.stringMatching(pattern).filter((v) => fits(v) && !v.includes('\u0000'));
  // U+0000 is refused in every JSON string (docs/api.md, Body limits; src/core/json-nul.ts).
  return fc
    .string({ unit: 'binary', minLength: min, maxLength: max })
    .filter((v) => !v.includes('\u0000') && (!pattern || pattern.test(v)));
}

function arb(s: JsonSchema): fc.Arbitrary<unknown> {
  if (s.const !== undefined) return fc.constant(s.const);
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
  if (Array.isArray(s.anyOf))
    return fc.oneof(...(s.anyOf as JsonSchema[]).map((sub) => arb({ ...s, anyOf: undefined, description: undefined, ...sub })));
  const types = (Array.isArray(s.type) ? s.type : [s.type]) as string[];
  return fc.oneof(
    ...types.map((t): fc.Arbitrary<unknown> => {
      switch (t) {
        case 'null':
          return fc.constant(null);
        case 'boolean':
          return fc.boolean();
        case 'integer':
          return fc.integer({
            min: (s.minimum as number | undefined) ?? -1e6,
            max: Math.min((s.maximum as number | undefined) ?? 1e6, 2 ** 31 - 1),
          });
        case 'number':
          return fc.double({
            min: (s.minimum as number | undefined) ?? -1e6,
            max: (s.maximum as number | undefined) ?? 1e6,
            noNaN: true,
            noDefaultInfinity: true,
          });
        case 'string':
          return stringArb(s);
        case 'array': {
          const constraints = { minLength: (s.minItems as number | undefined) ?? 0, maxLength: (s.maxItems as number | undefined) ?? 5 };
          const items = arb(s.items as JsonSchema);
          return s.uniqueItems
            ? fc.uniqueArray(items, { ...constraints, selector: (v) => JSON.stringify(v) })
            : fc.array(items, constraints);
        }
        case 'object': {
          const props = s.properties as Record<string, JsonSchema> | undefined;
          if (!props)
            return fc
              .dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 })
              .filter((d) => !JSON.stringify(d).includes('\\u0000'));
          const record = Object.fromEntries(Object.entries(props).map(([k, v]) => [k, arb(v)]));
          return fc.record(record, { requiredKeys: (s.required as string[] | undefined) ?? [] });
        }
        default:
          throw new Error(`no generator for type ${t}`);
      }
    }),
  );
}

/** Instances of the whole schema: generated field by field, then kept only when the schema as
 * a whole (cross-field rules: allOf, not, if/then, anyOf) accepts them. */
function instances(schema: JsonSchema, n: number, seed: number, extra?: (v: unknown) => boolean): unknown[] {
  const valid = ajv.compile(schema);
  return fc.sample(
    arb(schema).filter((v) => valid(v) && (extra?.(v) ?? true)),
    { numRuns: n, seed },
  );
}

// ------------------------------------------------------------------ the requests

interface Case {
  method: string;
  path: string;
  op: Operation;
}

function jsonCases(): Case[] {
  const cases: Case[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const body = op.requestBody as { content: Record<string, unknown> } | undefined;
      const hasQuery = ((op.parameters ?? []) as { in: string }[]).some(
        (p) => p.in === 'query' && (op.security as unknown[]).length > 0 && !path.endsWith('/stream') && !path.endsWith('/events'),
      );
      // The API facades answer in OpenAI's or Deepgram's shapes, not with the native identifiers
      // (their operations list none); test/server/facades holds them to their own.
      const facade =
        Array.isArray((op as { 'x-scribed-errors'?: unknown[] })['x-scribed-errors']) &&
        (op as { 'x-scribed-errors': unknown[] })['x-scribed-errors'].length === 0;
      if (!facade && (body?.content['application/json'] || (hasQuery && !body))) cases.push({ method, path, op });
    }
  }
  return cases;
}

function bodySchema(op: Operation): JsonSchema | undefined {
  return (op.requestBody as { content: Record<string, { schema: JsonSchema }> } | undefined)?.content['application/json']?.schema;
}

/** Query values only the server issues (a page's nextCursor): never generated. */
const ISSUED_BY_SERVER = ['cursor'];

function queryParams(op: Operation): { name: string; schema: JsonSchema; required?: boolean }[] {
  return ((op.parameters ?? []) as { name: string; in: string; schema: JsonSchema; required?: boolean }[]).filter(
    (p) => p.in === 'query' && !ISSUED_BY_SERVER.includes(p.name),
  );
}

function url(c: Case, query: Record<string, unknown> = {}): string {
  const path = c.path.replace(/\{(\w+)\}/g, (_m, name: string) =>
    name === 'projectId' && c.path.includes('/music/') ? musicProjectId : `${name}_000000000000`,
  );
  const qs = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString();
  return qs ? `${path}?${qs}` : path;
}

async function send(c: Case, body: unknown, query: Record<string, unknown> = {}) {
  const headers: Record<string, string> = { 'idempotency-key': randomBytes(16).toString('hex') };
  if ((c.op.security as Record<string, unknown>[]).some((s) => 'userGroupToken' in s)) headers.authorization = `Token ${alice.apiToken}`;
  else headers.accesskey = alice.accessKey;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await svc.service.app.inject({
    method: c.method.toUpperCase() as 'GET',
    url: url(c, query),
    headers,
    ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
  });
  const json = res.headers['content-type']?.toString().startsWith('application/json') ? (res.json() as Record<string, unknown>) : null;
  return { status: res.statusCode, json };
}

const identifierOf = (json: Record<string, unknown> | null) => String(json?.message ?? '').split(':')[0];

/** Rules no JSON Schema can say, kept beside the generator: the interpretation target list
 * must not repeat the source language; a category's talk share min is not above its max. */
function crossFieldRules(v: unknown): boolean {
  const b = v as { sourceLanguage?: unknown; targetLanguages?: unknown; conditions?: unknown };
  if (Array.isArray(b?.targetLanguages) && b.targetLanguages.includes(b.sourceLanguage)) return false;
  // A category's talk share: min not above max.
  const shares = Array.isArray(b?.conditions)
    ? (b.conditions as Array<{ talkShare?: { min?: number; max?: number } }>).map((c) => c?.talkShare)
    : [];
  return !shares.some((t) => t && t.min !== undefined && t.max !== undefined && t.min > t.max);
}

describe('documented request schemas against the real app', () => {
  beforeAll(async () => {
    const brief = instances(bodySchema(doc.paths['/sound_clone/api/v1/music/projects']!.post!)!, 1, 7)[0];
    const res = await svc.service.app.inject({
      method: 'POST',
      url: '/sound_clone/api/v1/music/projects',
      headers: { accesskey: alice.accessKey, 'content-type': 'application/json' },
      payload: JSON.stringify(brief),
    });
    musicProjectId = (res.json() as { data: { projectId: string } }).data.projectId;
    expect(musicProjectId).toMatch(/^mup_/);
  });

  it('covers every JSON body and query the document gives', () => {
    const ops = jsonCases().map((c) => `${c.method.toUpperCase()} ${c.path}`);
    expect(ops.length).toBeGreaterThanOrEqual(15);
    expect(ops).toContain('POST /sound_clone/api/v1/stt/realtime/sessions');
    expect(ops).toContain('GET /api/user');
  });

  it('instances of each schema are not refused as invalid, and 200 answers match the documented response', async () => {
    for (const [i, c] of jsonCases().entries()) {
      const schema = bodySchema(c.op);
      const query = queryParams(c.op);
      const bodies = schema ? instances(schema, 12, 100 + i, crossFieldRules) : [undefined];
      const queries =
        query.length > 0
          ? fc.sample(
              fc.record(Object.fromEntries(query.map((p) => [p.name, arb(p.schema)])), {
                // A required parameter (search's q) is always given.
                requiredKeys: query.filter((p) => p.required).map((p) => p.name),
              }),
              {
                numRuns: 12,
                seed: 200 + i,
              },
            )
          : [{}];
      const answer = c.op.responses['200']?.content?.['application/json']?.schema;
      const checkAnswer = answer ? ajv.compile({ ...answer, components: doc.components }) : null;
      for (const [k, body] of bodies.entries()) {
        const q = queries[k % queries.length] as Record<string, unknown>;
        const res = await send(c, body, q);
        const what = `${c.method.toUpperCase()} ${c.path} ${JSON.stringify(q)} ${JSON.stringify(body)?.slice(0, 300)} -> ${res.status} ${JSON.stringify(res.json)?.slice(0, 300)}`;
        expect(
          [400, 422].includes(res.status) &&
            ['VALIDATION_FAILED', 'MUSIC_BRIEF_INVALID', 'BAD_REQUEST', 'IDEMPOTENCY_KEY_REQUIRED'].includes(identifierOf(res.json)),
          what,
        ).toBe(false);
        expect(res.status, what).toBeLessThan(500);
        if (res.status === 200 && checkAnswer) expect(checkAnswer(res.json), `${what}: ${ajv.errorsText(checkAnswer.errors)}`).toBe(true);
      }
    }
  }, 240_000);

  it('each documented bound broken is refused with the documented identifier and status', async () => {
    let checked = 0;
    for (const [i, c] of jsonCases().entries()) {
      const expected = c.op['x-scribed-validation-error'] as ErrorCode;
      expect(expected, `${c.method} ${c.path}`).toBeDefined();
      const schema = bodySchema(c.op);
      const base = schema ? (instances(schema, 1, 300 + i, crossFieldRules)[0] as Record<string, unknown>) : undefined;
      const refused = async (what: string, body: unknown, query: Record<string, unknown> = {}) => {
        const res = await send(c, body, query);
        const message = `${c.method.toUpperCase()} ${c.path}: ${what} -> ${res.status} ${JSON.stringify(res.json)}`;
        expect(identifierOf(res.json), message).toBe(expected);
        expect(res.status, message).toBe(ERRORS[expected].http);
        checked++;
      };
      for (const v of violations(schema, base)) await refused(v.what, v.body);
      for (const p of queryParams(c.op))
        for (const bad of brokenValues(p.schema))
          await refused(`${p.name}=${String(bad.value)} (${bad.what})`, undefined, { [p.name]: bad.value });
    }
    expect(checked).toBeGreaterThan(60);
  }, 240_000);
});

/** Values that break one bound of a field's schema, each with what it breaks. */
function brokenValues(s: JsonSchema): { what: string; value: unknown }[] {
  const out: { what: string; value: unknown }[] = [];
  const types = (Array.isArray(s.type) ? s.type : [s.type]) as string[];
  if (Array.isArray(s.enum)) out.push({ what: 'out of the enum', value: 'not-in-the-enum' });
  if (typeof s.maxLength === 'number') out.push({ what: `maxLength ${s.maxLength} + 1`, value: 'a'.repeat(s.maxLength + 1) });
  if (typeof s.minLength === 'number' && s.minLength > 0)
    out.push({ what: `minLength ${s.minLength} - 1`, value: 'a'.repeat(s.minLength - 1) });
  if (typeof s.maximum === 'number' && s.maximum < Number.MAX_SAFE_INTEGER)
    out.push({ what: `maximum ${s.maximum} + 1`, value: s.maximum + 1 });
  if (typeof s.minimum === 'number') out.push({ what: `minimum ${s.minimum} - 1`, value: s.minimum - 1 });
  if (types.includes('integer') && !types.includes('number'))
    out.push({ what: 'not an integer', value: ((s.minimum as number | undefined) ?? 0) + 0.5 });
  if (types.includes('array') && s.items) {
    const item = fc.sample(arb(s.items as JsonSchema), { numRuns: 1, seed: 1 })[0];
    const distinct = Array.isArray((s.items as JsonSchema).enum) ? ((s.items as JsonSchema).enum as unknown[]) : null;
    if (typeof s.maxItems === 'number') {
      const n = s.maxItems + 1;
      out.push({
        what: `maxItems ${s.maxItems} + 1`,
        value: distinct && distinct.length >= n ? distinct.slice(0, n) : Array.from({ length: n }, () => item),
      });
    }
    if (typeof s.minItems === 'number' && s.minItems > 0) out.push({ what: `minItems ${s.minItems} - 1`, value: [] });
    if (s.uniqueItems) out.push({ what: 'repeated item', value: [item, item] });
  }
  return out;
}

/** Bodies that each break one documented bound of a valid base body (top level, and one level
 * down into closed objects such as the session options). */
function violations(schema: JsonSchema | undefined, base: Record<string, unknown> | undefined): { what: string; body: unknown }[] {
  if (!schema || !base) return [];
  const out: { what: string; body: unknown }[] = [];
  const walk = (s: JsonSchema, at: string[], setIn: (v: Record<string, unknown>) => unknown, obj: Record<string, unknown>) => {
    const props = (s.properties ?? {}) as Record<string, JsonSchema>;
    for (const name of (s.required ?? []) as string[]) {
      const copy = { ...obj };
      delete copy[name];
      out.push({ what: `required ${[...at, name].join('.')} left out`, body: setIn(copy) });
    }
    if (s.additionalProperties === false)
      out.push({ what: `unknown key in ${at.join('.') || 'the body'}`, body: setIn({ ...obj, notAField: 1 }) });
    for (const [name, p] of Object.entries(props)) {
      for (const bad of brokenValues(p))
        out.push({ what: `${[...at, name].join('.')}: ${bad.what}`, body: setIn({ ...obj, [name]: bad.value }) });
      const types = (Array.isArray(p.type) ? p.type : [p.type]) as string[];
      if (types.includes('object') && p.properties) {
        const inner = (obj[name] && typeof obj[name] === 'object' ? obj[name] : {}) as Record<string, unknown>;
        walk(p, [...at, name], (v) => setIn({ ...obj, [name]: v }), inner);
      }
    }
  };
  walk(schema, [], (v) => v, base);
  return out;
}
