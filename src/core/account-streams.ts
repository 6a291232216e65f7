// How many live sockets one account may hold on one node at once, and the admission that
// keeps it (docs/operations.md "Capacity"). By default there is no bound: an account alone
// may use every recognizer, and accounts that compete share them fairly (src/core/fair-share.ts:
// sockets beyond the recognizers are deferred, and freed recognizers go to the account
// furthest below its share), so no call is refused while a recognizer idles. An operator may
// still cap an account (--max-streams-per-account). Pure: the adapter (src/server/ws/stream.ts)
// admits a handshake before its upgrade and settles it once the socket is attached or refused.

/** The bound on one account's live sockets: the operator's setting (0: no bound); none by
 * default (fair share, not a cap, keeps accounts from starving each other). */
export function accountStreamLimit(configured: number | undefined): number {
  return configured === undefined || configured === 0 ? Infinity : configured;
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
