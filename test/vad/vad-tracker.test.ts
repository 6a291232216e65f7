import { describe, expect, it } from 'vitest';
import { VadTracker, type VadAction } from '../../src/vad/vad-tracker.js';

// Windows of 10 samples, 10 ms each: the sample index is the value of the sample, so fed
// audio can be checked sample by sample.
const config = {
  windowMs: 10,
  minimumSpeechMs: 30,
  minimumSilenceMs: 20,
  commitSilenceMs: 50,
  preRollMs: 20,
  softMaxSegmentMs: 10_000,
  maxSegmentMs: 20_000,
};

function drive(pattern: string, frameSamples: number, tracker = new VadTracker(config, 10)) {
  const total = pattern.length * 10;
  const audio = Int16Array.from({ length: total }, (_, i) => i);
  const actions: VadAction[] = [];
  let judged = 0;
  for (let at = 0; at < total; at += frameSamples) {
    const frame = audio.subarray(at, Math.min(total, at + frameSamples));
    // the detector judges each window once its last sample has arrived
    const complete = Math.floor((at + frame.length) / 10);
    const flags = Uint8Array.from([...pattern.slice(judged, complete)].map((c) => (c === '#' ? 1 : 0)));
    judged = complete;
    actions.push(...tracker.push(frame, flags));
  }
  return { actions, tracker };
}

function fedRuns(actions: VadAction[]): Array<[number, number]> {
  const runs: Array<[number, number]> = [];
  for (const a of actions) {
    if (a.type !== 'feed') continue;
    const first = a.samples[0]!;
    const last = a.samples[a.samples.length - 1]!;
    // every feed is contiguous in itself
    expect(Array.from(a.samples)).toEqual(Array.from({ length: a.samples.length }, (_, i) => first + i));
    const prev = runs[runs.length - 1];
    if (prev && prev[1] === first) prev[1] = last + 1;
    else runs.push([first, last + 1]);
  }
  return runs;
}

describe('VadTracker', () => {
  for (const frame of [7, 10, 33, 160]) {
    it(`feeds exactly each segment's audio, once, with frames of ${frame} samples`, () => {
      const pattern = '.....' + '#'.repeat(10) + '.'.repeat(12) + '#'.repeat(6) + '.'.repeat(10);
      const { actions } = drive(pattern, frame);
      const opens = actions.filter((a) => a.type === 'open');
      const commits = actions.filter((a) => a.type === 'commit');
      expect(opens).toEqual([
        { type: 'open', startSample: 30, speechStartSample: 50 },
        { type: 'open', startSample: 250, speechStartSample: 270 },
      ]);
      expect(commits).toEqual([
        { type: 'commit', endSample: 200, speechEndSample: 150, reason: 'silence' },
        { type: 'commit', endSample: 380, speechEndSample: 330, reason: 'silence' },
      ]);
      expect(fedRuns(actions)).toEqual([
        [30, 200],
        [250, 380],
      ]);
      // each segment's audio is fed between its open and its commit
      const order = actions.map((a) => a.type).join(',');
      expect(order).toMatch(/^open,(feed,)+commit,open,(feed,)+commit$/);
    });
  }

  it('forceCommit feeds the not yet judged tail and ends the segment at the last sample received', () => {
    const { actions, tracker } = drive('#'.repeat(8), 25);
    expect(actions[0]).toEqual({ type: 'open', startSample: 0, speechStartSample: 0 });
    const tail = tracker.forceCommit();
    expect(tail[tail.length - 1]).toMatchObject({ type: 'commit', endSample: 80, reason: 'forced' });
    expect(fedRuns([...actions, ...tail])).toEqual([[0, 80]]);
    expect(tracker.inSegment).toBe(false);
    expect(tracker.forceCommit()).toEqual([]);
  });

  it('silence alone feeds nothing and holds at most the pre-roll', () => {
    const { actions, tracker } = drive('.'.repeat(500), 160);
    expect(actions).toEqual([]);
    expect((tracker as unknown as { held: Int16Array }).held.length).toBeLessThanOrEqual(160 + 30);
  });
});
