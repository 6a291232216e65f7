// Conversation analytics (docs/analytics.md): a finished call's or lone transcription's figures
// and matched categories, and a date range of them as CSV. Another account's call or
// transcription reads as missing, as everywhere in the native API.
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ok } from '../../core/envelope.js';
import { ScribedError } from '../../core/errors.js';
import { csvHeader, csvRow, MAX_EXPORT_ROWS, parseRange } from '../../core/analytics/export.js';
import { aggregateAgent } from '../../core/analytics/agents.js';
import type { AnalyticsRecord, KeptAlert } from '../../store/store.js';
import { accountOf, requireCredential } from '../auth.js';
import type { AppContext } from '../context.js';
import { ANALYTICS_ROUTES } from '../schemas/analytics.js';

export function analyticsView(r: AnalyticsRecord, alerts: readonly KeptAlert[] = []) {
  return {
    subjectId: r.subjectId,
    callId: r.callId,
    transcriptionId: r.transcriptionId,
    agentId: r.agentId,
    completedAt: r.completedAt,
    figures: r.analytics.figures,
    categories: r.analytics.categories,
    alerts: alerts.map((a) => ({
      alertId: a.alertId,
      ruleId: a.ruleId,
      ruleName: a.ruleName,
      condition: a.condition,
      source: a.source,
      transcriptionId: a.transcriptionId,
      speaker: a.speaker,
      startMs: a.startMs,
      endMs: a.endMs,
      text: a.text,
      raisedAt: a.raisedAt,
    })),
  };
}

export function analyticsRoutes(ctx: AppContext): FastifyPluginAsync {
  return async (plain) => {
    const app = plain.withTypeProvider<TypeBoxTypeProvider>();
    app.addHook('onRequest', requireCredential(ctx.store, 'access_key'));

    app.route({
      ...ANALYTICS_ROUTES.call,
      handler: async (req) => {
        const accountId = accountOf(req);
        const id = req.params.callId;
        const a = await ctx.store.getAnalytics(id, accountId);
        if (a) return ok(analyticsView(a, await ctx.store.listKeptAlerts(id, accountId)));
        if (!(await ctx.store.getCall(id, accountId))) throw new ScribedError('NOT_FOUND', `call ${id} does not exist`);
        throw new ScribedError('NOT_FOUND', `call ${id} has no analytics yet: they are computed when its last leg ends`);
      },
    });

    // A leg of a call answers with its call's analytics (each leg's figures are in `figures.legs`).
    app.route({
      ...ANALYTICS_ROUTES.transcription,
      handler: async (req) => {
        const accountId = accountOf(req);
        const id = req.params.transcriptionId;
        const t = await ctx.store.getTranscription(id, accountId);
        if (!t) throw new ScribedError('NOT_FOUND', `transcription ${id} does not exist`);
        const a = await ctx.store.getAnalytics(t.callId ?? t.id, accountId);
        if (!a)
          throw new ScribedError(
            'NOT_FOUND',
            `transcription ${id} has no analytics yet: they are computed when it (or its call) is completed`,
          );
        return ok(analyticsView(a, await ctx.store.listKeptAlerts(a.subjectId, accountId)));
      },
    });

    // An agent's calls over a range (default: the week before now), by the calls' agentId.
    app.route({
      ...ANALYTICS_ROUTES.agent,
      handler: async (req) => {
        const agentId = req.params.agentId;
        const range = parseRange(req.query, ctx.now());
        const rows = await ctx.store.listAnalytics(accountOf(req), { ...range, agentId }, MAX_EXPORT_ROWS + 1);
        if (rows.length > MAX_EXPORT_ROWS)
          throw new ScribedError('VALIDATION_FAILED', `from: the range holds more than ${MAX_EXPORT_ROWS} calls; narrow it`, {
            details: { field: 'from' },
          });
        return ok(aggregateAgent(agentId, range, rows));
      },
    });

    app.route({
      ...ANALYTICS_ROUTES.export,
      handler: async (req, reply) => {
        const range = parseRange(req.query, ctx.now());
        const rows = await ctx.store.listAnalytics(accountOf(req), range, MAX_EXPORT_ROWS + 1);
        if (rows.length > MAX_EXPORT_ROWS)
          throw new ScribedError('VALIDATION_FAILED', `from: the range holds more than ${MAX_EXPORT_ROWS} calls; narrow it`, {
            details: { field: 'from' },
          });
        const body = [csvHeader(), ...rows.map((r) => csvRow({ ...r, analytics: r.analytics }))].join('\r\n') + '\r\n';
        void reply.header('content-type', 'text/csv; charset=utf-8');
        void reply.header(
          'content-disposition',
          `attachment; filename="analytics-${range.from.slice(0, 10)}-${range.to.slice(0, 10)}.csv"`,
        );
        return body;
      },
    });
  };
}
