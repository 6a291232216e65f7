// Live rules (docs/rules.md): CRUD per account under .../stt/rules. Another
// account's rule reads as missing. A change drops this node's cached rules of the account at
// once (other nodes read them again within the evaluator's cache time, 2 s).
import type { FastifyPluginAsync } from 'fastify';
import { ok } from '../../core/envelope.js';
import { ScribedError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { applyRulePatch, conditionFields, MAX_RULES_PER_ACCOUNT, validateCreateRule, validatePatchRule } from '../../core/rules.js';
import type { RuleRecord } from '../../store/store.js';
import { checkRulePattern } from '../../text/rule-pattern.js';
import { accountOf, requireCredential } from '../auth.js';
import { API, type AppContext } from '../context.js';

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

export function ruleRoutes(ctx: AppContext): FastifyPluginAsync {
  const base = `${API}/stt/rules`;
  const missing = (id: string) => new ScribedError('NOT_FOUND', `rule ${id} does not exist`);
  const changed = (accountId: string) => ctx.ruleAlerts?.invalidate(accountId);

  return async (app) => {
    app.addHook('onRequest', requireCredential(ctx.store, 'access_key'));

    app.post(base, async (req, reply) => {
      const accountId = accountOf(req);
      const input = validateCreateRule(req.body, checkRulePattern);
      const created = await ctx.store.createRule({ id: newId('rul', ctx.now()), accountId, ...input, createdAt: ctx.now().toISOString() }, MAX_RULES_PER_ACCOUNT);
      if (!created) throw new ScribedError('RULE_LIMIT', `the account already has ${MAX_RULES_PER_ACCOUNT} rules`);
      changed(accountId);
      void reply.code(201);
      return ok(ruleView(created));
    });

    app.get(base, async (req) => ok({ rules: (await ctx.store.listRules(accountOf(req))).map(ruleView) }));

    app.get<{ Params: { id: string } }>(`${base}/:id`, async (req) => {
      const rule = await ctx.store.getRule(req.params.id, accountOf(req));
      if (!rule) throw missing(req.params.id);
      return ok(ruleView(rule));
    });

    app.patch<{ Params: { id: string } }>(`${base}/:id`, async (req) => {
      const accountId = accountOf(req);
      // The body is checked before the rule is looked up: a malformed change is 422 whichever id it names.
      const patch = validatePatchRule(req.body, checkRulePattern);
      const current = await ctx.store.getRule(req.params.id, accountId);
      if (!current) throw missing(req.params.id);
      applyRulePatch(current, patch);
      const updated = await ctx.store.updateRule(req.params.id, accountId, patch, ctx.now());
      if (!updated) throw missing(req.params.id);
      changed(accountId);
      return ok(ruleView(updated));
    });

    app.delete<{ Params: { id: string } }>(`${base}/:id`, async (req) => {
      const accountId = accountOf(req);
      if (!(await ctx.store.deleteRule(req.params.id, accountId))) throw missing(req.params.id);
      changed(accountId);
      return ok({ id: req.params.id, deleted: true });
    });
  };
}
