// How many live sockets one account may hold on one node at once, and the admission that
// keeps it (docs/operations.md "Capacity"). Without a bound, one account's client
// (a runaway loop, a misconfigured PBX) could take every recognizer of a node and every
// other account would get ENGINE_BUSY. Pure: the adapter (src/server/ws/stream.ts) admits a
// handshake before its upgrade and settles it once the socket is attached or refused.

/** The bound for a node with `decoders` recognizers. An operator's setting wins (0: no
 * bound); by default an account may take all but one, so another account always finds one
 * free, and a one-decoder node is left unbounded (there is nothing to share). */
export function accountStreamLimit(decoders: number, configured: number | undefined): number {
  if (configured !== undefined) return configured === 0 ? Infinity : configured;
  return decoders > 1 ? decoders - 1 : Infinity;
}

/** Handshakes admitted and not yet attached, per account and session. A socket counts against
 * its account while its handshake is in flight (here) and then while its session holds it
 * (the caller's `streaming`), so a session that sent `closed` gives its place back at once. */
export class AccountStreams {
  private readonly pending = new Map<string, Map<string, number>>();

  /** Admit a handshake for `sessionId` of `accountId` when the sessions it streams
   * (`streaming`: its sessions holding a socket now) and those with handshakes in flight are
   * fewer than `limit`. A session already counted is always admitted (a superseding socket
   * replaces its predecessor; the session counts once). Checked and taken in one step, so two
   * handshakes racing cannot both pass the last place. Every admission is settled once. */
  tryAdmit(accountId: string, sessionId: string, limit: number, streaming: Iterable<string>): boolean {
    let sessions = this.pending.get(accountId);
    const counted = new Set(streaming);
    for (const id of sessions?.keys() ?? []) counted.add(id);
    if (!counted.has(sessionId) && counted.size >= limit) return false;
    if (!sessions) this.pending.set(accountId, (sessions = new Map()));
    sessions.set(sessionId, (sessions.get(sessionId) ?? 0) + 1);
    return true;
  }

  /** The handshake attached (its session now counts it) or failed. */
  settle(accountId: string, sessionId: string): void {
    const sessions = this.pending.get(accountId);
    const handshakes = sessions?.get(sessionId);
    if (!sessions || handshakes === undefined) return;
    if (handshakes > 1) sessions.set(sessionId, handshakes - 1);
    else sessions.delete(sessionId);
    if (sessions.size === 0) this.pending.delete(accountId);
  }

  /** Sessions of the account with a handshake in flight. */
  inFlight(accountId: string): number {
    return this.pending.get(accountId)?.size ?? 0;
  }
}
