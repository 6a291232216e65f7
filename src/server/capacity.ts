// How many recognizers a new live socket could get on this node now: read by /readyz (a load
// balancer sends new calls to nodes that have one) and by the stream handshake (a node with
// none answers 503 ENGINE_BUSY before the upgrade, so the balancer retries another node).
import type { AppContext } from './context.js';
import type { CapacityReport } from '../engine/calibration.js';
import type { Engine } from '../engine/types.js';
import type { RecognizerRoom } from '../session/recognizer-room.js';

/** Decoders of this node and how many a new live socket could get now
 * (src/session/recognizer-room.ts: the one answer of what "free" means). */
export type NodeCapacity = RecognizerRoom;

/** What the pool and the session registry say now; null when the engine cannot tell. */
export function nodeCapacity(ctx: Pick<AppContext, 'sessions'>): NodeCapacity | null {
  return ctx.sessions.room();
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
