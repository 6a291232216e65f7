// The session's recognition feed: audio stored and acknowledged, with the client's commits
// and close among it, waits here in order and is fed to the recognizer one item after
// another, off the session's queue. So an ack never waits for recognition (a detect round
// trip, a decoder busy or stalled): intake stores the frame, acknowledges it, and leaves it
// here. The feed is the session's deferred backlog as well (src/core/recognition-backlog.ts):
// while no recognizer is free it only gathers, counted against the node's bound.
import { SessionBacklog, type BacklogBudget, type BacklogItem } from '../core/recognition-backlog.js';

export class RecognitionFeed {
  private readonly items: SessionBacklog;
  private pumping: Promise<void> | null = null;
  /** A recognizer is there and nothing else uses it: items are fed as they come. */
  private feeding = false;
  /** Deferred: the node's budget counts this session's waiting audio. */
  private budget: BacklogBudget | null = null;
  private progressed: Array<() => void> = [];

  constructor(
    private readonly rate: number,
    /** Recognize one item; false when the recognizer is gone (feeding stops). */
    private readonly handle: (item: BacklogItem, deferred: boolean) => Promise<boolean>,
    /** Everything fed (the pump ran dry). */
    private readonly drained: () => void,
  ) {
    this.items = new SessionBacklog(rate);
  }

  /** Audio waiting, in seconds. */
  get seconds(): number {
    return this.items.seconds;
  }

  get empty(): boolean {
    return this.items.empty;
  }

  get counted(): boolean {
    return this.budget !== null;
  }

  push(item: BacklogItem): void {
    if (this.budget && item.kind === 'audio') this.budget.add(item.samples.length / this.rate);
    this.items.push(item);
    this.kick();
  }

  /** Feed the recognizer from now on (it is open, and the audio restored before is fed). */
  start(): void {
    this.feeding = true;
    // Nothing waiting and nothing under way: the feed is dry now (a deferred session that
    // took a recognizer before any audio came has caught up). A pump under way reports it
    // when it ends.
    if (!this.pumping && this.items.empty) this.drained();
    else this.kick();
  }

  /** Stop after the item under way (the recognizer is released or lost). */
  stop(): void {
    this.feeding = false;
    this.wake();
  }

  /** Deferred recognition: waiting audio counts against the node's bound (from now on). */
  count(budget: BacklogBudget): void {
    this.budget = budget;
  }

  uncount(): void {
    this.budget = null;
  }

  /** Resolves once no item is being fed (the recognition state is the caller's until it
   * pushes or starts again). */
  async idle(): Promise<void> {
    while (this.pumping) await this.pumping;
  }

  /** Resolves once at most `seconds` of audio wait, or nothing is being fed: a live session
   * more than that behind is not taken more audio (its acks wait), so memory stays bounded. */
  async whenBelow(seconds: number): Promise<void> {
    while (this.behind(seconds)) await new Promise<void>((resolve) => this.progressed.push(resolve));
  }

  /** More than `seconds` of audio waits while feeding (whenBelow would wait): a check before
   * it spares each frame an await when, as nearly always, nothing is that far behind. */
  behind(seconds: number): boolean {
    return this.feeding && this.items.seconds > seconds;
  }

  /** Everything waiting is taken out (the node's budget gets it back), in order. */
  clear(): BacklogItem[] {
    const out = this.items.take(Number.POSITIVE_INFINITY);
    this.uncountTaken(out);
    this.wake();
    return out;
  }

  private uncountTaken(items: BacklogItem[]): void {
    // Frame by frame, as they were counted in.
    if (this.budget) for (const item of items) if (item.kind === 'audio') this.budget.remove(item.samples.length / this.rate);
  }

  private wake(): void {
    if (this.progressed.length === 0) return;
    for (const resolve of this.progressed.splice(0)) resolve();
  }

  private kick(): void {
    if (this.pumping || !this.feeding || this.items.empty) return;
    this.pumping = this.pump();
  }

  /** Feeds until nothing waits (or feeding stops), then reports it dry. One pump per run dry,
   * not per item: a live session's frames each start one (they come one at a time, each fed
   * before the next arrives), so it is kept to a single async call, its own try/catch and no
   * promise chained to it. */
  private async pump(): Promise<void> {
    try {
      while (this.feeding && !this.items.empty) {
        const deferred = this.budget !== null;
        const taken = this.items.take(0);
        this.uncountTaken(taken);
        for (const item of taken) {
          let ok: boolean;
          try {
            ok = await this.handle(item, deferred);
          } catch {
            ok = false;
          }
          if (!ok) {
            this.feeding = false;
            this.wake();
            return;
          }
        }
        this.wake();
      }
    } finally {
      this.pumping = null;
    }
    if (this.feeding && this.items.empty) this.drained();
  }
}
