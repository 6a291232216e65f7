// One batch segment through one decoder: the decoder opened (waiting while every decoder is in
// use), started from the channel state the previous segment left, fed, finished, and retried
// on a fresh decoder once if its worker dies. The job's loop (runner.ts) calls it per segment.
import type { Logger } from 'pino';
import { ScribedError } from '../core/errors.js';
import type { Engine, FinalResult, RecognitionStream } from '../engine/types.js';

/** Samples fed to the decoder per call: 1 s at 16 kHz, 2 s at 8 kHz. */
const CHUNK_SAMPLES = 16_000;
/** Attempts per segment when the decoder's worker dies under it. */
const SEGMENT_ATTEMPTS = 2;

/** The runner is stopping: the job is left for the next start (or another node). */
export class Stopping extends Error {}

export interface SegmentDecoding {
  engine: Engine;
  log: Logger;
  heartbeatIntervalMs: number;
  busyRetryMs: number;
  stopping: () => boolean;
}

/** The job's vocabularyHints, and whether the log was told which of them do not apply. */
export interface JobHints {
  words: string[];
  told: boolean;
}

/** The decoder starts from `channel` and the state it ends in is returned (null when the
 * engine keeps none or cannot say). `hints` are applied to the decoder as a live session's
 * are (the pool then retires that decoder, so each hinted segment costs a decoder load). */
export async function decodeSegment(
  deps: SegmentDecoding,
  audio: Int16Array,
  rate: number,
  channel: number[] | null,
  hints: JobHints,
  jlog: Logger,
): Promise<{ result: FinalResult; cpu: number; channelState: number[] | null }> {
  for (let attempt = 1; ; attempt++) {
    const stream = await openDecoder(deps, rate, hints.words);
    if (!hints.told && hints.words.length > 0 && (stream.vocabulary === null || stream.vocabulary.unknown.length > 0)) {
      hints.told = true;
      jlog.warn({ notApplied: stream.vocabulary?.unknown ?? hints.words }, 'vocabulary hints the recognizer could not apply');
    }
    let cpu = 0;
    try {
      // Every open() starts from the initial state (-cmninit): without this, each segment
      // would adapt to the channel all over again, as real time does not.
      if (channel !== null && !(await stream.setChannelState(channel)))
        jlog.warn('the decoder keeps no channel state; segment starts from the initial state');
      for (let i = 0; i < audio.length; i += CHUNK_SAMPLES) {
        cpu += (await stream.accept(audio.subarray(i, i + CHUNK_SAMPLES))).cpuMs;
      }
      const result = await stream.finish();
      // Read between utterances, before the decoder goes back to the pool.
      const channelState = await stream.channelState().catch(() => null);
      return { result, cpu, channelState };
    } catch (err) {
      if (!(err instanceof ScribedError && err.code === 'ENGINE_FAILED') || attempt >= SEGMENT_ATTEMPTS) throw err;
      deps.log.warn({ err }, 'batch decoder failed; retrying the segment on a new decoder');
    } finally {
      await stream.release().catch(() => undefined);
    }
  }
}

/** A decoder, waiting while every decoder is in use. */
async function openDecoder(deps: SegmentDecoding, rate: number, hints: string[]): Promise<RecognitionStream> {
  for (;;) {
    if (deps.stopping()) throw new Stopping();
    try {
      return await deps.engine.open({
        inputRate: rate,
        profile: rate <= 8000 ? 'telephony' : 'wideband',
        heartbeatIntervalMs: deps.heartbeatIntervalMs,
        ...(hints.length > 0 ? { vocabularyHints: hints } : {}),
      });
    } catch (err) {
      if (!(err instanceof ScribedError && err.code === 'ENGINE_BUSY')) throw err;
      await new Promise((r) => setTimeout(r, deps.busyRetryMs));
    }
  }
}
