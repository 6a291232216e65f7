// What a node tells HAProxy's agent check (deploy/haproxy.cfg `agent-check`) about its free
// capacity, so the balancer weighs nodes by free recognizers rather than by open connections.
// Pure: the listener (src/server/agent-check.ts) answers each check with `agentReply`.
//
// The answer is a weight only, a percentage of the server's configured weight: the share of
// the node's recognizers a new call could get now. A full node that cannot defer answers 0%:
// weight 0 takes it out of balancing (no new calls) while requests stuck to it still reach it,
// as HAProxy's drain does. Admin states are the operator's, with two exceptions of the node's
// own: a node draining before it stops (src/server/drain.ts) answers `drain` with weight 0, so
// HAProxy's admin state says so at once, and the first answers of the process that starts
// after a drain on the same data dir add `ready`, which undoes that drain (HAProxy keeps an
// agent's `drain` as it keeps an operator's, until something says `ready`). Otherwise the agent
// never says `drain` or `ready` (a `ready` would cancel an operator's `set server ... state
// drain`), nor `maint`, `up` or `down`: health stays the HTTP check's (/readyz).

/** What the node knows at the moment of a check. */
export interface AgentCapacity {
  /** The node's recognizers; null when the engine cannot tell. */
  decoders: number | null;
  /** Recognizers a new socket could get now (idle, or held by a paused session). */
  free: number;
  /** The node would serve a socket with no recognizer free and defer its recognition. */
  canDefer: boolean;
  /** Store open, engine started, not stopping. */
  serving: boolean;
  /** Draining before a stop: `drain`, weight 0. */
  draining?: boolean;
  /** The previous process on this data dir drained: `ready` undoes its `drain`. */
  readyAgain?: boolean;
}

/** The weight, in percent of the configured weight: 0..100. */
export function agentWeightPercent(c: AgentCapacity): number {
  if (!c.serving || c.draining) return 0;
  if (c.decoders === null || c.decoders <= 0) return 100;
  const free = Math.min(Math.max(c.free, 0), c.decoders);
  // Any free recognizer keeps at least weight 1: rounding must not drain a node that has one.
  if (free > 0) return Math.max(1, Math.round((100 * free) / c.decoders));
  // Full but deferring: the least weight, so calls go elsewhere first but are not refused here.
  return c.canDefer ? 1 : 0;
}

/** One line of HAProxy's agent protocol. */
export function agentReply(c: AgentCapacity): string {
  const admin = c.draining ? ' drain' : c.readyAgain ? ' ready' : '';
  return `${agentWeightPercent(c)}%${admin}\n`;
}
