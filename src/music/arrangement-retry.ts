// Retry policy of the arrangement job. A job that throws (the store busy or failing, a brief
// the planner cannot handle) is run again in process after a doubling delay; after the last
// attempt the project becomes ARRANGEMENT_FAILED, which a brief replace (PUT) leaves again.
// docs/api.md, Music projects.

/** Runs of one arrangement job in all (the first and its retries). */
export const ARRANGEMENT_MAX_ATTEMPTS = 5;
/** Environment variable: delay before the first retry in ms (1-600000), doubled per retry
 * (read in src/config.ts). */
export const ARRANGEMENT_RETRY_ENV = 'SCRIBED_ARRANGEMENT_RETRY_BASE_MS';
export const DEFAULT_ARRANGEMENT_RETRY_BASE_MS = 1000;
export const MAX_ARRANGEMENT_RETRY_BASE_MS = 600_000;

/** Delay before run `attempt` + 1 after run `attempt` failed (attempt counts from 1). */
export function arrangementRetryDelayMs(baseMs: number, attempt: number): number {
  return baseMs * 2 ** (attempt - 1);
}
