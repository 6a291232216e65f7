// The operator's drain through HTTP (`scribed drain`, docs/operations.md "Draining a node"):
// the same drain, then stop, that SIGTERM starts, for hosts where sending the process a signal
// is awkward (a container runtime's exec, a deploy tool that speaks HTTP).
//
// Who may ask: only a request from the node's own host made to the process directly (no proxy
// headers), as /metrics without a token. Draining takes a node out of service, so no remote
// caller may do it, and the API's access keys are accounts', not the operator's; the metrics
// token is a read-only scraper's and grants no action. An operator elsewhere runs `scribed
// drain` on the node's host (ssh), as they would send it a signal.
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ScribedError } from '../../core/errors.js';
import type { AppContext } from '../context.js';
import { SERVICE_ROUTES } from '../schemas/service.js';
import { directFromLoopback } from './health.js';

export function adminRoutes(ctx: AppContext): FastifyPluginAsync {
  return async (plain) => {
    const requestDrain = ctx.requestDrain;
    if (!requestDrain) return;
    const app = plain.withTypeProvider<TypeBoxTypeProvider>();
    app.route({
      ...SERVICE_ROUTES.drain,
      handler: async (req, reply) => {
        if (!directFromLoopback(req))
          throw new ScribedError(
            'UNAUTHORIZED',
            '/admin/drain answers only loopback requests made to the node directly: run `scribed drain` on its host (docs/operations.md)',
          );
        req.log.info('drain asked for through /admin/drain');
        const status = requestDrain();
        return reply.code(202).send({ status, graceMs: ctx.config.drainGraceMs });
      },
    });
  };
}
