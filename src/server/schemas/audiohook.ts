// Genesys AudioHook (src/server/audiohook, docs/audiohook.md): the WebSocket Genesys opens,
// declared once. Its handshake checks the AudioHook headers and the signature itself and
// refuses in AudioHook's shape (audiohook/errors.ts), so the headers are stated for the
// document only (servedWithout); the protocol itself is docs/audiohook.md.
import { Type } from 'typebox';
import type { RouteTable } from '../openapi/route-schema.js';
import { facadeErrors, facadeOperation } from './shared.js';

export const AUDIOHOOK_SECURITY_SCHEMES = {
  audiohookApiKey: {
    type: 'apiKey',
    in: 'header',
    name: 'X-API-KEY',
    description: "a scribed access key (the Genesys AudioHook integration's API key)",
  },
} as const;

const UUID = Type.String({ format: 'uuid' });
const REFUSAL = Type.Object({
  status: Type.Optional(Type.Integer()),
  reason: Type.Optional(Type.String()),
  message: Type.Optional(Type.String()),
});

export const AUDIOHOOK_ROUTES = {
  audiohook: {
    method: 'GET',
    url: '/audiohook/v2',
    schema: {
      ...facadeOperation(
        {
          operationId: 'audiohookV2',
          tag: 'Genesys AudioHook',
          summary: 'Genesys AudioHook protocol version 2 (WebSocket)',
          description: [
            "A WebSocket for Genesys Cloud's AudioHook Monitor: each conversation a call, each channel (external: customer, internal: agent) a real-time session, transcripts sent back as transcript events.",
            'When the organization has a client secret configured (SCRIBED_AUDIOHOOK_SECRETS_FILE) the upgrade must carry a valid HTTP Message Signature (signature-input, signature). docs/audiohook.md.',
          ].join(' '),
        },
        [{ audiohookApiKey: [] }],
      ),
      headers: Type.Object({
        'Audiohook-Organization-Id': UUID,
        'Audiohook-Session-Id': UUID,
        'Audiohook-Correlation-Id': UUID,
      }),
      response: {
        101: Type.Null({ description: "the upgrade: the AudioHook session starts with the client's open" }),
        ...facadeErrors(REFUSAL, {
          400: 'an AudioHook header missing or not a UUID',
          401: 'an unknown X-API-KEY, or a missing, wrong, expired or replayed signature',
        }),
      },
    },
  },
} as const satisfies RouteTable['routes'];

export const AUDIOHOOK_TABLE: RouteTable = { routes: AUDIOHOOK_ROUTES };
