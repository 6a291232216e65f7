// The API facades (docs/compat.md): OpenAI's transcription API and Deepgram's pre-recorded
// listen API, OpenAI's Realtime transcription socket, each in its own encapsulated plugin with its own error shape, on the serve port
// beside the native API. The REST ones are served only where batch transcription is (they run
// as batch jobs); Deepgram's live socket drives a native real-time session, served everywhere.
import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../context.js';
import { DEFAULT_FACADE_MAX_WAIT_MS } from './batch-wait.js';
import { deepgramRoutes } from './deepgram/routes.js';
import { deepgramLiveRoutes } from './deepgram/live-socket.js';
import { openAiRoutes } from './openai/routes.js';
import { openAiRealtimeRoutes } from './openai/realtime-socket.js';
import { assemblyAiRoutes } from './assemblyai/routes.js';
import { assemblyAiStreamingRoutes } from './assemblyai/streaming/socket.js';

export function facadeRoutes(ctx: AppContext, maxWaitMs = DEFAULT_FACADE_MAX_WAIT_MS): FastifyPluginAsync {
  return async (app) => {
    await app.register(deepgramLiveRoutes(ctx));
    await app.register(openAiRealtimeRoutes(ctx));
    await app.register(assemblyAiStreamingRoutes(ctx));
    if (!ctx.batch) return;
    await app.register(openAiRoutes(ctx, ctx.batch, maxWaitMs));
    await app.register(deepgramRoutes(ctx, ctx.batch, maxWaitMs));
    await app.register(assemblyAiRoutes(ctx, ctx.batch));
  };
}
