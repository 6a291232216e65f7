// Start-up recovery from the audio spool: for every session that was live when the server
// stopped (it is PAUSED by now), the audio after its last persisted segment is read back
// from the spool and becomes its open segment again (decoded in the background, and held
// for a resume; in vad mode the detector judges it again and decides where segments lie). The
// session's capturedSamples is raised to what the spool holds: acks sent just before a
// crash may be newer than the last progress save.
import type { Logger } from 'pino';
import type { Store } from '../store/store.js';
import { openSegmentAudio, type AudioSpoolDir } from './audio-spool.js';
import type { SessionRegistry } from './registry.js';

export interface SpoolRecoveryResult {
  sessionId: string;
  restoredSamples: number;
  capturedSamples: bigint;
  tornBytes: number;
}

export async function recoverSpooledSessions(deps: { store: Store; sessions: SessionRegistry; spool: AudioSpoolDir; log: Logger }): Promise<SpoolRecoveryResult[]> {
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
    const persistedEnd = last ? last.endSample : 0n;
    const open = openSegmentAudio(records, persistedEnd);
    const spoolEnd = records.reduce((m, r) => {
      const end = r.startSample + BigInt(r.samples.length);
      return end > m ? end : m;
    }, 0n);
    await store.saveProgress(sessionId, {
      capturedSamples: spoolEnd > record.capturedSamples ? spoolEnd : record.capturedSamples,
      // A crash between persisting a segment and saving progress leaves the index behind.
      nextSegmentIndex: last ? Math.max(record.nextSegmentIndex, last.index + 1) : record.nextSegmentIndex,
    });
    const session = await sessions.get(sessionId, record.accountId);
    // The recognizer's channel state after the last final: the decoder that replays the open
    // segment (or decodes the next one) continues from it, as the lost one would have.
    if (session && channelState) session.restoreChannelState(channelState);
    // Not awaited: decoding the restored audio takes as long as it took the first time, and
    // the server should listen meanwhile. The restore is first in the session's queue, so a
    // resume or a socket for this session waits for it.
    if (session && open) {
      // It keeps the index it had: the one after the last persisted segment.
      void session.restoreOpenSegment(open.startSample, open.frames, last ? last.index + 1 : 0).catch((err: unknown) => log.error({ err, sessionId }, 'restoring the open segment failed'));
    }
    const result = { sessionId, restoredSamples: open?.samples.length ?? 0, capturedSamples: session?.cursor.capturedSamples ?? spoolEnd, tornBytes };
    log.info({ ...result, capturedSamples: result.capturedSamples.toString() }, 'session recovered from the audio spool');
    return result;
  }
}
