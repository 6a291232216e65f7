// How many recognizers a new live socket could get on this node now: read by /readyz (a load
// balancer sends new calls to nodes that have one) and by the stream handshake (a node with
// none answers 503 ENGINE_BUSY before the upgrade, so the balancer retries another node).
import type { AppContext } from './context.js';
import type { CapacityReport } from '../engine/calibration.js';
import type { Engine } from '../engine/types.js';

/** Decoders of this node and how many a new live socket could get now. */
export interface NodeCapacity {
  /** maxDecoders. */
  decoders: number;
  /** Checked out: streaming, starting, held by a paused session, or decoding a batch segment. */
  busy: number;
  /** Of the busy ones, those held by paused sessions: a socket that attaches takes one of these
   * back before it is refused (src/session/registry.ts, reclaimDecoder). */
  reclaimable: number;
}

/** What the pool and the session registry say now; null when the engine cannot tell. */
export function nodeCapacity(ctx: Pick<AppContext, 'engine' | 'sessions'>): NodeCapacity | null {
  const pool = ctx.engine.capacity?.();
  if (!pool) return null;
  let reclaimable = 0;
  for (const session of ctx.sessions.all()) if (session.holdsIdleDecoder) reclaimable++;
  return { decoders: pool.decoders, busy: pool.busy, reclaimable: Math.min(reclaimable, pool.busy) };
}


/** True when a socket attaching now would get a decoder (or the engine cannot tell). */
export function hasFreeDecoder(ctx: AppContext): boolean {
  const c = nodeCapacity(ctx);
  return c === null || c.decoders - c.busy + c.reclaimable > 0;
}

/** How the engine's maxDecoders was decided and the measured capacity behind it
 * (src/engine/calibration.ts), recorded by createService for the engine it made. Keyed by the
 * engine so an app built without it (tests, wrappers) simply has none. */
const reports = new WeakMap<Engine, CapacityReport>();

export function recordCapacityReport(engine: Engine, report: CapacityReport): void {
  reports.set(engine, report);
}

/** What /readyz says about the node's real-time capacity; null when nothing was recorded. */
export function capacityReport(ctx: Pick<AppContext, 'engine'>): CapacityReport | null {
  return reports.get(ctx.engine) ?? null;
}
