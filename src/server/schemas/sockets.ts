// The native sockets of a real-time session (src/server/ws, docs/protocol.md): the stream socket
// and the watch socket, declared once. Their handshake is answered before the upgrade, as a
// plain HTTP answer in the envelope; the query carries only the single-use ticket, which
// identify() checks itself (ACCESS_KEY_IN_URL, TICKET_INVALID), so the query is stated for the
// document only (servedWithout) and adds no validation answer (swagger.ts).
import { Type } from 'typebox';
import { API } from '../context.js';
import { operation, PATH_PARAM, type RouteTable } from '../openapi/route-schema.js';

const BASE = `${API}/stt/realtime/sessions`;
const TAG = 'Real-time sessions';
const ID = Type.Object({ sessionId: PATH_PARAM });
const TICKET = Type.Object({
  ticket: Type.Optional(
    Type.String({ description: 'a single-use ticket (POST .../tickets) instead of the accessKey header; never an access key' }),
  ),
});

export const SOCKET_ROUTES = {
  stream: {
    method: 'GET',
    url: `${BASE}/:sessionId/stream`,
    schema: {
      ...operation({
        operationId: 'streamSocket',
        tag: TAG,
        auth: 'socket',
        summary: 'The stream socket (WebSocket): audio in, events out',
        description:
          'Frames, events, acknowledgements and close codes: docs/protocol.md. A refused handshake is a plain HTTP answer in the envelope.',
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
      }),
      params: ID,
      querystring: TICKET,
      response: { 101: Type.Null({ description: 'Switching Protocols: the socket of docs/protocol.md' }) },
    },
  },
  watch: {
    method: 'GET',
    url: `${BASE}/:sessionId/events`,
    schema: {
      ...operation({
        operationId: 'watchSocket',
        tag: TAG,
        auth: 'socket',
        summary: "The watch socket (WebSocket): a read-only copy of a session's events",
        description: 'docs/protocol.md, "Watching a session".',
        errors: [
          'UPGRADE_INVALID',
          'ACCESS_KEY_IN_URL',
          'TICKET_INVALID',
          'NOT_FOUND',
          'SESSION_CLOSED',
          'WATCHER_LIMIT',
          'SESSION_ELSEWHERE',
        ],
      }),
      params: ID,
      querystring: TICKET,
      response: { 101: Type.Null({ description: 'Switching Protocols: the watch socket of docs/protocol.md' }) },
    },
  },
} as const satisfies RouteTable['routes'];

export const SOCKET_TABLE: RouteTable = { routes: SOCKET_ROUTES };
