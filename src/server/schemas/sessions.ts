// Real-time sessions (routes/sessions.ts): the shapes of the routes that take no body, declared
// once: read, close, tickets. Create and resume are still in the hand-written document
// (openapi/endpoints.ts): their bodies are checked by src/core/session-options.ts, whose
// language rule depends on the node's recognizer.
import { Type } from 'typebox';
import { API, MODEL_ID } from '../context.js';
import { envelope, operation, PATH_PARAM, type RouteTable } from '../openapi/route-schema.js';
import { ANY_OBJECT, DECIMAL, LEG_FIELDS, nullable, prefixed, TIMESTAMP } from './shared.js';

const BASE = `${API}/stt/realtime/sessions`;
const TAG = 'Real-time sessions';

const SESSION_VIEW = Type.Object({
  sessionId: prefixed('rts'),
  transcriptionId: prefixed('stt'),
  status: Type.String({ description: 'RECORDING, PAUSED or CLOSED; once closed, the transcription task status' }),
  modelId: Type.Unsafe<string>({ type: 'string', const: MODEL_ID }),
  streamUrl: Type.String({ description: 'socket path (docs/protocol.md)' }),
  title: Type.String(),
  languageHint: nullable(Type.String()),
  effectiveOptions: ANY_OBJECT('every option in effect, defaults resolved'),
  epoch: Type.Integer(),
  capturedSamples: DECIMAL,
  ...LEG_FIELDS,
  createdAt: TIMESTAMP,
  updatedAt: TIMESTAMP,
});

const ID = Type.Object({ sessionId: PATH_PARAM });

export const SESSION_ROUTES = {
  get: {
    method: 'GET',
    url: `${BASE}/:sessionId`,
    schema: {
      ...operation({ operationId: 'getSession', tag: TAG, auth: 'accessKey', summary: 'Read a session', errors: ['NOT_FOUND'] }),
      params: ID,
      response: { 200: envelope(SESSION_VIEW, 'the session') },
    },
  },
  close: {
    method: 'POST',
    url: `${BASE}/:sessionId/close`,
    schema: {
      ...operation({
        operationId: 'closeSession',
        tag: TAG,
        auth: 'accessKey',
        summary: 'Close a session without a socket',
        description:
          'Ends a session that never streamed or whose client is gone, as a client `close` would: held audio is transcribed first, an attached socket is sent `closed`. 200 with status COMPLETED; 202 with status PROCESSING while the close waits for deferred recognition (docs/protocol.md). Closing a closed session answers its view again.',
        errors: ['NOT_FOUND', 'SESSION_BUSY', 'ENGINE_BUSY', 'ENGINE_FAILED'],
      }),
      params: ID,
      response: {
        200: envelope(SESSION_VIEW, 'the closed session'),
        202: envelope(SESSION_VIEW, 'the close waits for deferred recognition: status PROCESSING'),
      },
    },
  },
  tickets: {
    method: 'POST',
    url: `${BASE}/:sessionId/tickets`,
    schema: {
      ...operation({
        operationId: 'createTicket',
        tag: TAG,
        auth: 'accessKey',
        summary: 'Issue a single-use browser ticket for the stream socket',
        errors: ['NOT_FOUND', 'SESSION_CLOSED'],
      }),
      params: ID,
      response: {
        200: envelope(
          Type.Object({
            ticketId: prefixed('tkt'),
            sessionId: prefixed('rts'),
            streamUrl: Type.String(),
            expiresInSeconds: Type.Integer(),
            ticket: Type.String({ description: 'single use; goes in ?ticket= of the socket URL' }),
          }),
          'the ticket',
        ),
      },
    },
  },
} as const satisfies RouteTable['routes'];

export const SESSION_TABLE: RouteTable = { routes: SESSION_ROUTES };
