// Replay of stored audio no decoder has decoded: after a restart (or on the node that took
// the session over) the spool's audio after the last persisted segment; after a recognizer
// failure, the audio acknowledged and not given to the lost decoder yet. It is fed to the
// session's next decoder frame by frame, as it first arrived, before any new audio.
import { toScribedError } from '../core/errors.js';
import { LevelMeter } from '../core/background-speech.js';
import type { DecoderHold } from './decoder-hold.js';
import type { Recognition } from './recognition.js';
import type { SessionContext } from './session-context.js';

export class Replay {
  constructor(
    private readonly ctx: SessionContext,
    private readonly decoder: DecoderHold,
    private readonly recognition: Recognition,
  ) {}

  /** Feed pending replayed audio to the open decoder. False when the recognizer failed on it. */
  async feed(): Promise<boolean> {
    const ctx = this.ctx;
    const replay = ctx.replay;
    const stream = ctx.stream;
    const segmentation = ctx.segmentation;
    if (!replay || !stream || !segmentation) return true;
    ctx.replay = null;
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
    return true;
  }

  /** After a restart: the open segment's audio, read back from the spool, becomes this
   * session's open segment again and is decoded now if a decoder is free (else at the next
   * attach). True when it was decoded (the coordinator then holds the decoder like a paused
   * session's, so a client that resumes continues the same segment). */
  async restore(startSample: bigint, frames: Int16Array[], index: number): Promise<boolean> {
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
      ctx.nextSegmentIndex = index;
      ctx.spoolKeptFrom = startSample;
    } else {
      // The stored next index may already count this segment (progress saves include it).
      ctx.nextSegmentIndex = Math.max(ctx.nextSegmentIndex, index + 1);
      const meter = ctx.options.suppressBackgroundSpeech === true ? new LevelMeter(ctx.rate) : null;
      for (const f of frames) meter?.push(f);
      ctx.segment = { index, startSample, samples, lastPartial: '', meter };
    }
    ctx.replay = { startSample, frames };
    try {
      if (!ctx.stream) await this.decoder.open();
    } catch (err) {
      ctx.log.warn({ err: toScribedError(err).code }, 'no decoder free to restore the open segment now; it is decoded when a socket attaches');
      return false;
    }
    if (!(await this.feed())) return false;
    ctx.log.info({ startSample: startSample.toString(), samples }, 'open segment restored from the spool');
    if (ctx.segment && ctx.segment.samples >= ctx.deps.maxSegmentSeconds * ctx.rate) await this.recognition.finalize('bound');
    return true;
  }
}
