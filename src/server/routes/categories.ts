// Post-call categories (docs/analytics.md, "Categories"): CRUD per account under
// .../stt/categories, in the style of the live rules (routes/rules.ts). Another account's
// category reads as missing. A change applies to calls that end after it. Shapes declared in
// src/server/schemas/categories.ts.
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import {
  conditionView,
  MAX_CATEGORIES_PER_ACCOUNT,
  validateCreateCategory,
  validatePatchCategory,
  type CategoryCondition,
} from '../../core/analytics/categories.js';
import { ok } from '../../core/envelope.js';
import { ScribedError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import type { CategoryRecord } from '../../store/store.js';
import { checkRulePattern } from '../../text/rule-pattern.js';
import { accountOf, requireCredential } from '../auth.js';
import type { AppContext } from '../context.js';
import { servedWithout } from '../openapi/route-schema.js';
import { CATEGORY_ROUTES } from '../schemas/categories.js';
import { checkSpotPhrases } from '../schemas/rules.js';

export function categoryView(c: CategoryRecord) {
  return {
    id: c.id,
    name: c.name,
    conditions: c.conditions.map(conditionView),
    enabled: c.enabled,
    createdAt: c.createdAt,
    updatedAt: c.updatedAt,
  };
}

/** Phrase conditions asking for spotting: every word must be in the keyphrase dictionary. */
async function checkSpottable(engine: AppContext['engine'], conditions: readonly CategoryCondition[]): Promise<void> {
  for (const [i, c] of conditions.entries())
    if (c.test.kind === 'phrases' && c.test.spot) await checkSpotPhrases(engine, c.test.phrases, `conditions[${i}].`);
}

export function categoryRoutes(ctx: AppContext): FastifyPluginAsync {
  const missing = (id: string) => new ScribedError('NOT_FOUND', `category ${id} does not exist`);

  return async (plain) => {
    const app = plain.withTypeProvider<TypeBoxTypeProvider>();
    app.addHook('onRequest', requireCredential(ctx.store, 'access_key'));

    // The bodies are checked by the core (its messages name the field at any depth): the
    // declared body is the document's (servedWithout).
    app.route({
      ...servedWithout(CATEGORY_ROUTES.create, 'body'),
      handler: async (req, reply) => {
        const input = validateCreateCategory(req.body, checkRulePattern);
        await checkSpottable(ctx.engine, input.conditions);
        const created = await ctx.store.createCategory(
          { id: newId('cat', ctx.now()), accountId: accountOf(req), ...input, createdAt: ctx.now().toISOString() },
          MAX_CATEGORIES_PER_ACCOUNT,
        );
        if (!created) throw new ScribedError('CATEGORY_LIMIT', `the account already has ${MAX_CATEGORIES_PER_ACCOUNT} categories`);
        void reply.code(201);
        return ok(categoryView(created));
      },
    });

    app.route({
      ...CATEGORY_ROUTES.list,
      handler: async (req) => ok({ categories: (await ctx.store.listCategories(accountOf(req))).map(categoryView) }),
    });

    app.route({
      ...CATEGORY_ROUTES.get,
      handler: async (req) => {
        const c = await ctx.store.getCategory(req.params.id, accountOf(req));
        if (!c) throw missing(req.params.id);
        return ok(categoryView(c));
      },
    });

    app.route({
      ...servedWithout(CATEGORY_ROUTES.update, 'body'),
      handler: async (req) => {
        // Checked before the lookup: a malformed change is 422 whichever id it names.
        const patch = validatePatchCategory(req.body, checkRulePattern);
        if (patch.conditions) await checkSpottable(ctx.engine, patch.conditions);
        const updated = await ctx.store.updateCategory(req.params.id, accountOf(req), patch, ctx.now());
        if (!updated) throw missing(req.params.id);
        return ok(categoryView(updated));
      },
    });

    app.route({
      ...CATEGORY_ROUTES.delete,
      handler: async (req) => {
        if (!(await ctx.store.deleteCategory(req.params.id, accountOf(req)))) throw missing(req.params.id);
        return ok({ id: req.params.id, deleted: true as const });
      },
    });
  };
}
