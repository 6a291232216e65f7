// Reconnect delays: exponential backoff with jitter, pure (the random source is passed in).
//
// "Equal jitter": half of the exponential step is fixed, half random. The fixed half keeps a
// flapping server from being hammered; the random half spreads many clients that lost the
// same server apart so they do not all reconnect in the same instant.
//
// The first reconnect after a socket that worked is the exception (reconnectDelay): a lost
// node is the common case, HAProxy sends the retry to a live one, and every millisecond of it
// is captions an agent does not see. It waits only a short, fully random delay (spreading the
// clients of one dead node over `firstRetryMs`), and the backoff steps start after it.

export interface BackoffPolicy {
  /** First delay step, ms. */
  baseMs: number;
  /** Largest step, ms. */
  maxMs: number;
  /** The first reconnect after a socket that reached `ready` waits a uniform 0..firstRetryMs,
   * ms, before the backoff steps above; absent: the steps start at once (attempt 0 = baseMs). */
  firstRetryMs?: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 250, maxMs: 10_000, firstRetryMs: 50 };

/** Delay before reconnect attempt `attempt` (0 for the first retry). */
export function backoffDelay(attempt: number, policy: BackoffPolicy = DEFAULT_BACKOFF, random: () => number = Math.random): number {
  if (!Number.isInteger(attempt) || attempt < 0) throw new RangeError(`attempt must be a non-negative integer, got ${attempt}`);
  const step = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(attempt, 30));
  const r = Math.min(Math.max(random(), 0), 1);
  return Math.round(step / 2 + (step / 2) * r);
}

/** Delay before reconnect attempt `attempt` since the last socket that reached `ready`: with
 * `firstRetryMs`, attempt 0 is the quick retry and attempt n the backoff's step n - 1. */
export function reconnectDelay(attempt: number, policy: BackoffPolicy = DEFAULT_BACKOFF, random: () => number = Math.random): number {
  if (policy.firstRetryMs === undefined) return backoffDelay(attempt, policy, random);
  if (attempt === 0) return Math.round(Math.max(0, policy.firstRetryMs) * Math.min(Math.max(random(), 0), 1));
  return backoffDelay(attempt - 1, policy, random);
}
