// AssemblyAI Universal-Streaming in the API document (src/server/openapi): the socket and the
// temporary-token route, described for people; the mapping is docs/compat.md.
type Json = Record<string, unknown>;

/** The token on the socket; the key (`assemblyAiKey`) is the async API's scheme (../schemas.ts). */
export const ASSEMBLYAI_STREAMING_SECURITY_SCHEMES: Json = {
  assemblyAiToken: {
    type: 'apiKey',
    in: 'query',
    name: 'token',
    description: 'a single-use temporary token from GET /v3/token, on the streaming socket only',
  },
};

const ERROR_BODY: Json = { type: 'object', required: ['error'], properties: { error: { type: 'string' } } };
const errorAnswer = (description: string): Json => ({ description, content: { 'application/json': { schema: ERROR_BODY } } });

export function assemblyAiStreamingPaths(): Record<string, Record<string, Json>> {
  return {
    '/v3/ws': {
      get: {
        operationId: 'assemblyAiStreaming',
        tags: ['AssemblyAI-compatible'],
        summary: "Stream audio as to AssemblyAI's Universal-Streaming API (GET /v3/ws)",
        description: [
          "A WebSocket, as the assemblyai SDK's streaming transcriber opens it (over wss: put TLS in front, docs/compat.md). Query: sample_rate, encoding (pcm_s16le or pcm_mulaw), format_turns, max_turn_silence, keyterms_prompt, language_code; the others AssemblyAI documents are accepted and ignored or refused, as docs/compat.md lists.",
          'Binary messages are audio; text messages Terminate, ForceEndpoint, KeepAlive, UpdateConfiguration. The server sends Begin, Turn (partial and end of turn, with words), Termination.',
          'Refusals come after the upgrade as an error frame and a close code: 4001 not authorized, 3006 input validation, 3009 too many sessions, 1013 try again later. Behind it a native real-time session of the account (History row, Characters), closed with the socket.',
        ].join(' '),
        security: [{ assemblyAiKey: [] }, { assemblyAiToken: [] }],
        parameters: [
          { name: 'sample_rate', in: 'query', required: true, schema: { type: 'integer' }, description: 'Hz of the audio' },
          { name: 'encoding', in: 'query', required: false, schema: { enum: ['pcm_s16le', 'pcm_mulaw'] } },
        ],
        responses: { '101': { description: 'the upgrade: Begin follows once the session is open, or an error frame and a close' } },
        'x-scribed-errors': [],
      },
    },
    '/v3/token': {
      get: {
        operationId: 'assemblyAiStreamingToken',
        tags: ['AssemblyAI-compatible'],
        summary: 'A single-use temporary token for the streaming socket, as AssemblyAI issues one',
        description:
          'Signed, short-lived (expires_in_seconds, 1 to 600) and single-use: the first socket it opens uses it up. max_session_duration_seconds (60 to 10800, default 10800) bounds that socket. docs/compat.md, "Temporary tokens".',
        security: [{ assemblyAiKey: [] }],
        parameters: [
          { name: 'expires_in_seconds', in: 'query', required: true, schema: { type: 'integer', minimum: 1, maximum: 600 } },
          { name: 'max_session_duration_seconds', in: 'query', required: false, schema: { type: 'integer', minimum: 60, maximum: 10800 } },
        ],
        responses: {
          '200': {
            description: 'the token',
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['token', 'expires_in_seconds'],
                  properties: { token: { type: 'string' }, expires_in_seconds: { type: 'integer' } },
                },
              },
            },
          },
          '400': errorAnswer('a missing or out-of-range parameter, or an unknown one'),
          '401': errorAnswer('a missing or unknown access key'),
        },
        'x-scribed-errors': [],
      },
    },
  };
}
