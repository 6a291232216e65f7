// TRANSITIONAL: the operations of the routes that do not yet declare their schema
// (route-schema.ts), written from the hand-kept endpoint table (endpoints.ts) as before; the
// document (document.ts) adds them beside the ones @fastify/swagger generates. It goes when
// the last route declares its schema. Pure.
import { ERRORS, type ErrorCode } from '../../core/errors.js';
import type { Endpoint } from './endpoint.js';
import { ENDPOINTS } from './endpoints.js';
import { IDEMPOTENCY_KEY_SCHEMA, type ServerFacts } from './schemas.js';
import type { JsonSchema } from './json-schema.js';
import { deepgramLiveOperation, FACADE_SECURITY_SCHEMES, FACADE_TAGS, facadePaths, openAiRealtimeOperation } from './facades.js';
import { AUDIOHOOK_PATH } from '../audiohook/routes.js';
import { AUDIOHOOK_SECURITY_SCHEMES, audiohookOperation } from '../audiohook/openapi.js';
import { ASSEMBLYAI_SECURITY_SCHEMES } from '../facades/assemblyai/schemas.js';
import { ASSEMBLYAI_STREAMING_SECURITY_SCHEMES, assemblyAiStreamingPaths } from '../facades/assemblyai/streaming/openapi.js';

/** The credentials of the native API and the facades. */
export const SECURITY_SCHEMES = {
  accessKey: { type: 'apiKey', in: 'header', name: 'accessKey', description: 'the account access key (sk_...)' },
  userGroupToken: {
    type: 'apiKey',
    in: 'header',
    name: 'Authorization',
    description: '`Token <token>`: the dashboard API token (tok_...)',
  },
  ticket: { type: 'apiKey', in: 'query', name: 'ticket', description: 'a single-use browser ticket, on the sockets only' },
  ...FACADE_SECURITY_SCHEMES,
  ...AUDIOHOOK_SECURITY_SCHEMES,
  ...ASSEMBLYAI_SECURITY_SCHEMES,
  ...ASSEMBLYAI_STREAMING_SECURITY_SCHEMES,
} as const;

import type { DocumentOptions, OpenApiDocument, Operation } from './document-types.js';

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
  switch (r.kind) {
    case 'envelope':
      return {
        [String(r.status ?? 200)]: {
          description: r.description,
          content: {
            'application/json': { schema: { allOf: [{ $ref: '#/components/schemas/SuccessEnvelope' }, { properties: { data: r.data } }] } },
          },
        },
      };
    case 'dashboard':
      return { '200': { description: r.description, content: { 'application/json': { schema: r.schema } } } };
    case 'raw': {
      if (r.status === 405) return {};
      const content = Object.fromEntries(r.contentTypes.map((t) => [t, r.schema ? { schema: r.schema } : {}]));
      return { [String(r.status ?? 200)]: { description: r.description, ...(r.contentTypes.length > 0 ? { content } : {}) } };
    }
    case 'upgrade':
      return { '101': { description: r.description } };
  }
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
      schema: IDEMPOTENCY_KEY_SCHEMA,
      description: 'the same key and body answer with the first result (header idempotent-replayed: true)',
    });
  }
  for (const [name, p] of Object.entries(e.query ?? {})) {
    parameters.push({ name, in: 'query', required: p.required ?? false, schema: p.schema, description: p.description });
  }
  if (e.auth === 'socket') {
    parameters.push({
      name: 'ticket',
      in: 'query',
      required: false,
      schema: { type: 'string' },
      description: 'a single-use ticket (POST .../tickets) instead of the accessKey header; never an access key',
    });
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

export function bridgeDocument(opts: DocumentOptions = {}, endpoints: readonly Endpoint[] = ENDPOINTS): OpenApiDocument {
  const paths: OpenApiDocument['paths'] = {};
  const tags: string[] = [];
  for (const e of endpoints) {
    if (opts.withoutBatch && e.batchOnly) continue;
    (paths[e.path] ??= {})[e.method] = operation(e, opts);
    if (!tags.includes(e.tag)) tags.push(e.tag);
  }
  // The API facades run as batch jobs (src/server/openapi/facades.ts).
  if (!opts.withoutBatch) {
    Object.assign(paths, facadePaths());
    tags.push(...FACADE_TAGS);
  }
  // Deepgram's live socket drives a native session: served with or without batch.
  Object.assign((paths['/v1/listen'] ??= {}), { get: deepgramLiveOperation() });
  if (!tags.includes('Deepgram-compatible')) tags.push('Deepgram-compatible');
  // So is OpenAI's Realtime transcription socket.
  Object.assign((paths['/v1/realtime'] ??= {}), { get: openAiRealtimeOperation() });
  if (!tags.includes('OpenAI-compatible')) tags.push('OpenAI-compatible');
  // Genesys AudioHook (docs/audiohook.md): served with or without batch.
  Object.assign((paths[AUDIOHOOK_PATH] ??= {}), { get: audiohookOperation() });
  tags.push('Genesys AudioHook');
  // AssemblyAI's streaming socket and its tokens: served with or without batch.
  Object.assign(paths, assemblyAiStreamingPaths());
  if (!tags.includes('AssemblyAI-compatible')) tags.push('AssemblyAI-compatible');
  return {
    openapi: '3.1.0',
    info: {
      title: 'scribed HTTP API',
      version: 'v1',
      description: [
        "Generated from the routes' own rules (src/server/openapi); do not edit a copy of it.",
        "Every /sound_clone/api/v1 answer but downloads is the envelope {code, message, data}; a failure's message starts with its identifier (docs/api.md, Error table).",
        'The stream and watch sockets are described in docs/protocol.md.',
        'No string of a JSON body may contain U+0000 (NUL): such a body is refused with BAD_REQUEST before it is read.',
      ].join(' '),
    },
    tags: tags.map((name) => ({ name })),
    paths,
    components: {
      securitySchemes: SECURITY_SCHEMES,
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
    },
  };
}
