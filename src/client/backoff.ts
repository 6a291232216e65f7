// Reconnect delays: exponential backoff with jitter, pure (the random source is passed in).
//
// "Equal jitter": half of the exponential step is fixed, half random. The fixed half keeps a
// flapping server from being hammered; the random half spreads many clients that lost the
// same server apart so they do not all reconnect in the same instant.

export interface BackoffPolicy {
  /** First delay step, ms. */
  baseMs: number;
  /** Largest step, ms. */
  maxMs: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 250, maxMs: 10_000 };

/** Delay before reconnect attempt `attempt` (0 for the first retry). */
export function backoffDelay(attempt: number, policy: BackoffPolicy = DEFAULT_BACKOFF, random: () => number = Math.random): number {
  if (!Number.isInteger(attempt) || attempt < 0) throw new RangeError(`attempt must be a non-negative integer, got ${attempt}`);
  const step = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(attempt, 30));
  const r = Math.min(Math.max(random(), 0), 1);
  return Math.round(step / 2 + (step / 2) * r);
}
