// Genesys AudioHook (protocol version 2) on `GET /audiohook/v2` (docs/audiohook.md). Before
// the upgrade: the AudioHook headers (organization, session and correlation ids, each a UUID),
// `X-API-KEY` as a scribed access key, and, when the organization has a client secret
// configured, the request's HTTP Message Signature (src/core/audiohook/signature.ts) with a
// nonce not seen before on this node. A refusal is an HTTP status (400 or 401) before any
// socket exists. After it, connection.ts runs the session.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { isUuid } from '../../core/audiohook/messages.js';
import { SignatureError, verifySignature } from '../../core/audiohook/signature.js';
import { ScribedError } from '../../core/errors.js';
import { authenticate, headerValue } from '../auth.js';
import type { AppContext } from '../context.js';
import { AudiohookConnection, type ConnectionInfo } from './connection.js';
import { AudiohookRefusal, sendRefusal } from './errors.js';
import { audiohookMetrics } from './metrics.js';
import { audiohookRegistryOf } from './registry.js';
import { servedWithout } from '../openapi/route-schema.js';
import { AUDIOHOOK_ROUTES } from '../schemas/audiohook.js';

/** Nonces remembered per node (a replayed signed upgrade is refused within its validity). */
const MAX_NONCES = 100_000;

declare module 'fastify' {
  interface FastifyRequest {
    audiohook?: ConnectionInfo;
  }
}

/** Nonces of accepted signatures until they expire. */
class NonceCache {
  private readonly seen = new Map<string, number>();
  /** False when the nonce was seen (a replay). */
  add(nonce: string, expiresS: number, nowS: number): boolean {
    if (this.seen.size >= MAX_NONCES) for (const [n, exp] of this.seen) if (exp < nowS || this.seen.size >= MAX_NONCES) this.seen.delete(n);
    const known = this.seen.get(nonce);
    if (known !== undefined && known >= nowS) return false;
    this.seen.set(nonce, expiresS);
    return true;
  }
}

export function audiohookRoutes(ctx: AppContext): FastifyPluginAsync {
  const metrics = audiohookMetrics(ctx.metrics.registry);
  const registry = audiohookRegistryOf(ctx);
  const nonces = new NonceCache();

  async function handshake(req: FastifyRequest): Promise<ConnectionInfo> {
    const h = (name: string) => headerValue(req.headers[name]);
    const organizationId = h('audiohook-organization-id');
    const sessionId = h('audiohook-session-id');
    const correlationId = h('audiohook-correlation-id');
    const apiKey = h('x-api-key');
    for (const [name, value] of [
      ['Audiohook-Organization-Id', organizationId],
      ['Audiohook-Session-Id', sessionId],
      ['Audiohook-Correlation-Id', correlationId],
    ] as const) {
      if (!isUuid(value)) throw new AudiohookRefusal(400, 'headers', `${name} must be a UUID`);
    }
    if (!apiKey) throw new AudiohookRefusal(401, 'auth', 'X-API-KEY is missing');
    let accountId: string;
    try {
      accountId = await authenticate(ctx.store, 'access_key', apiKey);
    } catch (err) {
      if (err instanceof ScribedError && err.code === 'UNAUTHORIZED')
        throw new AudiohookRefusal(401, 'auth', 'X-API-KEY is not a scribed access key');
      throw err;
    }
    const secret = ctx.config.audiohookClientSecrets.get(organizationId!.toLowerCase());
    if (secret !== undefined) {
      const nowS = Math.floor(ctx.now().getTime() / 1000);
      const headers: Record<string, string | undefined> = {};
      for (const [k, v] of Object.entries(req.headers)) headers[k.toLowerCase()] = headerValue(v);
      try {
        const verified = verifySignature({ target: req.url, authority: h('host') ?? '', headers }, secret, nowS);
        if (!nonces.add(verified.nonce, verified.expires, nowS))
          throw new AudiohookRefusal(401, 'nonce_replayed', 'the signature nonce was used before');
      } catch (err) {
        if (err instanceof SignatureError)
          throw new AudiohookRefusal(
            401,
            err.reason === 'expired' ? 'signature_expired' : 'signature',
            `signature refused: ${err.message}`,
          );
        throw err;
      }
    }
    return { sessionId: sessionId!, accountId, organizationId: organizationId!, correlationId: correlationId! };
  }

  return async (app) => {
    app.get(
      AUDIOHOOK_ROUTES.audiohook.url,
      {
        schema: servedWithout(AUDIOHOOK_ROUTES.audiohook, 'headers').schema,
        websocket: true,
        config: { websocket: true },
        preValidation: async (req, reply) => {
          try {
            req.audiohook = await handshake(req);
          } catch (err) {
            if (!(err instanceof AudiohookRefusal)) throw err;
            metrics.refused.inc({ reason: err.reason });
            ctx.metrics.wsUpgrades.inc({ socket: 'stream', outcome: 'refused' });
            req.log.warn({ reason: err.reason, status: err.status }, `AudioHook upgrade refused: ${err.message}`);
            return sendRefusal(reply, err);
          }
        },
      },
      (socket: WebSocket, req) => {
        ctx.metrics.wsUpgrades.inc({ socket: 'stream', outcome: 'upgraded' });
        new AudiohookConnection(ctx, socket, req.audiohook!, metrics, registry, req.log).start();
      },
    );
  };
}
