// @fastify/swagger's settings: the document's frame (info, credentials, envelopes) and what it
// adds to each declared route (route-schema.ts): the answers from the one error table
// (src/core/errors.ts) every route of its kind can give, each under its status with its wire
// code. Every route declares its schema; one that declares none is left out of the document
// (test/server/openapi.test.ts names it).
import type { SwaggerOptions } from '@fastify/swagger';
import { ERRORS, type ErrorCode } from '../../core/errors.js';
import { ASSEMBLYAI_SECURITY_SCHEMES } from '../facades/assemblyai/schemas.js';
import { ASSEMBLYAI_STREAMING_SECURITY_SCHEMES } from '../facades/assemblyai/streaming/schemas.js';
import { AUDIOHOOK_SECURITY_SCHEMES } from '../schemas/audiohook.js';
import { DEEPGRAM_SECURITY_SCHEMES } from '../schemas/deepgram.js';
import { OPENAI_SECURITY_SCHEMES } from '../schemas/openai.js';
import { IDEMPOTENCY_KEY } from '../../core/idempotency.js';
import type { DocumentOptions, JsonSchema, OpenApiDocument } from './document-types.js';
import type { Auth } from './route-schema.js';
import { withNodeFacts } from './schemas.js';

interface Declared {
  'x-scribed-auth'?: Auth;
  'x-scribed-errors'?: readonly ErrorCode[];
  'x-scribed-validation-error'?: ErrorCode;
  'x-scribed-idempotency-key'?: 'required' | 'optional';
  body?: unknown;
  querystring?: unknown;
  response?: Record<string, unknown>;
  [key: string]: unknown;
}

/** Every answer a declared route can give: its handler's, and those of its kind (a credential,
 * a body, a query, a path parameter). */
export function errorsOf(s: Declared, url: string): ErrorCode[] {
  const codes = new Set<ErrorCode>();
  const auth = s['x-scribed-auth'] ?? 'none';
  if (auth !== 'none') codes.add('UNAUTHORIZED');
  if (s['x-scribed-idempotency-key']) codes.add('IDEMPOTENCY_KEY_REQUIRED');
  const validation = s['x-scribed-validation-error'] ?? 'VALIDATION_FAILED';
  if (s.body) {
    codes.add('BAD_REQUEST');
    codes.add('PAYLOAD_TOO_LARGE');
    codes.add(validation);
  }
  // A socket's query carries only the ticket, which the handshake checks itself.
  if (s.querystring && auth !== 'socket') codes.add(validation);
  for (const c of s['x-scribed-errors'] ?? []) codes.add(c);
  if (url.includes(':')) codes.add('URI_TOO_LONG');
  codes.add('INTERNAL');
  return [...codes];
}

/** The failure body of one HTTP status: its identifiers' wire codes, the message prefixed with
 * one of the identifiers. */
function failureSchema(auth: Auth, codes: ErrorCode[]): JsonSchema {
  const message = { type: 'string', pattern: `^(?:${codes.join('|')}): `, description: '<IDENTIFIER>: <detail>' };
  if (auth === 'userGroupToken')
    return { type: 'object', required: ['success', 'message'], properties: { success: { const: 0 }, message } };
  const wires = [...new Set(codes.map((c) => ERRORS[c].wire))];
  return { type: 'object', required: ['code', 'message'], properties: { code: { enum: wires }, message } };
}

/** A schema with the rules it states for the document only (route-schema.ts) and the serving
 * node's facts (schemas.ts), at any depth. */
function withDocumentedRules(schema: unknown, facts: DocumentOptions): unknown {
  if (Array.isArray(schema)) return schema.map((s) => withDocumentedRules(s, facts));
  if (!schema || typeof schema !== 'object') return schema;
  const { 'x-documented': rules, ...rest } = withNodeFacts(schema as Record<string, unknown>, facts);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(rest)) out[k] = k === 'enum' || k === 'const' || k === 'default' ? v : withDocumentedRules(v, facts);
  return rules ? { ...out, ...(rules as Record<string, unknown>) } : out;
}

function documented(s: Declared, url: string, facts: DocumentOptions): Declared {
  // A facade's route (src/server/facades) answers in its API's shape and states its own
  // errors; none of the native envelope's are added.
  if (s['x-scribed-facade'] === true) {
    const { 'x-scribed-auth': _a, 'x-scribed-facade': _f, ...rest } = s;
    return { ...rest, 'x-scribed-errors': [], 'x-scribed-validation-error': undefined };
  }
  const errors = errorsOf(s, url);
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of errors) byStatus.set(ERRORS[code].http, [...(byStatus.get(ERRORS[code].http) ?? []), code]);
  const response: Record<string, unknown> = { ...s.response };
  for (const [status, codes] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    response[String(status)] = {
      description: codes.map((c) => `${c}: ${ERRORS[c].summary}`).join('; '),
      ...failureSchema(s['x-scribed-auth'] ?? 'none', codes),
    };
  }
  const { 'x-scribed-auth': _auth, 'x-scribed-idempotency-key': idempotency, ...rest } = s;
  return {
    ...rest,
    ...(idempotency
      ? {
          headers: {
            type: 'object',
            properties: {
              'Idempotency-Key': {
                type: 'string',
                pattern: IDEMPOTENCY_KEY.source,
                description:
                  '16 to 64 printable ASCII characters; the same key and body answer with the first result (header idempotent-replayed: true)',
              },
            },
            ...(idempotency === 'required' ? { required: ['Idempotency-Key'] } : {}),
          },
        }
      : {}),
    ...(s.body ? { body: withDocumentedRules(s.body, facts) } : {}),
    ...(s.querystring ? { querystring: withDocumentedRules(s.querystring, facts) } : {}),
    response,
    'x-scribed-errors': errors,
    ...(s.body || (s.querystring && s['x-scribed-auth'] !== 'socket') ? {} : { 'x-scribed-validation-error': undefined }),
  };
}

/** The credentials of the native API and the facades (each route names its own, route-schema.ts). */
export const SECURITY_SCHEMES = {
  accessKey: { type: 'apiKey', in: 'header', name: 'accessKey', description: 'the account access key (sk_...)' },
  userGroupToken: {
    type: 'apiKey',
    in: 'header',
    name: 'Authorization',
    description: '`Token <token>`: the dashboard API token (tok_...)',
  },
  ticket: { type: 'apiKey', in: 'query', name: 'ticket', description: 'a single-use browser ticket, on the sockets only' },
  ...OPENAI_SECURITY_SCHEMES,
  ...DEEPGRAM_SECURITY_SCHEMES,
  ...AUDIOHOOK_SECURITY_SCHEMES,
  ...ASSEMBLYAI_SECURITY_SCHEMES,
  ...ASSEMBLYAI_STREAMING_SECURITY_SCHEMES,
} as const;

const INFO = {
  title: 'scribed HTTP API',
  version: 'v1',
  description: [
    "Generated from the routes' own schemas (src/server/schemas, through @fastify/swagger); do not edit a copy of it.",
    "Every /sound_clone/api/v1 answer but downloads is the envelope {code, message, data}; a failure's message starts with its identifier (docs/api.md, Error table).",
    'The stream and watch sockets are described in docs/protocol.md.',
    'No string of a JSON body may contain U+0000 (NUL): such a body is refused with BAD_REQUEST before it is read.',
  ].join(' '),
};

export function swaggerOptions(opts: DocumentOptions): SwaggerOptions {
  return {
    openapi: { openapi: '3.1.0', info: INFO, components: { securitySchemes: SECURITY_SCHEMES as never } },
    transform: ({ schema, url }) => {
      const declared = schema as Declared | undefined;
      if (!declared?.['x-scribed-errors']) return { schema: { ...declared, hide: true }, url };
      // A GET's JSON body (route-schema.ts, bodyOnGet) is documented as its request body.
      const { 'x-scribed-get-body': getBody, security, ...s } = declared;
      if (getBody) s.body = getBody;
      // @fastify/swagger leaves a query parameter a credential scheme names (the sockets'
      // ticket) out of the parameters when the route lists that scheme: the route's security
      // is set back in transformObject, so its declared query is documented whole.
      return { schema: { ...documented(s, url, opts), 'x-scribed-security': security } as never, url };
    },
    transformObject: (documentObject) => {
      const generated = (documentObject as unknown as { openapiObject: OpenApiDocument }).openapiObject;
      const paths: OpenApiDocument['paths'] = {};
      for (const [p, ops] of Object.entries(generated.paths ?? {})) {
        for (const [method, generatedOp] of Object.entries(ops)) {
          const { 'x-scribed-security': security, ...rest } = generatedOp;
          const op = { ...rest, security } as typeof generatedOp;
          if (op['x-scribed-validation-error'] === undefined) delete op['x-scribed-validation-error'];
          // A body the route takes as {} when none is sent (route-schema.ts, bodyOptional).
          const body = op.requestBody as { required?: boolean; content?: Record<string, { schema?: JsonSchema }> } | undefined;
          if (body?.content?.['application/json']?.schema?.['x-body-optional'] === true) body.required = false;
          (paths[p] ??= {})[method] = op;
        }
      }
      const tags: string[] = [];
      for (const ops of Object.values(paths))
        for (const op of Object.values(ops)) for (const t of (op.tags as string[] | undefined) ?? []) if (!tags.includes(t)) tags.push(t);
      return {
        openapi: '3.1.0',
        info: INFO,
        tags: tags.map((name) => ({ name })),
        paths,
        components: { securitySchemes: SECURITY_SCHEMES },
      } as never;
    },
  };
}
