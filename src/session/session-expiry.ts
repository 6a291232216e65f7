// Idle sessions end (docs/protocol.md, "Idle sessions expire"): a real-time session with no
// socket whose row has not changed for the configured time (created and never streamed to, or
// its socket gone and never resumed) is closed with what it holds, as POST .../close would, and
// its History row ends `session.expired` (webhooks: session.expired and transcription.completed).
//
// Every node sweeps. The store answers the candidates no other node serves now; each is claimed
// for this node first (the store's lease, fenced by the epoch: another node's socket on it makes
// the claim busy, and a resume anywhere moves the epoch on, so the close's fenced writes change
// nothing), and the session checks again on its own queue that it still has no socket and that
// nothing was stored since. So one node ends a session, and never one resumed in time.
import type { Logger } from 'pino';
import type { Store } from '../store/store.js';
import type { SessionRegistry } from './registry.js';

/** Candidates one sweep looks at; the rest wait for the next sweep. */
const SWEEP_BATCH = 50;

export interface SessionExpiryOptions {
  /** A session idle (no socket, nothing stored) this long ends; 0: never. */
  idleMs: number;
  node: string;
  log: Logger;
  /** True while the node claims no session (draining before it stops). */
  paused?: () => boolean;
}

/** How often a node sweeps: a quarter of the expiry, at most a minute, at least 250 ms. */
export function sweepIntervalMs(idleMs: number): number {
  return Math.min(60_000, Math.max(250, Math.floor(idleMs / 4)));
}

export class SessionExpiry {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: Store,
    private readonly sessions: SessionRegistry,
    private readonly opts: SessionExpiryOptions,
  ) {}

  start(): void {
    if (this.opts.idleMs <= 0 || this.timer) return;
    this.timer = setInterval(() => {
      this.running = this.running.then(() =>
        this.sweep().then(
          () => undefined,
          (err: unknown) => this.opts.log.warn({ err }, 'idle session sweep failed'),
        ),
      );
    }, sweepIntervalMs(this.opts.idleMs));
    this.timer.unref();
  }

  /** Stop sweeping; resolves once a sweep under way is done. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  /** One sweep: the sessions it ended. */
  async sweep(now: Date = new Date()): Promise<string[]> {
    const idleBefore = new Date(now.getTime() - this.opts.idleMs);
    const ended: string[] = [];
    if (this.opts.paused?.()) return ended;
    for (const c of await this.store.listIdleSessions(idleBefore, this.opts.node, now, SWEEP_BATCH)) {
      if (this.sessions.served(c.id)?.hasSocket) continue;
      const session = await this.sessions.take(c.id, null).catch((err: unknown) => {
        this.opts.log.debug({ err, sessionId: c.id }, 'idle session served elsewhere; not expired here');
        return null;
      });
      if (!session) continue;
      // Nothing stored since (a resume, a socket's audio) and no newer epoch, checked on the
      // session's queue after anything queued before it.
      const stillIdle = async () => {
        const stored = await this.store.getSession(session.id, session.accountId);
        return (
          stored !== null &&
          stored.state !== 'CLOSED' &&
          stored.epoch === session.cursor.epoch &&
          stored.updatedAt < idleBefore.toISOString()
        );
      };
      const outcome = await session.expireIdle(stillIdle).catch((err: unknown) => {
        this.opts.log.warn({ err, sessionId: c.id }, 'expiring an idle session failed');
        return null;
      });
      if (outcome === null) {
        // Kept (resumed, or a socket came): let the claim go so any node serves it.
        await this.sessions.releaseIfIdle(session).catch(() => undefined);
        continue;
      }
      ended.push(c.id);
      this.opts.log.info({ sessionId: c.id, idleMs: this.opts.idleMs, deferred: !outcome }, 'idle session expired');
    }
    return ended;
  }
}
