// Recovery of acknowledged audio that no final covers yet, from a spool: the file spool of
// this node after a restart (recoverSpooledSessions), or the shared spool when a node takes a
// session over (registry.ts). Either way the audio after the session's last persisted segment
// becomes its open segment again (decoded in the background, and held for a resume; in vad
// mode the detector judges it again and decides where segments lie), on a recognizer given
// the channel state spooled with the last final.
import type { Logger } from 'pino';
import type { SessionRecord, Store } from '../store/store.js';
import { openSegmentAudio, type AudioSpoolDir, type SpoolRecord } from './audio-spool.js';
import type { LiveSession } from './live-session.js';

export interface SpoolRecoveryResult {
  sessionId: string;
  restoredSamples: number;
  capturedSamples: bigint;
  tornBytes: number;
}

/** Make the spooled audio after the last persisted segment the session's open segment. */
export async function restoreSpooledAudio(
  deps: { store: Store; log: Logger },
  session: LiveSession,
  record: SessionRecord,
  records: readonly SpoolRecord[],
  channelState: number[] | null,
): Promise<number> {
  const segments = await deps.store.listSegments(record.transcriptionId);
  const last = segments[segments.length - 1];
  const open = openSegmentAudio(records, last ? last.endSample : 0n);
  // The recognizer's channel state after the last final: the decoder that replays the open
  // segment (or decodes the next one) continues from it, as the lost one would have.
  if (channelState) session.restoreChannelState(channelState);
  // Not awaited. The restore is first in the session's queue but only sets the open segment
  // up: its decoder loads beside the queue and decodes it then (live-session.ts, loadAside),
  // so a socket for the session is served, and its audio acknowledged, without waiting for a
  // model load or a replay.
  if (open) {
    // It keeps the index it had: the one after the last persisted segment.
    void session
      .restoreOpenSegment(open.startSample, open.frames, last ? last.index + 1 : 0)
      .catch((err: unknown) => deps.log.error({ err, sessionId: record.id }, 'restoring the open segment failed'));
  }
  return open?.samples.length ?? 0;
}

/** What recovery needs of the session registry (registry.ts, which itself uses
 * restoreSpooledAudio: named here by shape, so the two modules do not import each other). */
export interface SessionTaker {
  take(sessionId: string, accountId: string | null): Promise<LiveSession | null>;
}

export async function recoverSpooledSessions(deps: {
  store: Store;
  sessions: SessionTaker;
  spool: AudioSpoolDir;
  log: Logger;
}): Promise<SpoolRecoveryResult[]> {
  const { store, sessions, spool, log } = deps;
  const paused = new Map((await store.listSessionsByState('PAUSED')).map((s) => [s.id, s]));
  const out: SpoolRecoveryResult[] = [];
  spool.removeLeftovers();
  for (const sessionId of spool.list()) {
    // One unreadable spool must not keep the service (and every other session) down.
    try {
      const result = await recoverOne(sessionId);
      if (result) out.push(result);
    } catch (err) {
      log.error({ err, sessionId }, 'could not recover this session from its spool; file left in place');
    }
  }
  return out;

  async function recoverOne(sessionId: string): Promise<SpoolRecoveryResult | null> {
    const record = paused.get(sessionId);
    if (!record) {
      // Closed (its transcript was persisted before the close) or unknown: nothing to keep.
      spool.remove(sessionId);
      return null;
    }
    const { records, tornBytes, channelState } = spool.read(sessionId);
    if (tornBytes > 0) log.warn({ sessionId, tornBytes }, 'spool had a torn last record (never acknowledged); cut off');
    const segments = await store.listSegments(record.transcriptionId);
    const last = segments[segments.length - 1];
    const spoolEnd = records.reduce((m, r) => {
      const end = r.startSample + BigInt(r.samples.length);
      return end > m ? end : m;
    }, 0n);
    // Acks sent just before a crash may be newer than the last progress save; a crash between
    // persisting a segment and saving progress leaves the index behind. Before the claim: no
    // node serves the session (the data-dir lock says the last process is gone).
    await store.saveProgress(sessionId, {
      capturedSamples: spoolEnd > record.capturedSamples ? spoolEnd : record.capturedSamples,
      nextSegmentIndex: last ? Math.max(record.nextSegmentIndex, last.index + 1) : record.nextSegmentIndex,
    });
    const session = await sessions.take(sessionId, record.accountId);
    if (!session) return null;
    const restoredSamples = await restoreSpooledAudio({ store, log }, session, record, records, channelState);
    const result = { sessionId, restoredSamples, capturedSamples: session.cursor.capturedSamples, tornBytes };
    log.info({ ...result, capturedSamples: result.capturedSamples.toString() }, 'session recovered from the audio spool');
    return result;
  }
}
