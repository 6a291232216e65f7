// Waiting for Characters (docs/ingest.md "Giving up"): while the server says accepting: false
// for want of Characters, ask again by resuming every retryMs, and give up once timeoutMs has
// passed since the server stopped accepting, naming the command that fixes it.
import { StreamFatalError } from './session-http.js';
import type { StreamEventState } from './stream-events.js';
import { CREDIT_FIX } from './stream-options.js';

export interface CreditWaitHooks {
  giveUp(err: StreamFatalError): void;
  /** Close the socket without `close`: the session pauses, the loop resumes, and the resume
   * (and the next ready) say whether the account can pay again. */
  askAgain(): void;
}

export class CreditWait {
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly state: StreamEventState,
    private readonly bounds: { timeoutMs: number; retryMs: number },
    private readonly hooks: CreditWaitHooks,
  ) {}

  /** The server stopped accepting for want of Characters (again). */
  schedule(): void {
    if (this.timer) return;
    const verdict = this.state.creditVerdict(Date.now(), this.bounds.timeoutMs, this.bounds.retryMs);
    if (verdict.giveUp) {
      this.hooks.giveUp(
        new StreamFatalError(
          'INSUFFICIENT_CHARACTERS',
          `the account has no Characters left and got none within ${Math.round(this.bounds.timeoutMs / 1000)} s; ${CREDIT_FIX}, then run again with the same --stream-id to continue the session`,
        ),
      );
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.state.accepting) return;
      if (this.state.creditVerdict(Date.now(), this.bounds.timeoutMs, this.bounds.retryMs).giveUp) this.schedule();
      else this.hooks.askAgain();
    }, verdict.retryInMs);
    this.timer.unref();
  }

  clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
