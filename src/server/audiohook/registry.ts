// The AudioHook connections this node serves, by AudioHook session id: a continued session
// (open with continuedSessions) waits here for the connection it continues to let its legs go,
// and the node's drain asks every connection to reconnect elsewhere (audiohookDrain).
import type { SessionRegistry } from '../../session/registry.js';

/** Whatever holds the node's session registry: the app's context, or the service. */
export interface NodeSessions {
  sessions: SessionRegistry;
}

export interface RegisteredConnection {
  readonly sessionId: string;
  /** Resolves once the connection let its legs go (closed or detached them). */
  readonly released: Promise<void>;
  /** Sends `reconnect`; false when the connection is not in a state to take it. */
  requestReconnect(info: string): boolean;
}

export class AudiohookRegistry {
  private readonly live = new Map<string, RegisteredConnection>();

  add(c: RegisteredConnection): void {
    this.live.set(c.sessionId, c);
  }

  remove(c: RegisteredConnection): void {
    if (this.live.get(c.sessionId) === c) this.live.delete(c.sessionId);
  }

  get size(): number {
    return this.live.size;
  }

  /** Waits (at most `ms`) for the connections of these session ids on this node to let their
   * legs go; ids this node does not serve resolve at once. */
  async releasedOf(ids: readonly string[], ms: number): Promise<void> {
    const waits = ids.flatMap((id) => {
      const c = this.live.get(id);
      return c ? [c.released] : [];
    });
    if (waits.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(waits), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
    clearTimeout(timer);
  }

  reconnectAll(info: string): number {
    let n = 0;
    for (const c of this.live.values()) if (c.requestReconnect(info)) n += 1;
    return n;
  }
}

// Keyed by the node's session registry: one per node, reachable from the app's context and
// from the service (where the drain runs).
const byNode = new WeakMap<SessionRegistry, AudiohookRegistry>();

export function audiohookRegistryOf(node: NodeSessions): AudiohookRegistry {
  let r = byNode.get(node.sessions);
  if (!r) {
    r = new AudiohookRegistry();
    byNode.set(node.sessions, r);
  }
  return r;
}

/**
 * For the node's drain: asks every AudioHook client connected here to reconnect (Genesys opens
 * a new session with continuedSessions, which the balancer sends to another node, then closes
 * this one); answers how many were asked. `open()` counts the connections still here.
 */
export function audiohookDrain(node: NodeSessions): { reconnectAll(info?: string): number; open(): number } {
  const registry = audiohookRegistryOf(node);
  return {
    reconnectAll: (info = 'this node is draining: reconnect') => registry.reconnectAll(info),
    open: () => registry.size,
  };
}
