// The in-memory set of live sessions. A session is loaded from the store on first use and
// stays in memory while it is open; a session that closes is dropped, and a closed one read
// from the store is answered without being kept (a host that runs thousands of calls a day
// must not keep them all). Loading is deduplicated so two concurrent requests for one session
// share one LiveSession.
import type { Store } from '../store/store.js';
import { LiveSession, type LiveSessionDeps } from './live-session.js';

export class SessionRegistry {
  private readonly live = new Map<string, LiveSession>();
  private readonly loading = new Map<string, Promise<LiveSession | null>>();

  private readonly deps: LiveSessionDeps;

  constructor(
    private readonly store: Store,
    deps: LiveSessionDeps,
  ) {
    this.deps = { ...deps, reclaimDecoder: () => this.reclaimDecoder(), onClosed: (session) => this.forget(session) };
  }

  /** Free one decoder held by a paused session, oldest-loaded first. */
  private async reclaimDecoder(): Promise<boolean> {
    for (const session of this.live.values()) {
      if (session.holdsIdleDecoder && (await session.releaseHeldDecoder())) return true;
    }
    return false;
  }

  /** The live session, loaded if needed; null when missing or not owned by accountId. */
  async get(sessionId: string, accountId: string): Promise<LiveSession | null> {
    const known = this.live.get(sessionId);
    if (known) return known.accountId === accountId ? known : null;
    let pending = this.loading.get(sessionId);
    if (!pending) {
      pending = this.store.getSession(sessionId, accountId).then((record) => {
        if (!record) return null;
        const existing = this.live.get(sessionId);
        if (existing) return existing;
        const session = new LiveSession(record, this.deps);
        if (record.state !== 'CLOSED') this.live.set(sessionId, session);
        return session;
      });
      this.loading.set(sessionId, pending);
      pending.finally(() => this.loading.delete(sessionId)).catch(() => undefined);
    }
    const session = await pending;
    return session && session.accountId === accountId ? session : null;
  }

  /** Forget a session that closed; its state lives on in the store. */
  forget(session: LiveSession): void {
    if (this.live.get(session.id) === session) this.live.delete(session.id);
  }

  all(): LiveSession[] {
    return [...this.live.values()];
  }

  countByState(): Record<string, number> {
    const counts: Record<string, number> = { RECORDING: 0, PAUSED: 0, CLOSED: 0 };
    for (const s of this.live.values()) counts[s.state] = (counts[s.state] ?? 0) + 1;
    return counts;
  }

  async shutdown(): Promise<void> {
    await Promise.allSettled(this.all().map((s) => s.shutdown()));
  }
}
