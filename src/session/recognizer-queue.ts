// Sessions whose recognition is deferred (src/core/recognition-backlog.ts), in the order they
// started waiting. A freed recognizer goes to the session whose account is furthest below its
// fair share of the node's recognizers, the longest-waiting first among equals
// (src/core/fair-share.ts): the queue offers it whenever a live session lets a decoder go, and
// on a short timer for decoders freed elsewhere (batch jobs share the pool). A session stays
// known to the queue until it has caught up, so sessions held by the backlog bound are told
// when there is room. When none is free and an account holds two or more recognizers than a
// waiting one, the queue asks the registry for one of its sessions to yield (preemption).
import { accountToYield, nextToServe } from '../core/fair-share.js';
import type { BacklogBudget } from '../core/recognition-backlog.js';

/** What the queue needs of a deferred session (LiveSession implements it). */
export interface DeferredSession {
  readonly id: string;
  readonly accountId: string;
  /** Try to get a recognizer and start catching up: 'started', 'busy' (none free), or 'gone'
   * (the session no longer waits: closed, moved, or caught up meanwhile). */
  tryCatchUp(): Promise<'started' | 'busy' | 'gone'>;
  /** The backlog has room again: a session held by the bound may accept audio again. */
  backlogHasRoom(): void;
}

const RETRY_MS = 200;

/** The node's recognizers and how many each account holds now (the registry tells). */
export interface RecognizerUsage {
  decoders: number;
  held: ReadonlyMap<string, number>;
}

export class RecognizerQueue {
  /** Waiting for a recognizer, oldest first. */
  private readonly waiting: DeferredSession[] = [];
  /** Deferred, waiting or catching up. */
  private readonly deferred = new Set<DeferredSession>();
  private timer: NodeJS.Timeout | null = null;
  private pumping = false;
  private again = false;
  /** Without it (no registry wired yet) the longest-waiting session is served first. */
  private usage: (() => RecognizerUsage) | null = null;
  /** Asks a session of the account to give its recognizer back between segments. */
  private yieldFrom: ((accountId: string) => void) | null = null;

  constructor(readonly budget: BacklogBudget) {}

  /** Where the queue reads who holds the node's recognizers, for the fair-share order. */
  observeUsage(usage: () => RecognizerUsage, yieldFrom?: (accountId: string) => void): void {
    this.usage = usage;
    this.yieldFrom = yieldFrom ?? null;
  }

  /** Sessions waiting for a recognizer now. */
  get waitingCount(): number {
    return this.waiting.length;
  }

  /** Sessions whose recognition runs behind (waiting or catching up). */
  get deferredCount(): number {
    return this.deferred.size;
  }

  /** True when a session attaching now should queue behind others rather than take a freed
   * recognizer first. */
  hasWaiters(): boolean {
    return this.waiting.length > 0;
  }

  wait(session: DeferredSession): void {
    this.deferred.add(session);
    if (!this.waiting.includes(session)) this.waiting.push(session);
    this.arm();
    this.decoderFreed();
  }

  /** The session caught up, closed or left: the queue forgets it. */
  done(session: DeferredSession): void {
    this.deferred.delete(session);
    const i = this.waiting.indexOf(session);
    if (i >= 0) this.waiting.splice(i, 1);
    if (this.deferred.size === 0) this.disarm();
  }

  /** A recognizer may be free: hand it to the session whose account is furthest below its share. */
  decoderFreed(): void {
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    void this.pump().finally(() => {
      this.pumping = false;
      if (this.again) {
        this.again = false;
        this.decoderFreed();
      }
    });
  }

  private async pump(): Promise<void> {
    while (this.waiting.length > 0) {
      const next = this.waiting[this.nextIndex()]!;
      const outcome = await next.tryCatchUp().catch(() => 'gone' as const);
      if (outcome === 'busy') return this.preempt();
      // 'started' or 'gone': the session no longer waits for a recognizer.
      const i = this.waiting.indexOf(next);
      if (i >= 0) this.waiting.splice(i, 1);
      if (outcome === 'gone') this.deferred.delete(next);
    }
  }

  /** Every recognizer busy: an account far above a waiting one's holding gives one back. The
   * session yields when it is between segments; until then the timer asks again. */
  private preempt(): void {
    if (!this.usage || !this.yieldFrom) return;
    const pair = accountToYield(
      this.waiting.map((s) => s.accountId),
      this.usage().held,
    );
    if (pair) this.yieldFrom(pair.from);
  }

  private nextIndex(): number {
    if (!this.usage) return 0;
    const { decoders, held } = this.usage();
    return Math.max(
      0,
      nextToServe(
        this.waiting.map((s) => s.accountId),
        held,
        decoders,
      ),
    );
  }

  private arm(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      if (this.waiting.length > 0) this.decoderFreed();
      if (this.budget.hasRoom()) for (const s of this.deferred) s.backlogHasRoom();
    }, RETRY_MS);
    this.timer.unref();
  }

  private disarm(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  stop(): void {
    this.disarm();
  }
}
