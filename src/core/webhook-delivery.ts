// How a webhook delivery proceeds (docs/webhooks.md, "Retries"): the retry schedule, what an
// attempt's answer means, and when an endpoint is given up. Pure; the worker in
// src/webhooks/ applies it.

/** Attempts per delivery: the first and 9 retries. */
export const MAX_ATTEMPTS = 10;
/** Default base interval; SCRIBED_WEBHOOK_RETRY_BASE_MS shortens it (tests). */
export const DEFAULT_RETRY_BASE_MS = 5_000;
/** No wait between retries is longer than this (before jitter). */
export const MAX_RETRY_DELAY_MS = 8 * 3600_000;
/** Each wait is scaled by a random factor in [1 - JITTER, 1 + JITTER]. */
export const RETRY_JITTER = 0.2;
/** Bytes of a receiver's answer kept in the delivery log. */
export const RESPONSE_SNIPPET_BYTES = 256;

/**
 * The wait before retry `retry` (1 = the wait after the first attempt failed): base * 4^(n-1),
 * capped at 8 h, times a jitter factor. With the 5 s base: 5 s, 20 s, 80 s, 5 min, 21 min,
 * 85 min, 5.7 h, 8 h, 8 h, about 23.6 h from first to last attempt. `random` in [0, 1).
 */
export function retryDelayMs(retry: number, baseMs: number, random: number): number {
  if (!Number.isInteger(retry) || retry < 1) throw new RangeError(`retry must be a positive integer, got ${retry}`);
  const plain = Math.min(baseMs * 4 ** (retry - 1), MAX_RETRY_DELAY_MS);
  return Math.round(plain * (1 - RETRY_JITTER + 2 * RETRY_JITTER * random));
}

/** The schedule without jitter, for the docs and tests. */
export function retrySchedule(baseMs: number): number[] {
  return Array.from({ length: MAX_ATTEMPTS - 1 }, (_, i) => Math.min(baseMs * 4 ** i, MAX_RETRY_DELAY_MS));
}

export type AttemptResult =
  { kind: 'answered'; status: number } | { kind: 'timeout' } | { kind: 'network'; error: string } | { kind: 'refused'; error: string };

/**
 * What one attempt decides. `delivered`: a 2xx. `gone`: 410, the receiver asks to be left
 * alone: the endpoint is disabled. `retry`: 5xx, 408, 429, a timeout or a connection error,
 * while attempts remain. `failed`: any other answer (a 3xx is not followed, a 4xx will not
 * change by asking again), a destination the outbound policy refuses, or the last attempt.
 */
export type AttemptVerdict = 'delivered' | 'gone' | 'retry' | 'failed';

export function judgeAttempt(result: AttemptResult, attempt: number): AttemptVerdict {
  let retryable: boolean;
  if (result.kind === 'answered') {
    if (result.status >= 200 && result.status < 300) return 'delivered';
    if (result.status === 410) return 'gone';
    retryable = result.status >= 500 || result.status === 408 || result.status === 429;
  } else {
    retryable = result.kind !== 'refused';
  }
  return retryable && attempt < MAX_ATTEMPTS ? 'retry' : 'failed';
}

/**
 * An endpoint is disabled when a delivery's last attempt fails and no attempt to the endpoint
 * has succeeded since before that delivery was raised: every attempt for about a day failed.
 */
export function failingLongEnough(failingSince: string | null, deliveryCreatedAt: string): boolean {
  return failingSince !== null && failingSince <= deliveryCreatedAt;
}
