// The arrangement job: an in-process runner that turns a project's brief into an
// arrangement plan and ends ARRANGEMENT_GENERATING. The store is the queue: a job is a
// project row in ARRANGEMENT_GENERATING, so a restart loses nothing; resume() re-schedules
// every such row. completeArrangement only writes if the project still waits for the same
// arrangementVersion, so a duplicate or late run is harmless.
//
// A run that throws is retried after a doubling delay (src/music/arrangement-retry.ts);
// when the last attempt fails the project becomes ARRANGEMENT_FAILED, so it does not sit in
// ARRANGEMENT_GENERATING until the next restart. If even that write fails, the project stays
// ARRANGEMENT_GENERATING and the next start runs the job again.
import type { Logger } from 'pino';
import { planArrangement } from '../core/arrangement-plan.js';
import { validateBrief } from '../core/music-brief.js';
import type { Store } from '../store/store.js';
import { arrangementRetryDelayMs } from './arrangement-retry.js';

export interface ArrangementJobOptions {
  /** Queue delay before the first run (config arrangementJobDelayMs). */
  delayMs: number;
  /** Delay before the first retry, doubled per retry. */
  retryBaseMs: number;
  /** Runs in all before the project is ARRANGEMENT_FAILED. */
  maxAttempts: number;
}

export class ArrangementJobs {
  readonly #timers = new Set<NodeJS.Timeout>();
  #closed = false;

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    private readonly o: ArrangementJobOptions,
    private readonly now: () => Date,
  ) {}

  schedule(projectId: string, accountId: string, arrangementVersion: number): void {
    this.#after(this.o.delayMs, projectId, accountId, arrangementVersion, 1);
  }

  async resume(): Promise<number> {
    const pending = await this.store.listMusicProjectsByStatus('ARRANGEMENT_GENERATING');
    for (const p of pending) this.schedule(p.id, p.accountId, p.arrangementVersion);
    if (pending.length > 0) this.log.info({ count: pending.length }, 'arrangement jobs resumed');
    return pending.length;
  }

  close(): void {
    this.#closed = true;
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
  }

  #after(ms: number, projectId: string, accountId: string, version: number, attempt: number): void {
    if (this.#closed) return;
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      void this.run(projectId, accountId, version, attempt);
    }, ms);
    this.#timers.add(timer);
  }

  private async run(projectId: string, accountId: string, version: number, attempt: number): Promise<void> {
    if (this.#closed || !this.store.isOpen()) return;
    try {
      const p = await this.store.getMusicProject(projectId, accountId);
      if (!p || p.status !== 'ARRANGEMENT_GENERATING' || p.arrangementVersion !== version) return;
      const plan = planArrangement(validateBrief(p.brief));
      const done = await this.store.completeArrangement(projectId, version, plan as unknown as Record<string, unknown>, this.now());
      this.log.info({ projectId, arrangementVersion: version, attempt, stored: done }, 'arrangement generated');
    } catch (err) {
      if (this.#closed || !this.store.isOpen()) return; // shutting down: the next start runs it
      if (attempt < this.o.maxAttempts) {
        const delay = arrangementRetryDelayMs(this.o.retryBaseMs, attempt);
        this.log.warn({ err, projectId, arrangementVersion: version, attempt, retryInMs: delay }, 'arrangement job failed; retrying');
        this.#after(delay, projectId, accountId, version, attempt + 1);
        return;
      }
      this.log.error({ err, projectId, arrangementVersion: version, attempt }, 'arrangement job failed on its last attempt; project ARRANGEMENT_FAILED');
      try {
        await this.store.failArrangement(projectId, version, this.now());
      } catch (failErr) {
        this.log.error({ err: failErr, projectId }, 'could not mark the arrangement failed; the job runs again at the next start');
      }
    }
  }
}
