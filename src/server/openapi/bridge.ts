// TRANSITIONAL: the operations of the routes that do not yet declare their schema
// (route-schema.ts), written from the hand-kept endpoint table (endpoints.ts) as before; the
// document (swagger.ts) adds them beside the ones @fastify/swagger generates. Only the
// post-call categories are left here (openapi/analytics.ts); it goes when they declare their
// schema. Pure.
import { ERRORS, type ErrorCode } from '../../core/errors.js';
import type { Endpoint } from './endpoint.js';
import { ENDPOINTS } from './endpoints.js';
import { IDEMPOTENCY_KEY } from '../../core/idempotency.js';
import type { JsonSchema } from './json-schema.js';

import type { DocumentOptions, OpenApiDocument, Operation, ServerFacts } from './document-types.js';

/** The answers every route of a kind can give, whatever its handler does. */
export function errorsOf(e: Endpoint): ErrorCode[] {
  const codes = new Set<ErrorCode>(e.errors);
  if (e.auth === 'accessKey' || e.auth === 'userGroupToken' || e.auth === 'socket') codes.add('UNAUTHORIZED');
  if (e.idempotencyKey) codes.add('IDEMPOTENCY_KEY_REQUIRED');
  if (e.body) {
    codes.add('BAD_REQUEST');
    codes.add('PAYLOAD_TOO_LARGE');
  }
  if (e.query) codes.add(e.validationError ?? 'VALIDATION_FAILED');
  if (e.path.includes('{')) codes.add('URI_TOO_LONG');
  codes.add('INTERNAL');
  return [...codes];
}

const SECURITY: Record<Endpoint['auth'], Record<string, string[]>[]> = {
  accessKey: [{ accessKey: [] }],
  userGroupToken: [{ userGroupToken: [] }],
  socket: [{ accessKey: [] }, { ticket: [] }],
  none: [],
};

/** The failure body of one HTTP status: its identifiers' wire codes, and the message prefixed
 * with one of the identifiers. */
function failureSchema(e: Endpoint, codes: ErrorCode[]): JsonSchema {
  const prefix = { type: 'string', pattern: `^(?:${codes.join('|')}): ` };
  if (e.auth === 'userGroupToken') {
    return { type: 'object', required: ['success', 'message'], properties: { success: { const: 0 }, message: prefix } };
  }
  const wires = [...new Set(codes.map((c) => ERRORS[c].wire))];
  return { allOf: [{ $ref: '#/components/schemas/FailureEnvelope' }, { properties: { code: { enum: wires }, message: prefix } }] };
}

function successResponse(e: Endpoint): Operation['responses'] {
  const r = e.response;
  return {
    [String(r.status ?? 200)]: {
      description: r.description,
      content: {
        'application/json': { schema: { allOf: [{ $ref: '#/components/schemas/SuccessEnvelope' }, { properties: { data: r.data } }] } },
      },
    },
  };
}

function operation(e: Endpoint, facts: ServerFacts): Operation {
  const parameters: Record<string, unknown>[] = [];
  for (const name of [...e.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!)) {
    parameters.push({ name, in: 'path', required: true, schema: { type: 'string', maxLength: 100 } });
  }
  if (e.idempotencyKey) {
    parameters.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: e.idempotencyKey === 'required',
      schema: { type: 'string', pattern: IDEMPOTENCY_KEY.source, description: '16 to 64 printable ASCII characters' },
      description: 'the same key and body answer with the first result (header idempotent-replayed: true)',
    });
  }
  for (const [name, p] of Object.entries(e.query ?? {})) {
    parameters.push({ name, in: 'query', required: p.required ?? false, schema: p.schema, description: p.description });
  }
  const errors = errorsOf(e);
  const responses: Operation['responses'] = successResponse(e);
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of errors) byStatus.set(ERRORS[code].http, [...(byStatus.get(ERRORS[code].http) ?? []), code]);
  for (const [status, codes] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    responses[String(status)] = {
      description: codes.map((c) => `${c}: ${ERRORS[c].summary}`).join('; '),
      content: { 'application/json': { schema: failureSchema(e, codes) } },
    };
  }
  const validationError = e.body || e.query ? (e.validationError ?? 'VALIDATION_FAILED') : undefined;
  return {
    operationId: e.operationId,
    tags: [e.tag],
    summary: e.summary,
    ...(e.description ? { description: e.description } : {}),
    security: SECURITY[e.auth],
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(e.body ? { requestBody: { required: e.body.required, content: { [e.body.contentType]: { schema: e.body.schema(facts) } } } } : {}),
    responses,
    'x-scribed-errors': errors,
    ...(validationError ? { 'x-scribed-validation-error': validationError } : {}),
  };
}

/** The hand-written operations by path, their tags, and the envelope schemas they refer to. */
export function bridgeDocument(
  opts: DocumentOptions = {},
  endpoints: readonly Endpoint[] = ENDPOINTS,
): Pick<OpenApiDocument, 'paths' | 'tags'> & { schemas: Record<string, JsonSchema> } {
  const paths: OpenApiDocument['paths'] = {};
  const tags: string[] = [];
  for (const e of endpoints) {
    if (opts.withoutBatch && e.batchOnly) continue;
    (paths[e.path] ??= {})[e.method] = operation(e, opts);
    if (!tags.includes(e.tag)) tags.push(e.tag);
  }
  return {
    paths,
    tags: tags.map((name) => ({ name })),
    schemas: {
      SuccessEnvelope: {
        type: 'object',
        required: ['code', 'message', 'data'],
        properties: { code: { const: 1 }, message: { type: 'string' }, data: {} },
      },
      FailureEnvelope: {
        type: 'object',
        required: ['code', 'message'],
        properties: {
          code: { type: 'integer', description: "the spec's numeric code, or -1" },
          message: { type: 'string', description: '<IDENTIFIER>: <detail>' },
        },
      },
    },
  };
}
