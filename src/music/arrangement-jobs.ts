// The arrangement job: an in-process runner that turns a project's brief into an
// arrangement plan and ends ARRANGEMENT_GENERATING. The store is the queue: a job is a
// project row in ARRANGEMENT_GENERATING, so a restart loses nothing; resume() re-schedules
// every such row. completeArrangement only writes if the project still waits for the same
// arrangementVersion, so a duplicate or late run is harmless.
import type { Logger } from 'pino';
import { planArrangement } from '../core/arrangement-plan.js';
import { validateBrief } from '../core/music-brief.js';
import type { Store } from '../store/store.js';

export class ArrangementJobs {
  readonly #timers = new Set<NodeJS.Timeout>();
  #closed = false;

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    private readonly delayMs: number,
    private readonly now: () => Date,
  ) {}

  schedule(projectId: string, accountId: string, arrangementVersion: number): void {
    if (this.#closed) return;
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      void this.run(projectId, accountId, arrangementVersion);
    }, this.delayMs);
    this.#timers.add(timer);
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

  private async run(projectId: string, accountId: string, version: number): Promise<void> {
    if (this.#closed || !this.store.isOpen()) return;
    try {
      const p = await this.store.getMusicProject(projectId, accountId);
      if (!p || p.status !== 'ARRANGEMENT_GENERATING' || p.arrangementVersion !== version) return;
      const plan = planArrangement(validateBrief(p.brief));
      const done = await this.store.completeArrangement(projectId, version, plan as unknown as Record<string, unknown>, this.now());
      this.log.info({ projectId, arrangementVersion: version, stored: done }, 'arrangement generated');
    } catch (err) {
      this.log.error({ err, projectId }, 'arrangement job failed; it is retried at the next start');
    }
  }
}
