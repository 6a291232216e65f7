// Short first utterances: a stream's first utterance of at most 3 s is decoded again
// from a CMN state whose mean is the utterance's own. The pure part (which utterances, which
// state) without a decoder; then the real decoder: the final is the second pass's, the live CMN
// goes on from the streamed pass, and longer or later utterances are left alone.
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createPocketsphinx, ShortUtteranceCmn, type PocketsphinxBackend } from '../../src/engine/backends/pocketsphinx.js';
import { devSetDir, loadClips, pcmSamples } from '../helpers/audio.js';

const RATE = 16_000;
const state = (mean: number, sum: number, frames: number) => [...Array(13).fill(mean), ...Array(13).fill(sum), frames];

describe('ShortUtteranceCmn.ownMeanState', () => {
  it('is the mean of the frames added between the two states, weighted as a fresh mean', () => {
    // 500 prior frames of mean 2, then 200 frames of mean 5.
    const before = state(2, 2 * 500, 500);
    const after = state((2 * 500 + 5 * 200) / 700, 2 * 500 + 5 * 200, 700);
    const own = ShortUtteranceCmn.ownMeanState(before, after)!;
    expect(own.slice(0, 13)).toEqual(Array(13).fill(5));
    expect(own.slice(13, 26)).toEqual(Array(13).fill(5 * ShortUtteranceCmn.PRIOR_FRAMES));
    expect(own[26]).toBe(ShortUtteranceCmn.PRIOR_FRAMES);
  });

  it('refuses when the count fell (the live CMN rescaled) or the states do not match', () => {
    expect(ShortUtteranceCmn.ownMeanState(state(2, 1400, 700), state(3, 1500, 500))).toBeNull();
    expect(ShortUtteranceCmn.ownMeanState(state(2, 1000, 500), state(2, 1000, 500))).toBeNull();
    expect(ShortUtteranceCmn.ownMeanState(state(2, 1000, 500), [1, 2, 3])).toBeNull();
  });
});

describe('ShortUtteranceCmn: which utterances are decoded again', () => {
  const cmn = (() => {
    let frames = 500;
    return { read: () => state(1, frames, frames), add: (n: number) => (frames += n) };
  })();
  const utterance = (u: ShortUtteranceCmn, seconds: number) => {
    u.start(cmn.read);
    const frame = new Int16Array(RATE / 50);
    for (let i = 0; i < seconds * 50; i++) u.hear(frame);
    cmn.add(seconds * 100);
    return u.take(cmn.read);
  };

  it('utterances of up to 3 s that begin before the stream has heard 5 s', () => {
    const u = new ShortUtteranceCmn();
    u.reset(true);
    const first = utterance(u, 2);
    expect(first?.samples.length).toBe(2 * RATE);
    expect(first?.state[26]).toBe(ShortUtteranceCmn.PRIOR_FRAMES);
    expect(utterance(u, 2)).not.toBeNull(); // 2 s heard before it
    expect(utterance(u, 1)).not.toBeNull(); // 4 s heard before it
    expect(utterance(u, 1)).toBeNull(); // 5 s heard: converged enough
  });

  it('not an utterance over 3 s, not after a restored channel state, not when disabled', () => {
    const u = new ShortUtteranceCmn();
    u.reset(true);
    expect(utterance(u, 4)).toBeNull();
    u.reset(false);
    expect(utterance(u, 1)).toBeNull();
    const off = new ShortUtteranceCmn(false);
    off.reset(true);
    expect(utterance(off, 1)).toBeNull();
  });
});

describe('short first utterances on the real decoder (wideband)', () => {
  const clips = loadClips(devSetDir());
  const short = clips.find((c) => c.durationSec <= ShortUtteranceCmn.MAX_SECONDS)!;
  const long = clips.find((c) => c.durationSec > ShortUtteranceCmn.FIRST_SECONDS)!;
  const backends: PocketsphinxBackend[] = [];
  const backend = (secondPass: boolean) => {
    process.env.SCRIBED_POCKETSPHINX_SHORT_CMN = secondPass ? '1' : '0';
    try {
      const b = createPocketsphinx({ engine: 'pocketsphinx', profile: 'wideband', assetsDir: path.resolve('models/telephony') });
      backends.push(b);
      return b;
    } finally {
      delete process.env.SCRIBED_POCKETSPHINX_SHORT_CMN;
    }
  };
  const stream = (b: PocketsphinxBackend, samples: Int16Array) => {
    for (let i = 0; i < samples.length; i += 320) b.process(samples.subarray(i, i + 320), false);
    return b.endUtterance();
  };
  afterEach(() => {
    for (const b of backends.splice(0)) b.destroy();
  });

  it("the final is the pass from the utterance's own mean; the live CMN goes on from the streamed pass", () => {
    expect(short, 'a dev clip of at most 3 s').toBeDefined();
    const samples = pcmSamples(short);
    const on = backend(true);
    const off = backend(false);
    on.resetStream();
    off.resetStream();
    const before = off.getChannelState!()!;
    const streamed = stream(off, samples);
    const after = off.getChannelState!()!;
    const final = stream(on, samples);
    // the same channel state after the utterance as with one streamed pass
    expect(on.getChannelState!()).toEqual(after);

    // The second pass done by hand on the other decoder: from the own-mean state.
    expect(off.setChannelState!(ShortUtteranceCmn.ownMeanState(before, after)!)).toBe(true);
    const byHand = stream(off, samples);
    expect(final.text).toBe(byHand.text);
    expect(final.words.map((w) => [w.startSample, w.endSample])).toEqual(byHand.words.map((w) => [w.startSample, w.endSample]));
    console.log(
      `${short.id} (${short.durationSec} s)\n  streamed: ${streamed.text}\n  own mean: ${final.text}\n  reference: ${short.reference}`,
    );
  });

  it('leaves a long first utterance and everything after 5 s as the streamed pass has it', () => {
    const on = backend(true);
    const off = backend(false);
    for (const b of [on, off]) b.resetStream();
    expect(stream(on, pcmSamples(long)).text).toBe(stream(off, pcmSamples(long)).text);
    // 5 s heard: a short one now is not decoded again either
    expect(stream(on, pcmSamples(short)).text).toBe(stream(off, pcmSamples(short)).text);
    expect(on.getChannelState!()).toEqual(off.getChannelState!());
  });
});
