// buildApp wires plugins and routes onto a Fastify instance and never listens: the CLI
// listens, tests use inject() or listen on port 0.
//
// Fastify 5 with @fastify/websocket (over `ws`) serves HTTP and the stream socket on one
// port; see docs/architecture.md for why.
import Fastify, { type FastifyInstance } from 'fastify';
import websocket from '@fastify/websocket';
import { installErrorHandling } from './error-handler.js';
import type { AppContext } from './context.js';
import { healthRoutes } from './routes/health.js';
import { accountRoutes } from './routes/account.js';
import { sessionRoutes } from './routes/sessions.js';
import { transcriptionRoutes } from './routes/transcriptions.js';
import { streamRoutes } from './ws/stream.js';

/** JSON bodies on this API are small; the largest legal create-session body is ~110 KB
 * (50 vocabulary hints of 100 chars, a 2000-char instruction). */
export const JSON_BODY_LIMIT_BYTES = 256 * 1024;
/** Largest socket message accepted at all; larger ones close the socket with 1009.
 * Audio frames over maxFramePayloadBytes but under this get a FRAME_TOO_LARGE event. */
export const WS_MAX_MESSAGE_BYTES = 1024 * 1024;

export async function buildApp(ctx: AppContext): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: ctx.log,
    bodyLimit: JSON_BODY_LIMIT_BYTES,
    disableRequestLogging: false,
    trustProxy: false,
  });
  installErrorHandling(app);

  app.addHook('onResponse', async (req, reply) => {
    ctx.metrics.httpDuration.observe(
      { method: req.method, route: req.routeOptions.url ?? 'unmatched', status_code: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });

  await app.register(websocket, { options: { maxPayload: WS_MAX_MESSAGE_BYTES } });
  await app.register(healthRoutes(ctx));
  await app.register(accountRoutes(ctx));
  await app.register(sessionRoutes(ctx));
  await app.register(transcriptionRoutes(ctx));
  await app.register(streamRoutes(ctx));

  // Stop taking sockets first, then let every live session finalize and persist.
  app.addHook('preClose', async () => {
    await ctx.sessions.shutdown();
  });
  return app;
}
