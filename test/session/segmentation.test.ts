// The segmentation seam without a server: manual mode's bound, vad mode's actions on the
// session timeline (the real tracker, with the detector's verdicts given per window).
import { describe, expect, it } from 'vitest';
import { ManualSegmentation, VadSegmentation, type SegmentAction } from '../../src/session/segmentation.js';
import { vadSettings } from '../../src/vad/settings.js';
import { VAD_WINDOW_SAMPLES } from '../../src/vad/window.js';
import type { RecognitionStream } from '../../src/engine/types.js';

const frame = (n: number) => new Int16Array(n);
const noDetector = {} as RecognitionStream;

describe('ManualSegmentation', () => {
  it('opens at the first audio, feeds every frame, and ends with the frame that reaches the bound', async () => {
    const m = new ManualSegmentation(1000);
    expect(await m.judge(noDetector, frame(400), 5000n, null)).toEqual([
      { type: 'open', startSample: 5000n },
      { type: 'feed', samples: frame(400) },
    ]);
    expect(await m.judge(noDetector, frame(400), 5400n, 400)).toEqual([{ type: 'feed', samples: frame(400) }]);
    expect(await m.judge(noDetector, frame(200), 5800n, 800)).toEqual([
      { type: 'feed', samples: frame(200) },
      { type: 'end', trigger: 'bound' },
    ]);
    expect(m.flush()).toEqual([]);
    expect(m.neededFrom()).toBeNull();
  });

  it('cuts at the bound exactly whatever the framing: a frame across it is split, the next segment opening with its rest', async () => {
    const m = new ManualSegmentation(1000);
    const samples = Int16Array.from({ length: 2500 }, (_, i) => i);
    const cuts = async (size: number) => {
      const ends: bigint[] = [];
      let open: number | null = null;
      let start = 0n;
      for (let at = 0; at < samples.length; at += size) {
        for (const a of await m.judge(noDetector, samples.subarray(at, at + size), BigInt(at), open)) {
          if (a.type === 'open') {
            start = a.startSample;
            open = 0;
          } else if (a.type === 'feed') {
            expect(a.samples[0], 'fed in order').toBe(Number(start) + open!);
            open! += a.samples.length;
          } else {
            ends.push(start + BigInt(open!));
            open = null;
          }
        }
      }
      return ends;
    };
    expect(await cuts(160)).toEqual([1000n, 2000n]);
    expect(await cuts(800)).toEqual([1000n, 2000n]);
    expect(await cuts(2500)).toEqual([1000n, 2000n]);
  });
});

describe('VadSegmentation', () => {
  // One detector verdict per 512-sample window of 16 kHz audio.
  const detector = (speech: boolean) =>
    ({
      detect: async (s: Int16Array) => new Uint8Array(Math.floor(s.length / VAD_WINDOW_SAMPLES)).fill(speech ? 1 : 0),
    }) as unknown as RecognitionStream;
  const settings = vadSettings({ commitSilenceMs: 500, minimumSpeechMs: 100 }, 30);

  async function run(v: VadSegmentation, speech: boolean, windows: number): Promise<SegmentAction[]> {
    const out: SegmentAction[] = [];
    for (let i = 0; i < windows; i++) out.push(...(await v.judge(detector(speech), frame(VAD_WINDOW_SAMPLES))));
    return out;
  }

  it('places segments on the session timeline from its origin and ends them at a pause with trigger vad', async () => {
    const origin = 160_000n;
    const v = new VadSegmentation(settings.segmenter, VAD_WINDOW_SAMPLES, origin);
    expect(await run(v, false, 20)).toEqual([]);
    const speech = await run(v, true, 40);
    const open = speech.find((a) => a.type === 'open');
    expect(open).toBeDefined();
    // speech began after 20 windows; 300 ms of pre-roll before it, in whole 32 ms windows (10)
    expect((open as { startSample: bigint }).startSample).toBe(origin + BigInt((20 - 10) * VAD_WINDOW_SAMPLES));
    expect(speech.some((a) => a.type === 'feed')).toBe(true);
    expect(v.neededFrom()).toBeNull(); // in a segment: the open segment decides
    const silence = await run(v, false, 40);
    expect(silence.filter((a) => a.type === 'end')).toEqual([{ type: 'end', trigger: 'vad' }]);
    expect(v.neededFrom()).not.toBeNull();
  });

  it('flush hands over the audio not judged yet as feeds only; restartAt moves the origin', async () => {
    const v = new VadSegmentation(settings.segmenter, VAD_WINDOW_SAMPLES, 0n);
    await run(v, true, 30);
    // Less than a window: held, not judged yet.
    await v.judge(detector(true), frame(300));
    const tail = v.flush();
    expect(tail.every((a) => a.type === 'feed')).toBe(true);
    expect(tail.reduce((n, a) => n + (a.type === 'feed' ? a.samples.length : 0), 0)).toBe(300);
    const w = new VadSegmentation(settings.segmenter, VAD_WINDOW_SAMPLES, 0n);
    w.restartAt(1_000_000n);
    const open = (await run(w, true, 30)).find((a) => a.type === 'open') as { startSample: bigint };
    expect(open.startSample).toBeGreaterThanOrEqual(1_000_000n);
  });

  it('counts from the first frame it judges, not the cursor it was opened at (audio held while its decoder loaded)', async () => {
    // Opened when 80,000 samples were captured; the held audio it catches up on starts at 30,000.
    const v = new VadSegmentation(settings.segmenter, VAD_WINDOW_SAMPLES, 80_000n);
    let at = 30_000n;
    const out: SegmentAction[] = [];
    for (const speech of [...Array<boolean>(20).fill(false), ...Array<boolean>(40).fill(true)]) {
      out.push(...(await v.judge(detector(speech), frame(VAD_WINDOW_SAMPLES), at)));
      at += BigInt(VAD_WINDOW_SAMPLES);
    }
    const open = out.find((a) => a.type === 'open') as { startSample: bigint };
    expect(open.startSample).toBe(30_000n + BigInt((20 - 10) * VAD_WINDOW_SAMPLES));
  });
});
