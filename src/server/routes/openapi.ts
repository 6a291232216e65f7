// GET /openapi.json: the API document as this node serves it (its recognizer's languages; the
// batch routes only when it runs batch transcription). Open, like the probes: it describes the
// routes and their rules, never an account's data.
import type { FastifyPluginAsync } from 'fastify';
import { openApiDocument, type OpenApiDocument } from '../openapi/document.js';
import type { AppContext } from '../context.js';
import { SERVICE_ROUTES } from '../schemas/service.js';

export function openApiRoutes(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    // Built once, on first request: the engine's languages are known once it has started.
    let doc: Promise<OpenApiDocument> | undefined;
    app.route({
      ...SERVICE_ROUTES.openapi,
      handler: async (_req, reply) => {
        doc ??= openApiDocument({ recognizerLanguages: ctx.engine.info.languages, withoutBatch: ctx.batch === undefined }).catch(
          (err: unknown) => {
            doc = undefined;
            throw err;
          },
        );
        return reply.type('application/json; charset=utf-8').send(await doc);
      },
    });
  };
}
