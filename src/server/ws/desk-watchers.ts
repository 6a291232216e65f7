// Watch sockets a desk session opened, by desk session, so they end with it (docs/desk.md,
// "Sessions"). A session ends in three places this node may not see: a logout on another
// node, `accounts desk-logout` or `revoke-key` run by the operator in a process of its own
// (SQLite or PostgreSQL), and plain expiry. So the node asks the store, every
// DESK_WATCH_POLL_MS while it holds any such socket, which of their desk sessions are over,
// and closes theirs (close 4003). A logout on this node closes them at once as well.
//
// Why a poll and not PostgreSQL's LISTEN/NOTIFY: the CLI ends sessions on SQLite too, where
// there is no notification, and expiry is no event at all; one indexed query of a handful of
// ids four times a second, only while a desk watches, is cheap, and there is one mechanism on
// both stores. It bounds the delay to about a poll plus the query.
import type { AppContext } from '../context.js';
import { SESSION_IDLE_MS } from '../../desk/policy.js';

/** How often a node checks its desk watchers' sessions: a revoked session's sockets close
 * within a second on every node. */
export const DESK_WATCH_POLL_MS = 250;

type End = () => void;

export class DeskWatchers {
  readonly #bySession = new Map<string, Set<End>>();
  #timer: NodeJS.Timeout | null = null;
  #polling = false;

  constructor(
    private readonly ctx: AppContext,
    private readonly pollMs = DESK_WATCH_POLL_MS,
  ) {}

  /** Register a socket's `end`; returns its removal (call it when the socket closes). */
  add(deskSessionId: string, end: End): () => void {
    let set = this.#bySession.get(deskSessionId);
    if (!set) {
      set = new Set();
      this.#bySession.set(deskSessionId, set);
    }
    set.add(end);
    this.#start();
    return () => {
      const s = this.#bySession.get(deskSessionId);
      if (!s) return;
      s.delete(end);
      if (s.size === 0) this.#bySession.delete(deskSessionId);
      if (this.#bySession.size === 0) this.#stop();
    };
  }

  /** End every socket of the desk session on this node now. */
  endSession(deskSessionId: string): void {
    const set = this.#bySession.get(deskSessionId);
    if (!set) return;
    this.#bySession.delete(deskSessionId);
    for (const end of set) end();
    if (this.#bySession.size === 0) this.#stop();
  }

  get size(): number {
    return this.#bySession.size;
  }

  #start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => void this.#poll(), this.pollMs);
    this.#timer.unref();
  }

  #stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  async #poll(): Promise<void> {
    if (this.#polling || this.#bySession.size === 0) return;
    this.#polling = true;
    try {
      const closed = await this.ctx.store.closedDeskSessions([...this.#bySession.keys()], this.ctx.now(), SESSION_IDLE_MS);
      for (const id of closed) {
        this.ctx.log.info({ deskSessionId: id }, 'desk session over: its watch sockets closed');
        this.endSession(id);
      }
    } catch (err) {
      // The next poll tries again; meanwhile the sockets stay as they are.
      this.ctx.log.warn({ err }, 'could not check the desk sessions of watch sockets');
    } finally {
      this.#polling = false;
    }
  }
}

const registries = new WeakMap<AppContext, DeskWatchers>();

/** The node's registry (one per server). */
export function deskWatchers(ctx: AppContext): DeskWatchers {
  let r = registries.get(ctx);
  if (!r) {
    r = new DeskWatchers(ctx);
    registries.set(ctx, r);
  }
  return r;
}
