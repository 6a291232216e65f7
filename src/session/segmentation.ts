// Where a live session's segments begin and end: the one seam between segmentCommitMode
// "manual" (the client commits; a segment is cut at the server's bound) and "vad" (the voice
// detector commits at pauses and drops the silence between segments). Both answer each
// accepted frame with the same actions, which LiveSession carries out in order: open a
// segment, feed audio to the recognizer, end the segment.
import type { FinalTrigger } from '../core/protocol.js';
import type { RecognitionStream } from '../engine/types.js';
import { VadTracker, type VadAction } from '../vad/vad-tracker.js';
import type { SegmenterConfig } from '../vad/segmenter.js';

export type SegmentAction =
  { type: 'open'; startSample: bigint } | { type: 'feed'; samples: Int16Array } | { type: 'end'; trigger: FinalTrigger };

export interface Segmentation {
  /** The actions for `samples`, accepted at session sample `at`, while a segment of
   * `openSamples` is open (null: none). May ask the recognizer's voice detector. */
  judge(stream: RecognitionStream, samples: Int16Array, at: bigint, openSamples: number | null): Promise<SegmentAction[]>;
  /** Before a segment is ended from outside (commit, close, pause, shutdown): audio taken but
   * not judged yet, to be fed first so nothing received is left out of the segment. */
  flush(): SegmentAction[];
  /** Replay after a crash starts at `sample`: judging restarts there. */
  restartAt(sample: bigint): void;
  /** Between segments, the first sample a recovery would still need; null when the open
   * segment decides (manual mode: the spool is trimmed with each final). */
  neededFrom(): bigint | null;
}

/** segmentCommitMode "manual": one segment from the first audio to the client's commit, cut
 * at the bound exactly: the frame that crosses it is split, the next segment opening with its
 * rest. So where a bound falls does not depend on how the client framed its audio (a paced
 * and an unpaced client frame differently, and a resume on another node re-frames what is
 * sent again): the same audio gives the same segments, and words, either way. */
export class ManualSegmentation implements Segmentation {
  constructor(private readonly boundSamples: number) {}

  async judge(_stream: RecognitionStream, samples: Int16Array, at: bigint, openSamples: number | null): Promise<SegmentAction[]> {
    const actions: SegmentAction[] = [];
    let open = openSamples;
    let from = 0;
    do {
      if (open === null) {
        actions.push({ type: 'open', startSample: at + BigInt(from) });
        open = 0;
      }
      const take = Math.min(samples.length - from, Math.max(0, this.boundSamples - open));
      actions.push({ type: 'feed', samples: take === samples.length ? samples : samples.subarray(from, from + take) });
      from += take;
      open += take;
      if (open >= this.boundSamples) {
        actions.push({ type: 'end', trigger: 'bound' });
        open = null;
      }
    } while (from < samples.length);
    return actions;
  }

  flush(): SegmentAction[] {
    return [];
  }

  restartAt(): void {}

  neededFrom(): null {
    return null;
  }
}

/** segmentCommitMode "vad": the detector's tracker (src/vad/vad-tracker.ts) decides; its
 * sample numbers count from `origin`, the session sample it started judging at. The origin
 * given at construction (the capture cursor when the decoder opened) is a guess: the first
 * frame judged, or a replay's restartAt, places it. A decoder opened after audio was held for
 * it (a taken-over session whose decoder loaded beside its queue, a deferred one) first
 * judges audio captured before the cursor it was opened at; counting from the cursor moved
 * every segment of the session later by the held audio's length, past the call's end. */
export class VadSegmentation implements Segmentation {
  private readonly tracker: VadTracker;
  private placed = false;

  constructor(
    segmenter: SegmenterConfig,
    windowSamples: number,
    private origin: bigint,
  ) {
    this.tracker = new VadTracker(segmenter, windowSamples);
  }

  async judge(stream: RecognitionStream, samples: Int16Array, at?: bigint): Promise<SegmentAction[]> {
    if (!this.placed && at !== undefined) this.origin = at;
    this.placed = true;
    return this.actions(this.tracker.push(samples, await stream.detect(samples)));
  }

  flush(): SegmentAction[] {
    return this.actions(this.tracker.forceCommit().filter((a) => a.type === 'feed'));
  }

  restartAt(sample: bigint): void {
    this.origin = sample;
    this.placed = true;
  }

  neededFrom(): bigint | null {
    return this.tracker.inSegment ? null : this.origin + BigInt(this.tracker.heldStart);
  }

  private actions(actions: VadAction[]): SegmentAction[] {
    return actions.map((a): SegmentAction => {
      if (a.type === 'open') return { type: 'open', startSample: this.origin + BigInt(a.startSample) };
      if (a.type === 'feed') return a;
      return { type: 'end', trigger: a.reason === 'silence' ? 'vad' : a.reason === 'forced' ? 'commit' : 'bound' };
    });
  }
}
