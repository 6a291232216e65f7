// Live rules (docs/rules.md): CRUD per account under .../stt/rules. Another account's rule
// reads as missing. A change drops this node's cached rules of the account at once (other
// nodes read them again within the evaluator's cache time, 2 s). Bodies are checked against
// their schemas (src/server/schemas/rules.ts) before a handler runs.
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ok } from '../../core/envelope.js';
import { ScribedError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { applyRulePatch, conditionFields, MAX_RULES_PER_ACCOUNT, type RuleCondition } from '../../core/rules.js';
import type { RuleRecord } from '../../store/store.js';
import { checkRulePattern } from '../../text/rule-pattern.js';
import { accountOf, requireCredential } from '../auth.js';
import type { AppContext } from '../context.js';
import { checkSpotPhrases, RULE_ROUTES, ruleChange, ruleFromBody } from '../schemas/rules.js';

export function ruleView(r: RuleRecord) {
  return {
    id: r.id,
    name: r.name,
    condition: r.condition.kind,
    ...conditionFields(r.condition),
    speaker: r.speaker,
    partials: r.partials,
    enabled: r.enabled,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
  };
}

/** A phrase rule asking for spotting: every word of its phrases must be in the keyphrase
 * search's dictionary (422 naming the phrase otherwise). */
async function checkSpottable(engine: AppContext['engine'], c: RuleCondition): Promise<void> {
  if (c.kind !== 'phrases' || !c.spot) return;
  await checkSpotPhrases(engine, c.phrases, '');
}

export function ruleRoutes(ctx: AppContext): FastifyPluginAsync {
  const missing = (id: string) => new ScribedError('NOT_FOUND', `rule ${id} does not exist`);
  const changed = (accountId: string) => ctx.ruleAlerts?.invalidate(accountId);

  return async (plain) => {
    const app = plain.withTypeProvider<TypeBoxTypeProvider>();
    app.addHook('onRequest', requireCredential(ctx.store, 'access_key'));

    app.route({
      ...RULE_ROUTES.create,
      handler: async (req, reply) => {
        const accountId = accountOf(req);
        const input = ruleFromBody(req.body, checkRulePattern);
        await checkSpottable(ctx.engine, input.condition);
        const created = await ctx.store.createRule(
          { id: newId('rul', ctx.now()), accountId, ...input, createdAt: ctx.now().toISOString() },
          MAX_RULES_PER_ACCOUNT,
        );
        if (!created) throw new ScribedError('RULE_LIMIT', `the account already has ${MAX_RULES_PER_ACCOUNT} rules`);
        changed(accountId);
        void reply.code(201);
        return ok(ruleView(created));
      },
    });

    app.route({ ...RULE_ROUTES.list, handler: async (req) => ok({ rules: (await ctx.store.listRules(accountOf(req))).map(ruleView) }) });

    app.route({
      ...RULE_ROUTES.get,
      handler: async (req) => {
        const rule = await ctx.store.getRule(req.params.id, accountOf(req));
        if (!rule) throw missing(req.params.id);
        return ok(ruleView(rule));
      },
    });

    app.route({
      ...RULE_ROUTES.update,
      handler: async (req) => {
        const accountId = accountOf(req);
        // The body is checked before the rule is looked up: a malformed change is 422 whichever id it names.
        const patch = ruleChange(req.body, checkRulePattern);
        if (patch.condition) await checkSpottable(ctx.engine, patch.condition);
        const current = await ctx.store.getRule(req.params.id, accountId);
        if (!current) throw missing(req.params.id);
        applyRulePatch(current, patch);
        const updated = await ctx.store.updateRule(req.params.id, accountId, patch, ctx.now());
        if (!updated) throw missing(req.params.id);
        changed(accountId);
        return ok(ruleView(updated));
      },
    });

    app.route({
      ...RULE_ROUTES.delete,
      handler: async (req) => {
        const accountId = accountOf(req);
        if (!(await ctx.store.deleteRule(req.params.id, accountId))) throw missing(req.params.id);
        changed(accountId);
        return ok({ id: req.params.id, deleted: true as const });
      },
    });
  };
}
