// The AudioHook endpoint in the API document (src/server/openapi): a WebSocket Genesys opens,
// described for people; the protocol itself is docs/audiohook.md.
type Json = Record<string, unknown>;

export const AUDIOHOOK_SECURITY_SCHEMES: Json = {
  audiohookApiKey: {
    type: 'apiKey',
    in: 'header',
    name: 'X-API-KEY',
    description: "a scribed access key (the Genesys AudioHook integration's API key)",
  },
};

export function audiohookOperation(): Json {
  const uuid = (name: string) => ({ name, in: 'header', required: true, schema: { type: 'string', format: 'uuid' } });
  return {
    operationId: 'audiohookV2',
    tags: ['Genesys AudioHook'],
    summary: 'Genesys AudioHook protocol version 2 (WebSocket)',
    description: [
      "A WebSocket for Genesys Cloud's AudioHook Monitor: each conversation a call, each channel (external: customer, internal: agent) a real-time session, transcripts sent back as transcript events.",
      'When the organization has a client secret configured (SCRIBED_AUDIOHOOK_SECRETS_FILE) the upgrade must carry a valid HTTP Message Signature (signature-input, signature). docs/audiohook.md.',
    ].join(' '),
    security: [{ audiohookApiKey: [] }],
    parameters: [uuid('Audiohook-Organization-Id'), uuid('Audiohook-Session-Id'), uuid('Audiohook-Correlation-Id')],
    responses: {
      '101': { description: "the upgrade: the AudioHook session starts with the client's open" },
      '400': {
        description: 'an AudioHook header missing or not a UUID',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              properties: { status: { type: 'integer' }, reason: { type: 'string' }, message: { type: 'string' } },
            },
          },
        },
      },
      '401': {
        description: 'an unknown X-API-KEY, or a missing, wrong, expired or replayed signature',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              properties: { status: { type: 'integer' }, reason: { type: 'string' }, message: { type: 'string' } },
            },
          },
        },
      },
    },
    'x-scribed-errors': [],
  };
}
