import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AppContext } from '../context.js';
import { capacityReport, nodeCapacity } from '../capacity.js';
import { recognizersFree } from '../../session/recognizer-room.js';
import { LIVE_SESSION_STATES, roundedSeconds } from '../../obs/metrics.js';
import { SERVICE_ROUTES } from '../schemas/service.js';

/** Probes and scrapes come every few seconds from every balancer and Prometheus: their request
 * lines are not logged at info (failures still are). */
const PROBE = { logLevel: 'warn' } as const;

/** The readiness checks /readyz answers with and /metrics exports. */
function readiness(ctx: AppContext) {
  const capacity = nodeCapacity(ctx);
  const free = recognizersFree(capacity, 1);
  const store = ctx.store.isOpen();
  const engine = ctx.engine.ready();
  const draining = ctx.draining?.() ?? false;
  return { capacity, free, store, engine, draining, ready: store && engine && free && !draining };
}

export function healthRoutes(ctx: AppContext): FastifyPluginAsync {
  return async (plain) => {
    const app = plain.withTypeProvider<TypeBoxTypeProvider>();
    // Liveness only: the process answers. Never depends on the store, the engine or load.
    app.route({ ...SERVICE_ROUTES.health, ...PROBE, handler: async () => ({ status: 'ok' as const }) });

    // Readiness for a load balancer (deploy/haproxy.cfg): 200 only when this node can take a new
    // live socket now: store open, engine started, and a decoder free (idle, room to start one,
    // or one a paused session holds, which an attaching socket reclaims). A node that is healthy
    // but has every decoder taken answers 503 with checks.capacity = false ("full, not broken":
    // the balancer stops sending it new calls, sockets already attached are unaffected).
    // checks.capacity is present only then, so a ready node's checks stay {store, engine} as
    // before, and a node whose store or engine is down never reports itself as merely full.
    // realtimeCapacity: how maxDecoders was decided (the measured capacity, the operator's
    // --max-decoders, or the fallback) and the plan behind it (docs/scaling.md, "Sizing a node").
    // A draining node (src/server/drain.ts) answers 503 with status "draining" and never
    // checks.capacity = false: the balancer must mark it DOWN (not NOLB, which still sends it
    // a session's sticky requests), so resumes reach other nodes; its store and engine checks
    // stay true, so the API pool keeps it until it stops.
    app.route({ ...SERVICE_ROUTES.ready, ...PROBE, handler: async (_req, reply) => {
      const { capacity, free, store, engine, draining, ready } = readiness(ctx);
      const report = capacityReport(ctx);
      const checks: { store: boolean; engine: boolean; capacity?: false } = { store, engine };
      if (checks.store && checks.engine && !free && !draining) checks.capacity = false;
      return reply.code(ready ? 200 : 503).send({
        status: ready ? 'ready' : draining ? 'draining' : 'not_ready',
        checks,
        engine: ctx.engine.info,
        ...(capacity !== null ? { capacity } : {}),
        ...(report !== null ? { realtimeCapacity: report } : {}),
      });
    } });

    app.route({ ...SERVICE_ROUTES.metrics, ...PROBE, handler: async (_req, reply) => {
      // Only the states a session in memory has: a closed one is forgotten at once, so a CLOSED
      // series would read 0 forever (closes are scribed_sessions_closed_total).
      const counts = ctx.sessions.countByState();
      for (const state of LIVE_SESSION_STATES) ctx.metrics.sessions.set({ state }, counts[state] ?? 0);
      ctx.metrics.decodeBacklog.set(ctx.engine.decodeBacklogSeconds?.() ?? 0);
      const ready = readiness(ctx);
      ctx.metrics.readyChecks.set({ check: 'store' }, Number(ready.store));
      ctx.metrics.readyChecks.set({ check: 'engine' }, Number(ready.engine));
      ctx.metrics.readyChecks.set({ check: 'capacity' }, Number(ready.free));
      ctx.metrics.deferredSessions.set(ctx.sessions.deferral?.deferredCount ?? 0);
      ctx.metrics.deferredBacklog.set(roundedSeconds(ctx.sessions.deferral?.budget.seconds ?? 0));
      return reply.type(ctx.metrics.registry.contentType).send(await ctx.metrics.registry.metrics());
    } });
  };
}
