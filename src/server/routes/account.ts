import type { FastifyPluginAsync } from 'fastify';
import { ok } from '../../core/envelope.js';
import { ScribedError } from '../../core/errors.js';
import { accountOf, requireCredential } from '../auth.js';
import { API, type AppContext } from '../context.js';

export function accountRoutes(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    app.addHook('onRequest', requireCredential(ctx.store, 'access_key'));
    app.get(`${API}/account`, async (req) => {
      const accountId = accountOf(req);
      const account = await ctx.store.getAccount(accountId);
      if (!account) throw new ScribedError('UNAUTHORIZED', 'the credential is not valid');
      return ok({ accountId: account.id, name: account.name, characters: account.characters.toString() });
    });
  };
}
