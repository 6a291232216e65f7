// The caller's account and its Characters balance (declared in src/server/schemas/account.ts).
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ok } from '../../core/envelope.js';
import { ScribedError } from '../../core/errors.js';
import { accountOf, requireCredential } from '../auth.js';
import type { AppContext } from '../context.js';
import { ACCOUNT_ROUTES } from '../schemas/account.js';

export function accountRoutes(ctx: AppContext): FastifyPluginAsync {
  return async (plain) => {
    const app = plain.withTypeProvider<TypeBoxTypeProvider>();
    app.addHook('onRequest', requireCredential(ctx.store, 'access_key'));
    app.route({
      ...ACCOUNT_ROUTES.get,
      handler: async (req) => {
        const account = await ctx.store.getAccount(accountOf(req));
        if (!account) throw new ScribedError('UNAUTHORIZED', 'the credential is not valid');
        return ok({ accountId: account.id, name: account.name, characters: account.characters.toString() });
      },
    });
  };
}
