// Words with their times from a telephony pocketsphinx decoder, for tests that compare two ways
// of running the same decoder (shared models against private ones) word for word and time for
// time.
import path from 'node:path';
import type { PocketsphinxBackend } from '../../src/engine/backends/pocketsphinx.js';
import type { BackendConfig, RecognitionStream } from '../../src/engine/types.js';
import { loadClips, mulawSamples } from './audio.js';

export const TELEPHONY_ASSETS = path.resolve('models/telephony');
export const TELEPHONY_CONFIG: BackendConfig = { engine: 'pocketsphinx', profile: 'telephony', assetsDir: TELEPHONY_ASSETS };

/** The first two dev clips. */
const clips = loadClips().slice(0, 2);

export type Timed = Array<[string, number, number]>;

/** Each clip streamed in 20 ms frames of 8 kHz mu-law, one final per clip. */
export async function transcribeClips(s: RecognitionStream): Promise<Timed[]> {
  const out: Timed[] = [];
  for (const clip of clips) {
    const samples = mulawSamples(clip);
    for (let i = 0; i < samples.length; i += 160) await s.accept(samples.subarray(i, i + 160));
    out.push((await s.finish()).words.map((w) => [w.word, w.startSample, w.endSample]));
  }
  return out;
}

/** A decoder on this thread, fed the first clip at 16 kHz (each 8 kHz sample twice), from a
 * fresh channel state (a decoder adapts its mean to what it heard). */
export function decodeFirstClip(d: PocketsphinxBackend): Timed {
  d.resetStream();
  const mulaw = mulawSamples(clips[0]!);
  const pcm16 = new Int16Array(mulaw.length * 2);
  for (let i = 0; i < mulaw.length; i++) pcm16[2 * i] = pcm16[2 * i + 1] = mulaw[i]!;
  for (let at = 0; at < pcm16.length; at += 3200) d.process(pcm16.subarray(at, at + 3200), false);
  return d.endUtterance().words.map((w) => [w.word, w.startSample, w.endSample]);
}
