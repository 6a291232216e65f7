// The node's group debit (docs/scaling.md, "Group debit"): every live session pays for its
// audio once per started second before the audio is accepted (frame-intake.ts). Asked one
// transaction each, a node's calls of one account (a call center is one tenant) took turns on
// that account's row, a hundred transactions a second for a hundred calls. Here the debits
// are carried out in ONE transaction for the node (store.debitMany), at most one every
// `windowMs`: a debit asked when the last transaction started longer ago than that goes at
// once (a node with few calls pays no wait), and debits asked sooner wait for the window's end
// and go together. So a node asks the database for at most about 1000 / windowMs debit
// transactions a second however many calls it carries.
//
// Each debit is answered on its own: the new balance, or null when the account could not
// cover it (the frame is refused, as with debitCharacters). A transaction that fails fails
// every debit it carried, and nothing is retried here: those frames are refused and so never
// acknowledged, and the client sends them again. A transaction that failed may still have
// committed (its connection died during COMMIT, the primary failing over): each debit carries
// an id naming the session and the charge it brings it to (sessionDebitId), the frame sent
// again asks the same debit with the same id, and the store charges an id once (and a session
// only up to the charge a debit names: a frame sent again cut differently is not charged for
// what the lost commit already charged).
import type { Logger } from 'pino';
import type { DebitOutcome, SessionDebit, Store } from '../store/store.js';

/** What frame intake asks of a debit batcher: debitCharacters with a session, batched. */
export interface SessionDebits {
  /** `chargedTo`: the session's charge once this debit is carried out (see SessionDebit). */
  debit(
    accountId: string,
    amount: bigint,
    reason: string,
    ref: string | null,
    sessionId: string,
    chargedTo?: bigint,
  ): Promise<bigint | null>;
}

/** A session's debit, named by the characters charged to the session once it is carried out:
 * charges only grow, so this names one debit, and the frame asking it again after a failure
 * (the session's charge unchanged in memory) names the same one. */
export function sessionDebitId(sessionId: string, chargedAfter: bigint): string {
  return `${sessionId}:${chargedAfter}`;
}

export interface DebitBatcherOptions {
  store: Pick<Store, 'debitMany'>;
  /** The window (the spool's, SCRIBED_SPOOL_FSYNC_MS). */
  windowMs: number;
  log?: Logger;
}

interface Waiter {
  debit: SessionDebit;
  resolve(balance: bigint | null): void;
  reject(err: Error): void;
}

export class DebitBatcher implements SessionDebits {
  private pending: Waiter[] = [];
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  /** When the last transaction started (ms since the epoch; 0: none yet). */
  private lastStart = 0;
  /** Set by drain(): from then on a debit goes at once, without waiting for a window. */
  private draining = false;
  /** Transactions so far: for tests and the bench's arithmetic. */
  transactions = 0;

  constructor(private readonly opts: DebitBatcherOptions) {}

  debit(
    accountId: string,
    amount: bigint,
    reason: string,
    ref: string | null,
    sessionId: string,
    chargedTo?: bigint,
  ): Promise<bigint | null> {
    const named = chargedTo === undefined ? {} : { id: sessionDebitId(sessionId, chargedTo), chargedTo };
    return new Promise((resolve, reject) => {
      this.pending.push({ debit: { accountId, sessionId, amount, reason, ref, ...named }, resolve, reject });
      this.schedule();
    });
  }

  /** Resolves once no transaction is in flight. */
  idle(): Promise<void> {
    return this.running ?? Promise.resolve();
  }

  /** At shutdown, before the store closes (service.ts): every debit asked so far is carried
   * out now, without waiting for its window, and answered; resolves when none is pending or in
   * flight. A debit asked while the store is still open after this goes at once. Without it, a
   * debit waiting for its window when the store closed would fail, and its frame, already
   * spooled by then, would never be paid for. */
  async drain(): Promise<void> {
    this.draining = true;
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
      this.begin();
    }
    while (this.running) await this.running;
  }

  private schedule(): void {
    if (this.timer || this.running || this.pending.length === 0) return;
    if (this.draining) return this.begin();
    const wait = Math.max(0, this.lastStart + this.opts.windowMs - Date.now());
    this.timer = setTimeout(() => {
      this.timer = null;
      this.begin();
    }, wait);
  }

  private begin(): void {
    this.lastStart = Date.now();
    this.running = this.carryOut().finally(() => {
      this.running = null;
      this.schedule();
    });
  }

  private async carryOut(): Promise<void> {
    const batch = this.pending;
    this.pending = [];
    let outcomes: DebitOutcome[];
    try {
      this.transactions += 1;
      outcomes = await this.opts.store.debitMany(batch.map((w) => w.debit));
    } catch (err) {
      this.opts.log?.warn({ err, debits: batch.length }, 'group debit failed; its frames are refused');
      for (const w of batch) w.reject(err as Error);
      return;
    }
    batch.forEach((w, i) => {
      const o = outcomes[i];
      if (!o) w.reject(new Error(`group debit did not answer for session ${w.debit.sessionId}`));
      else if (o.kind === 'debited') w.resolve(o.balance);
      else if (o.kind === 'short') w.resolve(null);
      else w.reject(o.error);
    });
  }
}
