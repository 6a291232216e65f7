import crypto from 'node:crypto';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ScribedError } from '../../core/errors.js';
import { headerValue } from '../auth.js';
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

const sha256 = (text: string) => crypto.createHash('sha256').update(text).digest();

/** Headers a reverse proxy adds: a request that carries one came from elsewhere, whatever the
 * peer address (the reference HAProxy sets X-Forwarded-For: deploy/haproxy.cfg). */
const PROXY_HEADERS = ['x-forwarded-for', 'forwarded', 'x-real-ip', 'x-forwarded-host'];

function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const a = address.startsWith('::ffff:') ? address.slice(7) : address;
  return a === '::1' || a.startsWith('127.');
}

/** A request from this host made to the process directly, not through a proxy on it. */
export function directFromLoopback(req: FastifyRequest): boolean {
  return isLoopback(req.socket.remoteAddress) && !PROXY_HEADERS.some((h) => req.headers[h] !== undefined);
}

/** Who may read /metrics (docs/operations.md, "Metrics"): with a token configured, whoever
 * presents it as a bearer token (compared in constant time, as hashes); without one, only a
 * scraper on this host talking to the process directly. Server-wide counters and versions
 * are not for anyone who can reach the API port. */
export function requireMetricsAccess(ctx: AppContext, req: FastifyRequest): void {
  const token = ctx.config.metricsToken;
  if (token !== undefined) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(headerValue(req.headers.authorization) ?? '');
    if (m && crypto.timingSafeEqual(sha256(m[1]!), sha256(token))) return;
    throw new ScribedError(
      'UNAUTHORIZED',
      '/metrics needs the Authorization: Bearer token the operator configured (SCRIBED_METRICS_TOKEN or --metrics-token-file; docs/operations.md)',
    );
  }
  if (directFromLoopback(req)) return;
  throw new ScribedError(
    'UNAUTHORIZED',
    '/metrics answers only loopback requests made to the server directly; for a scraper elsewhere, configure a bearer token (SCRIBED_METRICS_TOKEN or --metrics-token-file; docs/operations.md)',
  );
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
    app.route({
      ...SERVICE_ROUTES.ready,
      ...PROBE,
      handler: async (_req, reply) => {
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
      },
    });

    app.route({
      ...SERVICE_ROUTES.metrics,
      ...PROBE,
      handler: async (req, reply) => {
        requireMetricsAccess(ctx, req);
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
      },
    });
  };
}
