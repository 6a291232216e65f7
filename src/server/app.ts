// buildApp wires plugins and routes onto a Fastify instance and never listens: the CLI
// listens, tests use inject() or listen on port 0.
//
// Fastify 5 with @fastify/websocket (over `ws`) serves HTTP and the stream socket on one
// port; see docs/architecture.md for why.
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import websocket from '@fastify/websocket';
import { installErrorHandling } from './error-handler.js';
import { AJV_OPTIONS, plainSerializerCompiler, SCHEMA_CONTROLLER } from './openapi/route-schema.js';
import { countHttpError } from '../obs/metrics.js';
import { CLOSE_CODES } from '../core/protocol.js';
import { jsonNestsDeeperThan, tooDeep } from '../core/json-depth.js';
import { jsonStringsHoldNul, nulRefused } from '../core/json-nul.js';
import { connectionOptions, installConnectionGuards, onSocketError } from './connections.js';
import type { AppContext } from './context.js';
import { healthRoutes } from './routes/health.js';
import { adminRoutes } from './routes/admin.js';
import { accountRoutes } from './routes/account.js';
import { sessionRoutes } from './routes/sessions.js';
import { transcriptionRoutes } from './routes/transcriptions.js';
import { callRoutes } from './routes/calls.js';
import { webhookRoutes } from './routes/webhooks.js';
import { searchRoutes } from './routes/search.js';
import { ruleRoutes } from './routes/rules.js';
import { analyticsRoutes } from './routes/analytics.js';
import { categoryRoutes } from './routes/categories.js';
import { streamRoutes } from './ws/stream.js';
import { watchRoutes } from './ws/watch.js';
import { interpretationRoutes } from './routes/interpretation.js';
import { musicRoutes } from './routes/music.js';
import { voiceRoutes } from './routes/voices.js';
import { userGroupRoutes } from './routes/user-groups.js';
import { batchRoutes } from './routes/batch.js';
import { recordingRoutes } from './routes/recordings.js';
import { consoleRoutes } from '../console/plugin.js';
import { openApiRoutes } from './routes/openapi.js';
import { facadeRoutes } from './facades/plugin.js';
import { audiohookRoutes } from './audiohook/routes.js';
import { siprecRoutes } from './siprec/plugin.js';
import { deskPages } from '../desk/plugin.js';
import { installDeskReads } from './routes/desk-auth.js';
import { deskRoutes } from './routes/desk.js';

/** Default JSON body limit. It covers every legal body except interpretation create, whose
 * source.text may be 100,000 code points (up to 1.2 MB as JSON); that route sets its own
 * bodyLimit (INTERPRETATION_CREATE_BODY_LIMIT_BYTES, routes/interpretation.ts). The largest
 * legal create-session body is ~110 KB (50 vocabulary hints of 100 chars, a 2000-char
 * instruction). */
export const JSON_BODY_LIMIT_BYTES = 256 * 1024;
/** Largest socket message accepted at all; larger ones close the socket with 1009.
 * Audio frames over maxFramePayloadBytes but under this get a FRAME_TOO_LARGE event. */
export const WS_MAX_MESSAGE_BYTES = 1024 * 1024;

export async function buildApp(ctx: AppContext): Promise<FastifyInstance> {
  const app = Fastify({
    // pino's Logger is a FastifyBaseLogger at run time; its generic typing is stricter.
    loggerInstance: ctx.log as FastifyBaseLogger,
    bodyLimit: JSON_BODY_LIMIT_BYTES,
    trustProxy: false,
    // Requests are checked against their routes' schemas as the hand validation did
    // (openapi/route-schema.ts); compiled once per route at registration.
    ajv: AJV_OPTIONS,
    schemaController: SCHEMA_CONTROLLER,
    // Timeouts, the connection cap and the answers below the routes (connections.ts).
    ...connectionOptions(ctx.config),
  });
  installErrorHandling(app);
  app.setSerializerCompiler(plainSerializerCompiler);
  // Every authenticated route plugin sets this in its onRequest hook (auth.ts).
  app.decorateRequest('accountId', null);
  app.decorateRequest('errorCode', null);

  // Some endpoints take no body (tickets); clients that still send
  // `Content-Type: application/json` with an empty body get treated as sending none.
  const defaultJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    if (body === '') return done(null, undefined);
    if (jsonNestsDeeperThan(body as string)) return done(tooDeep(), undefined);
    if (jsonStringsHoldNul(body as string)) return done(nulRefused(), undefined);
    return defaultJson(req, body as string, done);
  });

  app.addHook('onResponse', async (req, reply) => {
    ctx.metrics.httpDuration.observe(
      { method: req.method, route: req.routeOptions.url ?? 'unmatched', status_code: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
    if (req.errorCode !== null) countHttpError(ctx.metrics, req.errorCode);
  });

  await app.register(websocket, {
    options: { maxPayload: WS_MAX_MESSAGE_BYTES },
    errorHandler: onSocketError,
    // Replaces the plugin's default, which closes every socket at once with no code: live
    // sessions first finalize, persist and close their sockets with 1012 (service restart),
    // then sockets still in their handshake get the same code.
    preClose: async function (this: FastifyInstance) {
      await ctx.sessions.shutdown();
      for (const client of this.websocketServer.clients) client.close(CLOSE_CODES.serviceRestart, 'server shutting down');
      await new Promise<void>((resolve) => this.websocketServer.close(() => resolve()));
    },
  });
  // After the websocket plugin (its onRequest hook marks upgrades) and before any route.
  installConnectionGuards(app, ctx.config, ctx.metrics);
  // The desk's session cookie on the native reads it may make (docs/desk.md); before every route.
  installDeskReads(app, ctx);
  await app.register(healthRoutes(ctx));
  await app.register(adminRoutes(ctx));
  await app.register(accountRoutes(ctx));
  await app.register(sessionRoutes(ctx));
  await app.register(transcriptionRoutes(ctx));
  await app.register(callRoutes(ctx));
  await app.register(searchRoutes(ctx));
  await app.register(ruleRoutes(ctx));
  await app.register(categoryRoutes(ctx));
  await app.register(analyticsRoutes(ctx));
  await app.register(streamRoutes(ctx));
  await app.register(watchRoutes(ctx));
  await app.register(interpretationRoutes(ctx));
  await app.register(musicRoutes(ctx));
  // Recordings, design previews and server keys: the node's one copy, made by service.ts.
  await app.register(voiceRoutes(ctx, ctx.files));
  await app.register(userGroupRoutes(ctx, ctx.files.keys));
  await app.register(webhookRoutes(ctx, ctx.files.keys));
  if (ctx.batch) await app.register(batchRoutes(ctx, ctx.batch));
  if (ctx.recordings) await app.register(recordingRoutes(ctx, ctx.recordings));
  // OpenAI's and Deepgram's REST APIs over the batch path (src/server/facades, docs/compat.md).
  await app.register(facadeRoutes(ctx));
  // Genesys AudioHook (docs/audiohook.md).
  await app.register(audiohookRoutes(ctx));
  await app.register(siprecRoutes(ctx));
  // The live transcript console, static files at /console/ (docs/console.md).
  await app.register(consoleRoutes());
  // The desk: its pages at /desk/ and its session routes at /desk/api/ (docs/desk.md).
  await app.register(deskPages());
  await app.register(deskRoutes(ctx));
  // The API document (src/server/openapi, docs/api-reference.md).
  await app.register(openApiRoutes(ctx));

  return app;
}
