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
//
// Many nodes on one store (`shared`, docs/scaling.md): a node claims the project row with a
// lease (areas/job-claims.ts) before it works on it and renews it while the job (retries
// included) is on its hands; every node polls for generating projects nobody holds, so the
// job of a node that died is run by another within a lease and a poll.
import type { Logger } from 'pino';
import { planArrangement } from '../core/arrangement-plan.js';
import { validateBrief } from '../core/music-brief.js';
import type { Store } from '../store/store.js';
import { arrangementRetryDelayMs } from './arrangement-retry.js';

export interface ArrangementJobOptions {
  /** Queue delay before the first run (config arrangementJobDelayMs). */
  delayMs: number;
  /** Set when nodes share the store: this node's id and the claim's lease. */
  shared?: { node: string; leaseMs: number; pollMs: number };
  /** Delay before the first retry, doubled per retry. */
  retryBaseMs: number;
  /** Runs in all before the project is ARRANGEMENT_FAILED. */
  maxAttempts: number;
}

const GENERATING = "status = 'ARRANGEMENT_GENERATING'";

export class ArrangementJobs {
  readonly #timers = new Set<NodeJS.Timeout>();
  /** Projects whose claim this node holds (shared store). */
  readonly #held = new Set<string>();
  #loops: NodeJS.Timeout[] = [];
  #closed = false;

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    private readonly o: ArrangementJobOptions,
    private readonly now: () => Date,
  ) {}

  schedule(projectId: string, accountId: string, arrangementVersion: number): void {
    const shared = this.o.shared;
    if (!shared) {
      this.#after(this.o.delayMs, projectId, accountId, arrangementVersion, 1);
      return;
    }
    // A new project (or brief) on this node: claim it here, so the poll of another node leaves it.
    void this.store
      .claimJob({ table: 'music_projects', key: projectId, node: shared.node }, shared.leaseMs, this.now())
      .then((mine) => {
        if (!mine) return; // another node holds it and runs it
        this.#held.add(projectId);
        this.#after(this.o.delayMs, projectId, accountId, arrangementVersion, 1);
      })
      .catch((err: unknown) => this.log.warn({ err, projectId }, 'could not claim the arrangement job; a poll takes it up'));
  }

  async resume(): Promise<number> {
    const shared = this.o.shared;
    if (shared) {
      // No start-up sweep: generating projects nobody holds are claimed by the poll, on
      // whichever node sees them first.
      const every = (ms: number, fn: () => Promise<void>) => {
        const t = setInterval(() => void fn().catch((err: unknown) => this.log.warn({ err }, 'arrangement job loop failed')), ms);
        t.unref();
        this.#loops.push(t);
      };
      every(shared.pollMs, () => this.#poll(shared));
      every(Math.max(100, Math.floor(shared.leaseMs / 3)), async () => {
        const kept = new Set(await this.store.renewJobs('music_projects', shared.node, [...this.#held], shared.leaseMs, this.now()));
        for (const id of this.#held) if (!kept.has(id)) this.#held.delete(id);
      });
      return 0;
    }
    const pending = await this.store.listMusicProjectsByStatus('ARRANGEMENT_GENERATING');
    for (const p of pending) this.schedule(p.id, p.accountId, p.arrangementVersion);
    if (pending.length > 0) this.log.info({ count: pending.length }, 'arrangement jobs resumed');
    return pending.length;
  }

  async #poll(shared: NonNullable<ArrangementJobOptions['shared']>): Promise<void> {
    if (this.#closed || !this.store.isOpen()) return;
    const id = await this.store.claimNextJob('music_projects', GENERATING, shared.node, shared.leaseMs, this.now());
    if (id === null) return;
    this.#held.add(id);
    const p = (await this.store.listMusicProjectsByStatus('ARRANGEMENT_GENERATING')).find((x) => x.id === id);
    if (!p) return this.#release(id);
    this.log.info({ projectId: id }, 'arrangement job taken up from the shared queue');
    this.#after(this.o.delayMs, p.id, p.accountId, p.arrangementVersion, 1);
  }

  async #release(projectId: string): Promise<void> {
    const shared = this.o.shared;
    if (!shared || !this.#held.delete(projectId)) return;
    await this.store.releaseJob({ table: 'music_projects', key: projectId, node: shared.node }).catch(() => undefined);
  }

  /** Stop; on a shared store the claims this node holds are let go, so another node takes
   * the jobs up at its next poll instead of after the lease. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    for (const t of this.#loops.splice(0)) clearInterval(t);
    for (const id of [...this.#held]) await this.#release(id);
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
      if (!p || p.status !== 'ARRANGEMENT_GENERATING' || p.arrangementVersion !== version) return await this.#release(projectId);
      const plan = planArrangement(validateBrief(p.brief));
      const done = await this.store.completeArrangement(projectId, version, plan as unknown as Record<string, unknown>, this.now());
      this.log.info({ projectId, arrangementVersion: version, attempt, stored: done }, 'arrangement generated');
      await this.#release(projectId);
    } catch (err) {
      if (this.#closed || !this.store.isOpen()) return; // shutting down: the next start runs it
      if (attempt < this.o.maxAttempts) {
        const delay = arrangementRetryDelayMs(this.o.retryBaseMs, attempt);
        this.log.warn({ err, projectId, arrangementVersion: version, attempt, retryInMs: delay }, 'arrangement job failed; retrying');
        this.#after(delay, projectId, accountId, version, attempt + 1);
        return;
      }
      this.log.error(
        { err, projectId, arrangementVersion: version, attempt },
        'arrangement job failed on its last attempt; project ARRANGEMENT_FAILED',
      );
      try {
        await this.store.failArrangement(projectId, version, this.now());
        await this.#release(projectId);
      } catch (failErr) {
        this.log.error({ err: failErr, projectId }, 'could not mark the arrangement failed; the job runs again at the next start');
      }
    }
  }
}
