// Whether a recognizer is free on this node: the one answer the stream handshakes (native and
// every facade, through the registry's hasRoomFor), /readyz and a restored session's decoder
// load (live-session.ts) read, so they cannot disagree on what "free" means.
import type { Engine } from '../engine/types.js';

/** This node's decoders and how many a new live socket could get now. */
export interface RecognizerRoom {
  /** maxDecoders. */
  decoders: number;
  /** Checked out: streaming, starting, held by a paused session, or decoding a batch segment. */
  busy: number;
  /** Of the busy ones, those held by paused sessions: a socket that attaches takes one of these
   * back before it is refused (registry.ts, reclaimDecoder). */
  reclaimable: number;
}

/** What the pool says now and how many of its decoders paused sessions hold; null when the
 * engine cannot tell. */
export function recognizerRoom(engine: Engine, sessions: Iterable<{ readonly holdsIdleDecoder: boolean }>): RecognizerRoom | null {
  const pool = engine.capacity?.();
  if (!pool) return null;
  let reclaimable = 0;
  for (const session of sessions) if (session.holdsIdleDecoder) reclaimable++;
  return { decoders: pool.decoders, busy: pool.busy, reclaimable: Math.min(reclaimable, pool.busy) };
}

/** True when `n` recognizers could be had now, counting those paused sessions hold (an engine
 * that cannot tell: assumed). */
export function recognizersFree(room: RecognizerRoom | null, n: number): boolean {
  return room === null || room.decoders - room.busy + room.reclaimable >= n;
}
