// Replay of stored audio no decoder has decoded: after a restart (or on the node that took
// the session over) the spool's audio after the last persisted segment; after a recognizer
// failure, the audio acknowledged and not given to the lost decoder yet. It is fed to the
// session's next decoder frame by frame, as it first arrived, before any new audio.
import { LevelMeter } from '../core/background-speech.js';
import type { Recognition } from './recognition.js';
import type { SessionContext } from './session-context.js';

/** Audio acknowledged and not decoded by a live recognizer (recovered from the spool after a
 * restart, or left undecoded by a recognizer that failed), from `startSample`, frame by frame
 * as it first arrived: fed to the session's next decoder. */
export interface PendingReplay {
  startSample: bigint;
  frames: Int16Array[];
}

export class Replay {
  constructor(
    private readonly ctx: SessionContext,
    private readonly recognition: Recognition,
  ) {}

  /** Audio acknowledged and not decoded yet, fed to the next decoder first. */
  private replay: PendingReplay | null = null;

  /** The open segment prepare() restored, until it is fed. */
  private restored: { startSample: bigint; samples: number } | null = null;

  /** Feed pending replayed audio to the open decoder. False when the recognizer failed on it. */
  async feed(): Promise<boolean> {
    const ctx = this.ctx;
    const replay = this.replay;
    const stream = ctx.stream;
    const segmentation = ctx.segmentation;
    if (!replay || !stream || !segmentation) return true;
    this.replay = null;
    // The recovered audio is judged frame by frame as it was live: in vad mode by a fresh
    // detector from where the spool starts (the old detector's state died with the old
    // decoder); in manual mode from the restored segment's start, so a spool holding more
    // than a segment's bound (acknowledgements do not wait for decoding, so a crash can leave
    // a bound's final undecoded) is cut where the live session cut it.
    segmentation.restartAt(replay.startSample);
    const restored = ctx.segment;
    if (restored) {
      restored.samples = 0;
      restored.meter = restored.meter ? new LevelMeter(ctx.rate) : null;
    }
    let at = replay.startSample;
    for (const frame of replay.frames) {
      if (!(await this.recognition.recognize(stream, frame, at))) return false;
      at += BigInt(frame.length);
    }
    const fromSpool = this.restored;
    this.restored = null;
    if (fromSpool) {
      ctx.log.info({ startSample: fromSpool.startSample.toString(), samples: fromSpool.samples }, 'open segment restored from the spool');
      if (ctx.segment && ctx.segment.samples >= ctx.deps.maxSegmentSeconds * ctx.rate) await this.recognition.finalize('bound');
    }
    return true;
  }

  /** Stored audio is waiting for the session's next decoder. */
  get pending(): boolean {
    return this.replay !== null;
  }

  /** A lost recognizer's audio, acknowledged and not given to it (lost-recognizer.ts). */
  keep(replay: PendingReplay | null): void {
    this.replay = replay;
  }

  /** After a restart, or on the node that took the session over: the open segment's audio,
   * read back from the spool, becomes this session's open segment again, to be fed to the
   * session's next decoder (feed(), before any new audio). The decoder is not opened here: the
   * coordinator loads it beside the session's queue (live-session.ts, loadAside), so a socket
   * is served while a model loads. False when there is nothing to restore. */
  prepare(startSample: bigint, frames: Int16Array[], index: number): boolean {
    const ctx = this.ctx;
    if (ctx.state === 'CLOSED' || ctx.segment) return false;
    const samples = frames.reduce((n, f) => n + f.length, 0);
    // recordAudio: the recorder of this node never saw this audio arrive.
    let recorded = startSample;
    for (const f of frames) {
      ctx.recorder?.audio(recorded, f);
      recorded += BigInt(f.length);
    }
    if (ctx.options.segmentCommitMode === 'vad') {
      // The detector decides again where segments lie in the recovered audio; the first
      // one it opens takes the index of the segment that was open at the crash.
      ctx.restartSegmentsAt(index);
      ctx.spoolHoldsFrom(startSample);
    } else {
      // The stored next index may already count this segment (progress saves include it).
      const meter = ctx.options.suppressBackgroundSpeech === true ? new LevelMeter(ctx.rate) : null;
      for (const f of frames) meter?.push(f);
      ctx.beginSegment(startSample, meter, { index, samples });
    }
    this.replay = { startSample, frames };
    this.restored = { startSample, samples };
    return true;
  }
}
