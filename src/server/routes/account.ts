import type { FastifyPluginAsync } from 'fastify';
import { ok } from '../../core/envelope.js';
import { ScribedError } from '../../core/errors.js';
import { authenticate, headerValue } from '../auth.js';
import { API, type AppContext } from '../context.js';

export function accountRoutes(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    app.get(`${API}/account`, async (req) => {
      const accountId = await authenticate(ctx.store, 'access_key', headerValue(req.headers.accesskey));
      const account = await ctx.store.getAccount(accountId);
      if (!account) throw new ScribedError('UNAUTHORIZED', 'the credential is not valid');
      return ok({ accountId: account.id, name: account.name, characters: account.characters.toString() });
    });
  };
}
