// Deferred recognition (a busy node still takes the call): when every recognizer of a node is busy, a session is still
// accepted; its audio is spooled and acknowledged as usual and waits here, in order with the
// client's commits and close, until a recognizer frees and the session catches up. Pure: the
// live session does the I/O (src/session/live-session.ts), the registry hands out freed
// recognizers in arrival order (src/session/recognizer-queue.ts).
//
// The wait is bounded per node, in seconds of audio, because waiting audio is held in memory:
// a socket that would start deferred past the bound is refused as before (ENGINE_BUSY), and a
// deferred session whose next frame would take the node past it is told `accepting: false`
// (RECOGNITION_BACKLOG) until the backlog has drained below the bound again.

/** The bound on one node unless the operator sets it: ten minutes of audio, about 10 MB at
 * 8 kHz (60 MB at 48 kHz), enough to carry a few calls through another call's end. */
export const DEFAULT_MAX_DEFERRED_SECONDS = 600;

/** What waits for the recognizer, in the order the client sent it. */
export type BacklogItem =
  | { kind: 'audio'; at: bigint; samples: Int16Array; arrivedAtMs: number }
  /** The client's commit: its `committed` event carries the cursor at the time it was sent. */
  | { kind: 'commit'; capturedSamples: string }
  /** The client's close (`expired`: the idle expiry's, which closes as the client's does). */
  | { kind: 'close'; expired?: boolean };

/** One session's waiting items. */
export class SessionBacklog {
  private items: BacklogItem[] = [];
  private head = 0;
  private waitingSamples = 0;

  constructor(readonly rate: number) {}

  push(item: BacklogItem): void {
    this.items.push(item);
    if (item.kind === 'audio') this.waitingSamples += item.samples.length;
  }

  /** Audio waiting, in seconds. */
  get seconds(): number {
    return this.waitingSamples / this.rate;
  }

  get empty(): boolean {
    return this.head >= this.items.length;
  }

  get closeRequested(): boolean {
    for (let i = this.head; i < this.items.length; i++) if (this.items[i]!.kind === 'close') return true;
    return false;
  }

  /** The next items to recognize, about `maxSeconds` of audio with the markers among them, so
   * a long backlog is fed in turns and frames arriving meanwhile are not held up behind it. */
  take(maxSeconds: number): BacklogItem[] {
    const out: BacklogItem[] = [];
    let samples = 0;
    const max = Math.max(1, Math.round(maxSeconds * this.rate));
    while (this.head < this.items.length && samples < max) {
      const item = this.items[this.head]!;
      this.items[this.head] = undefined as unknown as BacklogItem; // let the samples go
      this.head += 1;
      out.push(item);
      if (item.kind === 'audio') {
        samples += item.samples.length;
        this.waitingSamples -= item.samples.length;
      }
    }
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return out;
  }

  /** Everything still waiting is dropped (the session left the node or its recognizer failed);
   * returns the seconds of audio dropped. The audio itself is still in the session's spool. */
  clear(): number {
    // Summed frame by frame in whole microseconds, as the budget counted them in.
    let waitingUs = 0;
    for (let i = this.head; i < this.items.length; i++) {
      const item = this.items[i]!;
      if (item.kind === 'audio') waitingUs += us(item.samples.length / this.rate);
    }
    const seconds = waitingUs / 1e6;
    this.items = [];
    this.head = 0;
    this.waitingSamples = 0;
    return seconds;
  }
}

/** The node's bound on audio waiting for a recognizer, summed over its sessions. Kept in
 * whole microseconds, so that adding and removing the same frames comes back to zero exactly
 * (float seconds would drift). */
export class BacklogBudget {
  private waitingUs = 0;
  private readonly boundUs: number;

  /** `boundSeconds` 0: recognition is never deferred (a busy node refuses with ENGINE_BUSY). */
  constructor(readonly boundSeconds: number) {
    this.boundUs = Math.round(boundSeconds * 1e6);
  }

  get enabled(): boolean {
    return this.boundUs > 0;
  }

  /** Seconds of audio waiting on this node now. */
  get seconds(): number {
    return this.waitingUs / 1e6;
  }

  /** A new session may start deferred. */
  hasRoom(): boolean {
    return this.enabled && this.waitingUs < this.boundUs;
  }

  /** Whether `seconds` more audio may wait. */
  fits(seconds: number): boolean {
    return this.enabled && this.waitingUs + us(seconds) <= this.boundUs;
  }

  add(seconds: number): void {
    this.waitingUs += us(seconds);
  }

  remove(seconds: number): void {
    this.waitingUs = Math.max(0, this.waitingUs - us(seconds));
  }
}

function us(seconds: number): number {
  return Math.round(seconds * 1e6);
}
