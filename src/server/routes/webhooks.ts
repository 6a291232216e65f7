// Webhook endpoints (docs/webhooks.md): CRUD per account, secret rotation, the delivery log
// and manual retry; the delivery worker runs with the node (service.ts). Another account's
// endpoint or delivery reads as missing. Requests are checked against their declared schemas
// (src/server/schemas/webhooks.ts) before a handler runs.
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ok } from '../../core/envelope.js';
import { ScribedError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { MAX_ENDPOINTS_PER_ACCOUNT, SECRET_OVERLAP_MS, webhookSecret } from '../../core/webhook-endpoints.js';
import type { ServerKeys } from '../../store/server-key.js';
import type { WebhookDeliveryRecord, WebhookEndpointRecord } from '../../store/store.js';
import { accountOf, requireCredential } from '../auth.js';
import { callbackPolicy, type AppContext } from '../context.js';
import { endpointChange, endpointFromBody, WEBHOOK_ROUTES } from '../schemas/webhooks.js';

const DELIVERY_LIST_LIMIT = 100;

/** `secret`: given only by create and rotate-secret, the one time the account sees it. */
export function endpointView(e: WebhookEndpointRecord): ReturnType<typeof view>;
export function endpointView(e: WebhookEndpointRecord, secret: string): ReturnType<typeof view> & { secret: string };
export function endpointView(e: WebhookEndpointRecord, secret?: string) {
  return view(e, secret);
}

function view(e: WebhookEndpointRecord, secret?: string) {
  return {
    id: e.id,
    url: e.url,
    description: e.description,
    events: e.events,
    includeTranscript: e.includeTranscript,
    ...(secret === undefined ? {} : { secret }),
    enabled: e.enabled,
    disabledReason: e.disabledReason,
    previousSecretExpiresAt: e.secretGeneration > 1 ? e.previousUntil : null,
    createdAt: e.createdAt,
    updatedAt: e.updatedAt,
  };
}

export function deliveryView(d: WebhookDeliveryRecord) {
  return {
    id: d.id,
    endpointId: d.endpointId,
    eventType: d.eventType,
    status: d.status,
    attempts: d.attempts,
    lastStatusCode: d.lastStatusCode,
    lastError: d.lastError,
    lastResponse: d.lastResponse,
    nextAttemptAt: d.status === 'PENDING' ? d.nextAttemptAt : null,
    createdAt: d.createdAt,
    deliveredAt: d.deliveredAt,
    attemptLog: d.log.map((a) => ({
      attempt: a.attempt,
      at: a.startedAt,
      durationMs: a.durationMs,
      statusCode: a.statusCode,
      error: a.error,
    })),
  };
}

export function webhookRoutes(ctx: AppContext, keys: ServerKeys): FastifyPluginAsync {
  const policy = callbackPolicy(ctx);

  const owned = async (id: string, accountId: string) => {
    const e = await ctx.store.getWebhookEndpoint(id, accountId);
    if (!e) throw new ScribedError('NOT_FOUND', `webhook endpoint ${id} does not exist`);
    return e;
  };

  return async (app) => {
    // Every node holds the same key (store/server-key.ts), so any node signs any delivery.
    const serverKey = await keys.load('webhook-signing');
    const secretOf = (endpointId: string, generation: number) => webhookSecret(serverKey, endpointId, generation);
    // The delivery worker runs with the node (service.ts); a manual retry nudges it.
    const worker = ctx.workers.webhooks;

    await app.register(async (plain) => {
      const scoped = plain.withTypeProvider<TypeBoxTypeProvider>();
      scoped.addHook('onRequest', requireCredential(ctx.store, 'access_key'));
      const R = WEBHOOK_ROUTES;

      scoped.route({
        ...R.create,
        handler: async (req, reply) => {
          const accountId = accountOf(req);
          const input = endpointFromBody(req.body, policy);
          const created = await ctx.store.createWebhookEndpoint(
            { id: newId('whe', ctx.now()), accountId, ...input, createdAt: ctx.now().toISOString() },
            MAX_ENDPOINTS_PER_ACCOUNT,
          );
          if (!created)
            throw new ScribedError('WEBHOOK_ENDPOINT_LIMIT', `the account already has ${MAX_ENDPOINTS_PER_ACCOUNT} webhook endpoints`);
          req.log.info({ endpointId: created.id }, 'webhook endpoint created');
          void reply.code(201);
          return ok(endpointView(created, secretOf(created.id, created.secretGeneration)));
        },
      });

      scoped.route({
        ...R.list,
        handler: async (req) => ok({ endpoints: (await ctx.store.listWebhookEndpoints(accountOf(req))).map((e) => endpointView(e)) }),
      });

      scoped.route({ ...R.get, handler: async (req) => ok(endpointView(await owned(req.params.id, accountOf(req)))) });

      scoped.route({
        ...R.update,
        handler: async (req) => {
          const accountId = accountOf(req);
          const patch = endpointChange(req.body, policy);
          const updated = await ctx.store.updateWebhookEndpoint(req.params.id, accountId, patch, ctx.now());
          if (!updated) throw new ScribedError('NOT_FOUND', `webhook endpoint ${req.params.id} does not exist`);
          return ok(endpointView(updated));
        },
      });

      scoped.route({
        ...R.delete,
        handler: async (req) => {
          if (!(await ctx.store.deleteWebhookEndpoint(req.params.id, accountOf(req))))
            throw new ScribedError('NOT_FOUND', `webhook endpoint ${req.params.id} does not exist`);
          return ok({ id: req.params.id, deleted: true as const });
        },
      });

      scoped.route({
        ...R.rotateSecret,
        handler: async (req) => {
          const now = ctx.now();
          const rotated = await ctx.store.rotateWebhookSecret(
            req.params.id,
            accountOf(req),
            new Date(now.getTime() + SECRET_OVERLAP_MS).toISOString(),
            now,
          );
          if (!rotated) throw new ScribedError('NOT_FOUND', `webhook endpoint ${req.params.id} does not exist`);
          return ok(endpointView(rotated, secretOf(rotated.id, rotated.secretGeneration)));
        },
      });

      scoped.route({
        ...R.deliveries,
        handler: async (req) => {
          const accountId = accountOf(req);
          await owned(req.params.id, accountId);
          return ok({
            deliveries: (await ctx.store.listWebhookDeliveries(req.params.id, accountId, DELIVERY_LIST_LIMIT)).map(deliveryView),
          });
        },
      });

      scoped.route({
        ...R.retry,
        handler: async (req) => {
          const d = await ctx.store.retryWebhookDelivery(req.params.id, accountOf(req), ctx.now());
          if (!d) throw new ScribedError('NOT_FOUND', `webhook delivery ${req.params.id} does not exist`);
          worker.nudge();
          return ok(deliveryView(d));
        },
      });
    });
  };
}
