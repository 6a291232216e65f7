// Calls (routes/calls.ts, docs/calls.md): the shapes, declared once, in the words
// src/core/calls.ts uses. What the schema cannot say is in code: a list cursor this list
// issued (parseCallListQuery); the Idempotency-Key is checked before the body
// (idempotencyKeyFirst).
import { Type, type Static } from 'typebox';
import {
  CALL_TRANSCRIPT_FORMATS,
  CREATE_CALL_KEYS,
  DEFAULT_CALL_PAGE_SIZE,
  DEFAULT_CALL_TITLE,
  MAX_CALL_PAGE_SIZE,
  type ValidCallRequest,
} from '../../core/calls.js';
import { MAX_TITLE_CHARS } from '../../core/session-options.js';
import { API } from '../context.js';
import {
  bodyOptional,
  emptyAbsent,
  envelope,
  invalid,
  operation,
  PATH_PARAM,
  unknownKey,
  type RouteTable,
} from '../openapi/route-schema.js';
import { externalIdParam } from './search.js';
import { CALL_ID, nullable, prefixed, TIMESTAMP } from './shared.js';

const BASE = `${API}/stt/calls`;
const TAG = 'Calls';

const EXTERNAL_ID = externalIdParam(
  "the PBX's own id of the call (Twilio CallSid, AudioSocket UUID, FreeSWITCH uuid); no control characters",
);

export const CREATE_CALL_BODY = Type.Object(
  {
    title: Type.Optional(
      nullable(
        Type.String({
          maxLength: MAX_TITLE_CHARS,
          ...invalid({ type: 'must be a string', default: `must be at most ${MAX_TITLE_CHARS} characters` }),
        }),
        { description: `empty or absent: "${DEFAULT_CALL_TITLE}"` },
      ),
    ),
    externalId: Type.Optional(nullable(EXTERNAL_ID)),
    agentId: Type.Optional(
      nullable(
        externalIdParam(
          "the agent on the call, the contact center's own id (1 to 128 characters, no control characters): the agent's analytics (docs/analytics.md)",
        ),
      ),
    ),
  },
  {
    additionalProperties: false,
    ...invalid('must be a JSON object'),
    ...unknownKey(`unknown field (allowed: ${CREATE_CALL_KEYS.join(', ')})`),
    ...bodyOptional(),
  },
);

const CALL_VIEW = Type.Object({
  callId: CALL_ID,
  externalId: nullable(Type.String()),
  title: Type.String(),
  agentId: nullable(Type.String()),
  status: Type.Enum(['WAITING', 'ACTIVE', 'PROCESSING', 'COMPLETED', 'FAILED'], {
    description:
      'from the legs: WAITING (none yet), ACTIVE (a leg records or is paused), PROCESSING, then FAILED if a leg failed, else COMPLETED',
  }),
  durationMs: Type.Integer({ minimum: 0, description: "the longest leg's audio so far, ms (legs share the call's clock)" }),
  legs: Type.Array(
    Type.Object({
      speaker: Type.String(),
      sessionId: nullable(prefixed('rts', 'null for a batch leg')),
      transcriptionId: prefixed('stt'),
      kind: Type.Enum(['realtime', 'batch']),
      status: Type.String({ description: "the leg's History status" }),
      createdAt: TIMESTAMP,
    }),
    { description: 'in the order they joined' },
  ),
  createdAt: TIMESTAMP,
  updatedAt: TIMESTAMP,
});

const ID = Type.Object({ callId: PATH_PARAM });

export const CALL_ROUTES = {
  create: {
    method: 'POST',
    url: BASE,
    schema: {
      ...operation({
        operationId: 'createCall',
        tag: TAG,
        auth: 'accessKey',
        idempotencyKey: 'required',
        summary: 'Create a call; its legs join as real-time sessions created with callId and speaker',
        description:
          '201 with the call; the same Idempotency-Key and body return it again with 200 (header idempotent-replayed: true); another body under the key is IDEMPOTENCY_CONFLICT. docs/calls.md.',
        errors: ['IDEMPOTENCY_CONFLICT'],
      }),
      body: CREATE_CALL_BODY,
      response: { 200: envelope(CALL_VIEW, 'the call, replayed'), 201: envelope(CALL_VIEW, 'the call, created') },
    },
  },
  list: {
    method: 'GET',
    url: BASE,
    schema: {
      ...operation({
        operationId: 'listCalls',
        tag: TAG,
        auth: 'accessKey',
        summary: "The account's calls, newest first; ?externalId= finds a call by the PBX's id",
        errors: [],
      }),
      querystring: Type.Object(
        {
          limit: Type.Optional(
            Type.Integer({
              minimum: 1,
              maximum: MAX_CALL_PAGE_SIZE,
              default: DEFAULT_CALL_PAGE_SIZE,
              description: 'calls per page',
              ...invalid(`must be an integer from 1 to ${MAX_CALL_PAGE_SIZE}`),
            }),
          ),
          externalId: Type.Optional(externalIdParam("only the calls with this PBX id (e.g. Twilio's CallSid)")),
          cursor: Type.Optional(
            Type.String({ description: 'nextCursor of the previous page', ...invalid('not a cursor returned by this list') }),
          ),
        },
        // An empty externalId is refused (no call has one), an empty limit or cursor is not given.
        emptyAbsent(['limit', 'cursor']),
      ),
      response: { 200: envelope(Type.Object({ items: Type.Array(CALL_VIEW), nextCursor: nullable(Type.String()) }), 'one page') },
    },
  },
  get: {
    method: 'GET',
    url: `${BASE}/:callId`,
    schema: {
      ...operation({ operationId: 'getCall', tag: TAG, auth: 'accessKey', summary: 'Read a call and its legs', errors: ['NOT_FOUND'] }),
      params: ID,
      response: { 200: envelope(CALL_VIEW, 'the call') },
    },
  },
  transcript: {
    method: 'GET',
    url: `${BASE}/:callId/transcript`,
    schema: {
      ...operation({
        operationId: 'getCallTranscript',
        tag: TAG,
        auth: 'accessKey',
        summary: "Every leg's final segments merged by time, each with its speaker (not enveloped)",
        description:
          'txt lines are `[HH:MM:SS.mmm] speaker: text`; json segments carry speaker and transcriptionId; srt and vtt cues start with `speaker: `. A leg still live gives its finals so far.',
        errors: ['NOT_FOUND'],
      }),
      params: ID,
      querystring: Type.Object({
        format: Type.Optional(
          Type.Enum([...CALL_TRANSCRIPT_FORMATS], {
            default: 'json',
            description: 'json, txt, srt or vtt',
            ...invalid(`must be one of ${CALL_TRANSCRIPT_FORMATS.join(', ')}`),
          }),
        ),
      }),
      produces: ['application/json', 'text/plain', 'application/x-subrip', 'text/vtt'],
      response: { 200: Type.String({ description: 'the merged transcript as an attachment' }) },
    },
  },
  delete: {
    method: 'DELETE',
    url: `${BASE}/:callId`,
    schema: {
      ...operation({
        operationId: 'deleteCall',
        tag: TAG,
        auth: 'accessKey',
        summary: 'Erase a call and every leg as DELETE .../stt/transcriptions/{id} does (docs/redaction.md)',
        description: "Nothing is erased while a leg is still recording or processing. Another account's call reads as not found.",
        errors: ['NOT_FOUND', 'TRANSCRIPTION_IN_PROGRESS'],
      }),
      params: ID,
      response: {
        200: envelope(
          Type.Object({ callId: Type.String(), deleted: Type.Literal(true), transcriptionIds: Type.Array(Type.String()) }),
          'erased',
        ),
      },
    },
  },
} as const satisfies RouteTable['routes'];

export const CALL_TABLE: RouteTable = { routes: CALL_ROUTES };

/** A create body as the store takes it: an empty or absent title is the default one. */
export function callRequestOf(body: Static<typeof CREATE_CALL_BODY> | undefined): ValidCallRequest {
  return { title: body?.title || DEFAULT_CALL_TITLE, externalId: body?.externalId ?? null, agentId: body?.agentId ?? null };
}
