// Fair share of a node's recognizers among accounts (so one busy tenant cannot starve the others). One account may use every
// recognizer while no other account waits; when accounts compete, each is owed at least its
// share (recognizers / competing accounts), and a freed recognizer goes to the waiting session
// whose account is furthest below its share; an account holding two or more than a waiting one
// gives one back between segments (preemption). Pure: the recognizer queue
// (src/session/recognizer-queue.ts) asks it which deferred session to serve next and who yields.

/** Recognizers each of `competing` accounts is owed on a node of `decoders` (fractional: with
 * 3 recognizers and 2 accounts each is owed 1.5, so the one holding 1 comes before the one
 * holding 2). A lone account is owed them all. */
export function fairShare(decoders: number, competing: number): number {
  return competing > 0 ? decoders / competing : decoders;
}

/** Accounts competing now: those holding a recognizer and those with a session waiting. */
export function competingAccounts(waiting: readonly string[], held: ReadonlyMap<string, number>): Set<string> {
  const accounts = new Set(waiting);
  for (const [account, n] of held) if (n > 0) accounts.add(account);
  return accounts;
}

/**
 * Which waiting session a freed recognizer goes to: the index (in `waiting`, the accounts of
 * the waiting sessions, longest-waiting first) of the one whose account is furthest below its
 * share, counting what it holds (`held`: recognizers per account) and what this choice has
 * already handed it. Ties go to the longest-waiting. -1 when nobody waits.
 */
export function nextToServe(waiting: readonly string[], held: ReadonlyMap<string, number>, decoders: number): number {
  if (waiting.length === 0) return -1;
  const share = fairShare(decoders, competingAccounts(waiting, held).size);
  let best = -1;
  let bestDeficit = -Infinity;
  waiting.forEach((account, i) => {
    const deficit = share - (held.get(account) ?? 0);
    if (deficit > bestDeficit) {
      best = i;
      bestDeficit = deficit;
    }
  });
  return best;
}

/**
 * Preemption: when a waiting session's account holds at least two recognizers fewer than
 * another account, that account gives one back (its session yields between segments, and
 * waits deferred like any other). The gap of two means a transfer never reverses itself: after
 * it the giver still holds at least as many as the taker. Returns the account that should
 * yield (the one holding most; ties to the first seen) and the waiting account it yields to,
 * or null when the split is already as even as whole recognizers allow.
 */
export function accountToYield(waiting: readonly string[], held: ReadonlyMap<string, number>): { from: string; to: string } | null {
  let best: { from: string; to: string; gap: number } | null = null;
  for (const to of new Set(waiting)) {
    const taker = held.get(to) ?? 0;
    for (const [from, giver] of held) {
      const gap = giver - taker;
      if (from !== to && gap >= 2 && (!best || gap > best.gap)) best = { from, to, gap };
    }
  }
  return best && { from: best.from, to: best.to };
}
