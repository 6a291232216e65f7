import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../context.js';

export function healthRoutes(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    app.get('/healthz', async () => ({ status: 'ok' }));

    app.get('/readyz', async (_req, reply) => {
      const checks = { store: ctx.store.isOpen(), engine: ctx.engine.ready() };
      const ready = checks.store && checks.engine;
      return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not_ready', checks, engine: ctx.engine.info });
    });

    app.get('/metrics', async (_req, reply) => {
      const counts = ctx.sessions.countByState();
      for (const [state, n] of Object.entries(counts)) ctx.metrics.sessions.set({ state }, n);
      return reply.type(ctx.metrics.registry.contentType).send(await ctx.metrics.registry.metrics());
    });
  };
}
