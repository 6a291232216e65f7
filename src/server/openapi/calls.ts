// The calls endpoints (src/server/routes/calls.ts, docs/calls.md) in the API document: their
// schemas, from the limits src/core/calls.ts validates with, and their table entries, spread
// into ENDPOINTS (endpoints.ts). The create-session body's call fields are here too.
import {
  CALL_TRANSCRIPT_FORMATS,
  DEFAULT_CALL_PAGE_SIZE,
  DEFAULT_CALL_TITLE,
  MAX_CALL_LEGS,
  MAX_CALL_PAGE_SIZE,
  MAX_EXTERNAL_ID_CHARS,
  SPEAKER_PATTERN,
} from '../../core/calls.js';
import { ID_BODY_CHARS } from '../../core/ids.js';
import { MAX_TITLE_CHARS } from '../../core/session-options.js';
import { API } from '../context.js';
import type { Endpoint } from './endpoint.js';
import { nullable, object, text, type JsonSchema } from './json-schema.js';

const CALLS = `${API}/stt/calls`;
const STRING: JsonSchema = { type: 'string' };
const TIMESTAMP: JsonSchema = { type: 'string', description: 'ISO 8601 UTC time' };
const CALL_ID: JsonSchema = {
  type: 'string',
  pattern: `^call_[0-9a-hjkmnp-tv-z]{${ID_BODY_CHARS}}$`,
  description: 'a call id (POST .../stt/calls)',
};
const EXTERNAL_ID: JsonSchema = {
  ...text(1, MAX_EXTERNAL_ID_CHARS),
  pattern: '^[^\\u0000-\\u001f\\u007f]*$',
  description: "the PBX's own id of the call (Twilio CallSid, AudioSocket UUID, FreeSWITCH uuid); no control characters",
};
const SPEAKER: JsonSchema = {
  type: 'string',
  pattern: SPEAKER_PATTERN.source,
  description: "the leg's speaker label: agent, customer, inbound, outbound, a PBX channel name",
};

/** The create-session body's fields that make the session a leg of a call: both or neither. */
export const SESSION_CALL_FIELDS: Record<string, JsonSchema> = {
  callId: { ...CALL_ID, description: `join this call (another account's or unknown: NOT_FOUND); with speaker` },
  speaker: {
    ...SPEAKER,
    description: `the leg's speaker in the call, unique there (CALL_SPEAKER_TAKEN); with callId; at most ${MAX_CALL_LEGS} legs a call`,
  },
};
/** dependentRequired for SESSION_CALL_FIELDS. */
export const SESSION_CALL_DEPENDENCIES = { callId: ['speaker'], speaker: ['callId'] };

/** callId and speaker on a session and a History row: null outside any call. */
export const LEG_FIELDS: Record<string, JsonSchema> = { callId: nullable(CALL_ID), speaker: nullable(SPEAKER) };

export const CREATE_CALL_BODY: JsonSchema = object(
  {
    title: nullable(text(0, MAX_TITLE_CHARS, { description: `empty or absent: "${DEFAULT_CALL_TITLE}"` })),
    externalId: nullable(EXTERNAL_ID),
    agentId: nullable({
      ...EXTERNAL_ID,
      description:
        "the agent on the call, the contact center's own id (1 to 128 characters, no control characters): the agent's analytics (docs/analytics.md)",
    }),
  },
  [],
  { closed: true },
);

const CALL_STATUS: JsonSchema = {
  enum: ['WAITING', 'ACTIVE', 'PROCESSING', 'COMPLETED', 'FAILED'],
  description:
    'from the legs: WAITING (none yet), ACTIVE (a leg records or is paused), PROCESSING, then FAILED if a leg failed, else COMPLETED',
};

export const CALL_VIEW: JsonSchema = object(
  {
    callId: CALL_ID,
    externalId: nullable(STRING),
    title: STRING,
    agentId: nullable(STRING),
    status: CALL_STATUS,
    durationMs: { type: 'integer', minimum: 0, description: "the longest leg's audio so far, ms (legs share the call's clock)" },
    legs: {
      type: 'array',
      description: 'in the order they joined',
      items: object(
        {
          speaker: STRING,
          sessionId: nullable({ type: 'string', pattern: '^rts_', description: 'null for a batch leg' }),
          transcriptionId: { type: 'string', pattern: '^stt_' },
          kind: { enum: ['realtime', 'batch'] },
          status: { type: 'string', description: "the leg's History status" },
          createdAt: TIMESTAMP,
        },
        ['speaker', 'sessionId', 'transcriptionId', 'kind', 'status', 'createdAt'],
      ),
    },
    createdAt: TIMESTAMP,
    updatedAt: TIMESTAMP,
  },
  ['callId', 'externalId', 'title', 'status', 'durationMs', 'legs', 'createdAt', 'updatedAt'],
);

const CALL_PAGE: JsonSchema = object({ items: { type: 'array', items: CALL_VIEW }, nextCursor: nullable(STRING) }, ['items', 'nextCursor']);

const CALL_LIST_QUERY = {
  externalId: { schema: EXTERNAL_ID, description: "only the calls with this PBX id (e.g. Twilio's CallSid)" },
  limit: {
    schema: { type: 'integer', minimum: 1, maximum: MAX_CALL_PAGE_SIZE, default: DEFAULT_CALL_PAGE_SIZE },
    description: 'calls per page',
  },
  cursor: { schema: STRING, description: 'nextCursor of the previous page' },
};

const CONTENT_TYPES = ['application/json', 'text/plain', 'application/x-subrip', 'text/vtt'];

export const CALL_ENDPOINTS: readonly Endpoint[] = [
  {
    method: 'post',
    path: CALLS,
    operationId: 'createCall',
    tag: 'Calls',
    auth: 'accessKey',
    idempotencyKey: 'required',
    summary: 'Create a call; its legs join as real-time sessions created with callId and speaker',
    description:
      '201 with the call; the same Idempotency-Key and body return it again with 200 (header idempotent-replayed: true); another body under the key is IDEMPOTENCY_CONFLICT. docs/calls.md.',
    body: { contentType: 'application/json', schema: () => CREATE_CALL_BODY, required: false },
    response: { kind: 'envelope', data: CALL_VIEW, description: 'the call, created', status: 201 },
    errors: ['VALIDATION_FAILED', 'IDEMPOTENCY_CONFLICT'],
  },
  {
    method: 'get',
    path: CALLS,
    operationId: 'listCalls',
    tag: 'Calls',
    auth: 'accessKey',
    summary: "The account's calls, newest first; ?externalId= finds a call by the PBX's id",
    query: CALL_LIST_QUERY,
    response: { kind: 'envelope', data: CALL_PAGE, description: 'one page' },
    errors: ['VALIDATION_FAILED'],
  },
  {
    method: 'get',
    path: `${CALLS}/{callId}`,
    operationId: 'getCall',
    tag: 'Calls',
    auth: 'accessKey',
    summary: 'Read a call and its legs',
    response: { kind: 'envelope', data: CALL_VIEW, description: 'the call' },
    errors: ['NOT_FOUND'],
  },
  {
    method: 'get',
    path: `${CALLS}/{callId}/transcript`,
    operationId: 'getCallTranscript',
    tag: 'Calls',
    auth: 'accessKey',
    summary: "Every leg's final segments merged by time, each with its speaker (not enveloped)",
    description:
      'txt lines are `[HH:MM:SS.mmm] speaker: text`; json segments carry speaker and transcriptionId; srt and vtt cues start with `speaker: `. A leg still live gives its finals so far.',
    query: { format: { schema: { enum: [...CALL_TRANSCRIPT_FORMATS], default: 'json' }, description: 'json, txt, srt or vtt' } },
    response: { kind: 'raw', contentTypes: CONTENT_TYPES, description: 'the merged transcript as an attachment' },
    errors: ['VALIDATION_FAILED', 'NOT_FOUND'],
  },
  {
    method: 'delete',
    path: `${CALLS}/{callId}`,
    operationId: 'deleteCall',
    tag: 'Calls',
    auth: 'accessKey',
    summary: 'Erase a call and every leg as DELETE .../stt/transcriptions/{id} does (docs/redaction.md)',
    description: "Nothing is erased while a leg is still recording or processing. Another account's call reads as not found.",
    response: {
      kind: 'envelope',
      data: {
        type: 'object',
        required: ['callId', 'deleted', 'transcriptionIds'],
        properties: {
          callId: { type: 'string' },
          deleted: { const: true },
          transcriptionIds: { type: 'array', items: { type: 'string' } },
        },
      },
      description: 'erased',
    },
    errors: ['NOT_FOUND', 'TRANSCRIPTION_IN_PROGRESS'],
  },
];
