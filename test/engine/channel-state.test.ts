// The recognizer's channel state (pocketsphinx live CMN) read from one decoder and set on
// another: the second then decodes the next utterance exactly as the first does. This is
// what lets a session restored after a crash continue a later segment with the same words.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine } from '../../src/engine/pool.js';
import type { Engine, RecognitionStream } from '../../src/engine/types.js';
import { loadClips, mulawSamples } from '../helpers/audio.js';

const clips = loadClips();

async function decode(s: RecognitionStream, samples: Int16Array): Promise<string> {
  for (let i = 0; i < samples.length; i += 160) await s.accept(samples.subarray(i, i + 160));
  return (await s.finish()).text;
}

describe('channel state (live CMN) get/set', () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = createEngine({ engine: 'pocketsphinx', maxDecoders: 2, assetsDir: path.resolve('models/telephony') });
    await engine.start();
  });
  afterAll(async () => {
    await engine?.close();
  });

  it('round-trips exactly and makes a fresh decoder continue as the first one', async () => {
    const [first, second] = await Promise.all([
      engine.open({ inputRate: 8000, profile: 'telephony' }),
      engine.open({ inputRate: 8000, profile: 'telephony' }),
    ]);
    const initial = await second.channelState();
    expect(initial).not.toBeNull();
    // 13 cepstra: mean, sum, then the frame count
    expect(initial!.length).toBe(27);

    await decode(first, mulawSamples(clips[0]!));
    await decode(first, mulawSamples(clips[1]!));
    const adapted = (await first.channelState())!;
    expect(adapted.length).toBe(27);
    expect(adapted.slice(0, 13)).not.toEqual(initial!.slice(0, 13)); // the mean moved

    expect(await second.setChannelState(adapted)).toBe(true);
    expect(await second.channelState()).toEqual(adapted);

    const next = mulawSamples(clips[2]!);
    const [a, b] = await Promise.all([decode(first, next), decode(second, next)]);
    expect(a.split(' ').length).toBeGreaterThan(3);
    expect(b).toBe(a);
    // and both decoders end in the same state again
    expect(await second.channelState()).toEqual(await first.channelState());

    await expect(second.setChannelState([1, 2, 3])).rejects.toThrow(/27/);
    await Promise.all([first.release(), second.release()]);
  }, 60_000);
});
