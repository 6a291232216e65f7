// The endpoint table: one entry per route the server registers (method and path as Fastify
// has them, `{param}` for `:param`). Adding a route means adding its entry here, nothing else;
// test/server/openapi.test.ts names any route the app serves that this table lacks, and any
// entry the app does not serve. Request schemas come from schemas.ts (the validators' own
// limits); error identifiers from the one table, src/core/errors.ts.
import { API } from '../context.js';
import type { Endpoint } from './endpoint.js';
import { DESK_ENDPOINTS } from './desk.js';
import { RESUME_BODY, RESUME_VIEW, SESSION_VIEW, createSessionBody } from './schemas.js';

const json = <T>(schema: T) => ({ contentType: 'application/json' as const, schema: () => schema, required: true });
const optionalJson = <T>(schema: T) => ({ ...json(schema), required: false });
const envelope = (data: Record<string, unknown>, description: string) => ({ kind: 'envelope' as const, data, description });

const SESSIONS = `${API}/stt/realtime/sessions`;

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

  // ---------------------------------------------------------------- the desk (openapi/desk.ts)
  ...DESK_ENDPOINTS,
];
