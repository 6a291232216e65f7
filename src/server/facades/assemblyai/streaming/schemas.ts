// AssemblyAI Universal-Streaming (docs/compat.md): the socket and the temporary-token route,
// declared once. Their answers are AssemblyAI's (the socket refuses after the upgrade, with an
// error frame and a close code). The queries are read by params.ts and socket.ts, which refuse
// in AssemblyAI's words, so they are stated for the document only (servedWithout).
import { Type } from 'typebox';
import type { RouteTable } from '../../../openapi/route-schema.js';
import { facadeErrors, facadeOperation } from '../../../schemas/shared.js';

const TAG = 'AssemblyAI-compatible';

/** The token on the socket; the key (`assemblyAiKey`) is the async API's scheme (../schemas.ts). */
export const ASSEMBLYAI_STREAMING_SECURITY_SCHEMES = {
  assemblyAiToken: {
    type: 'apiKey',
    in: 'query',
    name: 'token',
    description: 'a single-use temporary token from GET /v3/token, on the streaming socket only',
  },
} as const;

const ERROR = Type.Object({ error: Type.String() });

export const ASSEMBLYAI_STREAMING_ROUTES = {
  socket: {
    method: 'GET',
    url: '/v3/ws',
    schema: {
      ...facadeOperation(
        {
          operationId: 'assemblyAiStreaming',
          tag: TAG,
          summary: "Stream audio as to AssemblyAI's Universal-Streaming API (GET /v3/ws)",
          description: [
            "A WebSocket, as the assemblyai SDK's streaming transcriber opens it (over wss: put TLS in front, docs/compat.md). Query: sample_rate, encoding (pcm_s16le or pcm_mulaw), format_turns, max_turn_silence, keyterms_prompt, language_code; the others AssemblyAI documents are accepted and ignored or refused, as docs/compat.md lists.",
            'Binary messages are audio; text messages Terminate, ForceEndpoint, KeepAlive, UpdateConfiguration. The server sends Begin, Turn (partial and end of turn, with words), Termination.',
            'Refusals come after the upgrade as an error frame and a close code: 4001 not authorized, 3006 input validation, 3009 too many sessions, 1013 try again later. Behind it a native real-time session of the account (History row, Characters), closed with the socket.',
          ].join(' '),
        },
        [{ assemblyAiKey: [] }, { assemblyAiToken: [] }],
      ),
      querystring: Type.Object({
        sample_rate: Type.Integer({ description: 'Hz of the audio' }),
        encoding: Type.Optional(Type.Enum(['pcm_s16le', 'pcm_mulaw'])),
      }),
      response: { 101: Type.Null({ description: 'the upgrade: Begin follows once the session is open, or an error frame and a close' }) },
    },
  },
  token: {
    method: 'GET',
    url: '/v3/token',
    schema: {
      ...facadeOperation(
        {
          operationId: 'assemblyAiStreamingToken',
          tag: TAG,
          summary: 'A single-use temporary token for the streaming socket, as AssemblyAI issues one',
          description:
            'Signed, short-lived (expires_in_seconds, 1 to 600) and single-use: the first socket it opens uses it up. max_session_duration_seconds (60 to 10800, default 10800) bounds that socket. docs/compat.md, "Temporary tokens".',
        },
        [{ assemblyAiKey: [] }],
      ),
      querystring: Type.Object({
        expires_in_seconds: Type.Integer({ minimum: 1, maximum: 600 }),
        max_session_duration_seconds: Type.Optional(Type.Integer({ minimum: 60, maximum: 10800 })),
      }),
      response: {
        200: Type.Object({ token: Type.String(), expires_in_seconds: Type.Integer() }, { description: 'the token' }),
        ...facadeErrors(ERROR, {
          400: 'a missing or out-of-range parameter, or an unknown one',
          401: 'a missing or unknown access key',
        }),
      },
    },
  },
} as const satisfies RouteTable['routes'];

/** Served on every node, with or without batch. */
export const ASSEMBLYAI_STREAMING_TABLE: RouteTable = { routes: ASSEMBLYAI_STREAMING_ROUTES };
