// The endpoint table: one entry per route the server registers (method and path as Fastify
// has them, `{param}` for `:param`). Adding a route means adding its entry here, nothing else;
// test/server/openapi.test.ts names any route the app serves that this table lacks, and any
// entry the app does not serve. Request schemas come from schemas.ts (the validators' own
// limits); error identifiers from the one table, src/core/errors.ts.
import { API } from '../context.js';
import type { Endpoint } from './endpoint.js';
import { CALL_ENDPOINTS } from './calls.js';
import { SEARCH_ENDPOINTS } from './search.js';
import { ANALYTICS_ENDPOINTS } from './analytics.js';
import { DESK_ENDPOINTS } from './desk.js';
import { RECORDING_ENDPOINTS } from './recordings.js';
import {
  RESUME_BODY,
  RESUME_VIEW,
  SESSION_VIEW,
  TICKET_VIEW,
  TRANSCRIPTION_VIEW,
  TRANSCRIPT_CONTENT_TYPES,
  TRANSCRIPT_QUERY,
  createSessionBody,
} from './schemas.js';

const json = <T>(schema: T) => ({ contentType: 'application/json' as const, schema: () => schema, required: true });
const optionalJson = <T>(schema: T) => ({ ...json(schema), required: false });
const envelope = (data: Record<string, unknown>, description: string) => ({ kind: 'envelope' as const, data, description });

const SESSIONS = `${API}/stt/realtime/sessions`;
const TRANSCRIPTIONS = `${API}/stt/transcriptions`;

export const ENDPOINTS: readonly Endpoint[] = [
  // ---------------------------------------------------------------- real-time sessions
  {
    method: 'post',
    path: SESSIONS,
    operationId: 'createSession',
    tag: 'Real-time sessions',
    auth: 'accessKey',
    idempotencyKey: 'required',
    summary: 'Create a real-time session',
    description:
      'The same Idempotency-Key and body return the same session (header idempotent-replayed: true); another body under the key is IDEMPOTENCY_CONFLICT. Lengths count code points.',
    body: { contentType: 'application/json', schema: createSessionBody, required: false },
    response: envelope(SESSION_VIEW, 'the session, RECORDING'),
    errors: ['VALIDATION_FAILED', 'IDEMPOTENCY_CONFLICT', 'NOT_FOUND', 'CALL_SPEAKER_TAKEN', 'CALL_LEG_LIMIT'],
  },
  {
    method: 'get',
    path: `${SESSIONS}/{sessionId}`,
    operationId: 'getSession',
    tag: 'Real-time sessions',
    auth: 'accessKey',
    summary: 'Read a session',
    response: envelope(SESSION_VIEW, 'the session'),
    errors: ['NOT_FOUND'],
  },
  {
    method: 'post',
    path: `${SESSIONS}/{sessionId}/resume`,
    operationId: 'resumeSession',
    tag: 'Real-time sessions',
    auth: 'accessKey',
    summary: 'Open the next epoch of a session',
    description:
      'Frames of the new epoch start at sampleOffset 0; a client that captured more than the server holds re-sends missingSamples (docs/protocol.md, Resume).',
    body: optionalJson(RESUME_BODY),
    response: envelope(RESUME_VIEW, 'the new epoch'),
    errors: ['VALIDATION_FAILED', 'NOT_FOUND', 'SESSION_CLOSED', 'SESSION_BUSY', 'CAPTURE_CURSOR_MISMATCH', 'SESSION_MOVED'],
  },
  {
    method: 'post',
    path: `${SESSIONS}/{sessionId}/close`,
    operationId: 'closeSession',
    tag: 'Real-time sessions',
    auth: 'accessKey',
    summary: 'Close a session without a socket',
    description:
      'Ends a session that never streamed or whose client is gone, as a client `close` would: held audio is transcribed first, an attached socket is sent `closed`. 200 with status COMPLETED; 202 with status PROCESSING while the close waits for deferred recognition (docs/protocol.md). Closing a closed session answers its view again.',
    response: envelope(SESSION_VIEW, 'the closed session'),
    errors: ['NOT_FOUND', 'SESSION_BUSY', 'ENGINE_BUSY', 'ENGINE_FAILED'],
  },
  {
    method: 'post',
    path: `${SESSIONS}/{sessionId}/tickets`,
    operationId: 'createTicket',
    tag: 'Real-time sessions',
    auth: 'accessKey',
    summary: 'Issue a single-use browser ticket for the stream socket',
    response: envelope(TICKET_VIEW, 'the ticket'),
    errors: ['NOT_FOUND', 'SESSION_CLOSED'],
  },
  {
    method: 'get',
    path: `${SESSIONS}/{sessionId}/stream`,
    operationId: 'streamSocket',
    tag: 'Real-time sessions',
    auth: 'socket',
    summary: 'The stream socket (WebSocket): audio in, events out',
    description:
      'Frames, events, acknowledgements and close codes: docs/protocol.md. A refused handshake is a plain HTTP answer in the envelope.',
    response: { kind: 'upgrade', description: 'Switching Protocols: the socket of docs/protocol.md' },
    errors: [
      'UPGRADE_INVALID',
      'ACCESS_KEY_IN_URL',
      'TICKET_INVALID',
      'NOT_FOUND',
      'SESSION_CLOSED',
      'SESSION_BUSY',
      'RESUME_REQUIRED',
      'ENGINE_BUSY',
      'ACCOUNT_STREAM_LIMIT',
    ],
  },
  {
    method: 'get',
    path: `${SESSIONS}/{sessionId}/events`,
    operationId: 'watchSocket',
    tag: 'Real-time sessions',
    auth: 'socket',
    summary: "The watch socket (WebSocket): a read-only copy of a session's events",
    description: 'docs/protocol.md, "Watching a session".',
    response: { kind: 'upgrade', description: 'Switching Protocols: the watch socket of docs/protocol.md' },
    errors: ['UPGRADE_INVALID', 'ACCESS_KEY_IN_URL', 'TICKET_INVALID', 'NOT_FOUND', 'SESSION_CLOSED', 'WATCHER_LIMIT', 'SESSION_ELSEWHERE'],
  },

  // ---------------------------------------------------------------- History and batch
  {
    method: 'get',
    path: `${TRANSCRIPTIONS}/{transcriptionId}`,
    operationId: 'getTranscription',
    tag: 'History and batch',
    auth: 'accessKey',
    summary: 'Read a History row',
    response: envelope(TRANSCRIPTION_VIEW, 'the row'),
    errors: ['NOT_FOUND'],
  },
  {
    method: 'get',
    path: `${TRANSCRIPTIONS}/{transcriptionId}/transcript`,
    operationId: 'getTranscript',
    tag: 'History and batch',
    auth: 'accessKey',
    summary: 'Download the transcript (not enveloped)',
    query: TRANSCRIPT_QUERY,
    response: { kind: 'raw', contentTypes: TRANSCRIPT_CONTENT_TYPES, description: 'the transcript as an attachment' },
    errors: ['VALIDATION_FAILED', 'NOT_FOUND'],
  },
  {
    method: 'delete',
    path: `${TRANSCRIPTIONS}/{transcriptionId}`,
    operationId: 'deleteTranscription',
    tag: 'History and batch',
    auth: 'accessKey',
    summary: 'Erase a History row: its segments, transcript, batch job and audio, and its session (docs/redaction.md)',
    description: "Only a row that has ended (COMPLETED or FAILED). Another account's row reads as not found. Recorded in the audit trail.",
    response: envelope(
      {
        type: 'object',
        required: ['transcriptionId', 'deleted'],
        properties: { transcriptionId: { type: 'string' }, deleted: { const: true } },
      },
      'erased',
    ),
    errors: ['NOT_FOUND', 'TRANSCRIPTION_IN_PROGRESS'],
  },

  // ---------------------------------------------------------------- console
  {
    method: 'get',
    path: '/console',
    operationId: 'consoleRedirect',
    tag: 'Console',
    auth: 'none',
    summary: 'Redirects to /console/',
    response: { kind: 'raw', status: 301, contentTypes: [], description: 'Moved Permanently to /console/' },
    errors: [],
  },
  {
    method: 'get',
    path: '/console/',
    operationId: 'console',
    tag: 'Console',
    auth: 'none',
    summary: 'The live transcript console (docs/console.md)',
    response: { kind: 'raw', contentTypes: ['text/html'], description: 'the page' },
    errors: [],
  },
  {
    method: 'get',
    path: '/console/{file}',
    operationId: 'consoleAsset',
    tag: 'Console',
    auth: 'none',
    summary: "The console's static files",
    response: { kind: 'raw', contentTypes: ['text/javascript', 'text/css'], description: 'the file' },
    errors: ['NOT_FOUND'],
  },

  // ---------------------------------------------------------------- calls (openapi/calls.ts)
  ...CALL_ENDPOINTS,

  // ---------------------------------------------------------------- search (openapi/search.ts)
  ...SEARCH_ENDPOINTS,

  // ---------------------------------------------------------------- conversation analytics (openapi/analytics.ts)
  ...ANALYTICS_ENDPOINTS,
  // ---------------------------------------------------------------- the desk (openapi/desk.ts)
  ...DESK_ENDPOINTS,
  // ---------------------------------------------------------------- recordings (openapi/recordings.ts)
  ...RECORDING_ENDPOINTS,
];
