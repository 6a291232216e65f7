// Several decoders on one recognition worker thread (src/engine/worker.ts): decoders share a
// thread per core, are placed on the least-loaded thread, decode round-robin without starving
// one another, give the same words as a decoder alone, and a thread that dies fails exactly
// the streams on it.
import type { Worker } from 'node:worker_threads';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, decoderThreads, kWorker } from '../../src/engine/pool.js';
import type { Engine, RecognitionStream } from '../../src/engine/types.js';
import { loadClips, mulawSamples } from '../helpers/audio.js';

const ASSETS = path.resolve('models/telephony');
const clips = loadClips();
const FRAME = 160; // 20 ms at 8 kHz
const workerOf = (s: RecognitionStream): Worker => (s as unknown as { [kWorker]: Worker })[kWorker];

type Timed = Array<[string, number, number]>;

async function transcribe(s: RecognitionStream, samples: Int16Array): Promise<Timed> {
  for (let i = 0; i < samples.length; i += FRAME) await s.accept(samples.subarray(i, i + FRAME));
  const final = await s.finish();
  return final.words.map((w) => [w.word, w.startSample, w.endSample]);
}

let engine: Engine | null = null;
afterEach(async () => {
  await engine?.close();
  engine = null;
});

describe('decoder threads', () => {
  it('reads the thread count from the option, then SCRIBED_DECODER_THREADS, and refuses nonsense', () => {
    expect(decoderThreads(3)).toBe(3);
    process.env.SCRIBED_DECODER_THREADS = '5';
    try {
      expect(decoderThreads()).toBe(5);
      process.env.SCRIBED_DECODER_THREADS = 'two';
      expect(() => decoderThreads()).toThrow(/positive integer/);
    } finally {
      delete process.env.SCRIBED_DECODER_THREADS;
    }
    expect(decoderThreads()).toBeGreaterThanOrEqual(1);
    expect(() => decoderThreads(0)).toThrow(/positive integer/);
  });

  it('three decoders on one thread, fed at the same time in batches, each give the words and times of a decoder alone', async () => {
    const audio = clips.slice(0, 3).map((c) => mulawSamples(c));
    // Reference: each clip alone on a fresh engine (one decoder, one thread).
    engine = createEngine({ engine: 'pocketsphinx', maxDecoders: 1, threads: 1, assetsDir: ASSETS });
    const alone: Timed[] = [];
    for (const a of audio) {
      const s = await engine.open({ inputRate: 8000, profile: 'telephony' });
      alone.push(await transcribe(s, a));
      await s.release();
    }
    await engine.close();

    engine = createEngine({ engine: 'pocketsphinx', maxDecoders: 3, threads: 1, assetsDir: ASSETS });
    const streams = await Promise.all(audio.map(() => engine!.open({ inputRate: 8000, profile: 'telephony', decodeBatchMs: 200 })));
    expect(new Set(streams.map(workerOf)).size).toBe(1);
    const together = await Promise.all(streams.map((s, i) => transcribe(s, audio[i]!)));
    expect(together).toEqual(alone);
    for (const a of alone) expect(a.length).toBeGreaterThan(3);
    await Promise.all(streams.map((s) => s.release()));
  }, 180_000);

  it('a long backlog on one decoder does not starve another on the same thread, even with its final queued behind it', async () => {
    engine = createEngine({ engine: 'pocketsphinx', maxDecoders: 2, threads: 1, assetsDir: ASSETS });
    const [busy, quick] = await Promise.all([
      engine.open({ inputRate: 8000, profile: 'telephony' }),
      engine.open({ inputRate: 8000, profile: 'telephony' }),
    ]);
    expect(workerOf(busy)).toBe(workerOf(quick));
    // About 25 s of audio in one call: 100 turns of TURN_SAMPLES for the busy decoder.
    const long = new Int16Array(clips.reduce((n, c) => n + mulawSamples(c).length, 0));
    clips.reduce((at, c) => (long.set(mulawSamples(c), at), at + mulawSamples(c).length), 0);
    let busyDoneAt = 0;
    const busyDone = busy.accept(long).then(() => (busyDoneAt = performance.now()));
    // Its final is queued too (deferred audio catching up): finals first must not let it
    // take the thread for all 25 s.
    const busyFinal = busy.finish();
    // Let the long call start first, then ask the other decoder for 1 s and a final.
    await new Promise((r) => setTimeout(r, 100));
    const short = mulawSamples(clips[1]!).subarray(0, 8000);
    const shortFinal = await quick.accept(short).then(() => quick.finish());
    const quickDoneAt = performance.now();
    expect(busyDoneAt).toBe(0); // the short request finished while the long one was still decoding
    await busyDone;
    // Taking turns, the short request costs the long one only its own few turns.
    expect(busyDoneAt).toBeGreaterThan(quickDoneAt);
    expect(shortFinal.text).not.toBe('');
    expect((await busyFinal).text).not.toBe('');
    await Promise.all([busy.release(), quick.release()]);
  }, 120_000);

  it('a final goes ahead of the batches other decoders have queued on the thread', async () => {
    engine = createEngine({ engine: 'pocketsphinx', maxDecoders: 5, threads: 1, assetsDir: ASSETS });
    const streams: RecognitionStream[] = [];
    for (let i = 0; i < 5; i++)
      streams.push(await engine.open({ inputRate: 8000, profile: 'telephony', ...(i === 4 ? { decodeBatchMs: 200 } : {}) }));
    const [quick, ...busy] = [streams[4]!, ...streams.slice(0, 4)];
    // Four decoders with 15 batches of 200 ms each queued (one turn per batch), as live
    // streams behind on a full thread.
    let decodedTurns = 0;
    const BATCHES = 15;
    const backlog = busy.flatMap((s, i) => {
      const audio = mulawSamples(clips[i]!);
      return Array.from({ length: BATCHES }, (_, b) =>
        s.accept(audio.subarray((b * 1600) % (audio.length - 1600)).subarray(0, 1600)).then(() => (decodedTurns += 1)),
      );
    });
    while (decodedTurns < 2) await new Promise((r) => setTimeout(r, 5));
    // A commit on the fifth: its last (short) batch and its finish go out together.
    await quick.accept(mulawSamples(clips[4]!).subarray(0, 1200));
    const before = decodedTurns;
    await quick.finish();
    const waited = decodedTurns - before;
    expect(decodedTurns).toBeLessThan(4 * BATCHES); // the others were still behind
    // Round-robin, the final waited for about two rounds of the other four (8 turns); first,
    // for the turn in progress.
    expect(waited).toBeLessThanOrEqual(2);
    await Promise.all(backlog);
    await Promise.all(streams.map((s) => s.release()));
  }, 120_000);

  it('decoders go to the least-loaded thread: four streams on two threads, two each', async () => {
    engine = createEngine({ engine: 'pocketsphinx', maxDecoders: 4, threads: 2, assetsDir: ASSETS });
    const streams: RecognitionStream[] = [];
    for (let i = 0; i < 4; i++) streams.push(await engine.open({ inputRate: 8000, profile: 'telephony' }));
    const perThread = new Map<Worker, number>();
    for (const s of streams) perThread.set(workerOf(s), (perThread.get(workerOf(s)) ?? 0) + 1);
    expect([...perThread.values()]).toEqual([2, 2]);
    // A released decoder stays warm on its thread and is reused there.
    const t0 = workerOf(streams[0]!);
    await streams[0]!.release();
    const again = await engine.open({ inputRate: 8000, profile: 'telephony' });
    expect(workerOf(again)).toBe(t0);
    await Promise.all([again, ...streams.slice(1)].map((s) => s.release()));
  }, 120_000);

  it('a warm decoder on a crowded thread is passed over for a decoder on an emptier one', async () => {
    engine = createEngine({ engine: 'pocketsphinx', maxDecoders: 4, threads: 2, assetsDir: ASSETS });
    const streams: RecognitionStream[] = [];
    for (let i = 0; i < 4; i++) streams.push(await engine.open({ inputRate: 8000, profile: 'telephony' }));
    const first = workerOf(streams[0]!);
    const [same, other] = [streams.filter((s) => workerOf(s) === first), streams.filter((s) => workerOf(s) !== first)];
    expect([same.length, other.length]).toEqual([2, 2]);
    // The other thread dies: its two streams are lost; the first thread keeps two streams.
    await workerOf(other[0]!).terminate();
    await Promise.all(other.map((s) => s.release()));
    // One stream of the first thread ends: its decoder idles there, beside one stream.
    await same[1]!.release();
    // Reusing it would put two streams on the first thread and none elsewhere: a new thread
    // takes the next stream. A second one then reuses the warm decoder (one stream each side).
    const next = await engine.open({ inputRate: 8000, profile: 'telephony' });
    expect(workerOf(next)).not.toBe(first);
    const again = await engine.open({ inputRate: 8000, profile: 'telephony' });
    expect(workerOf(again)).toBe(first);
    await Promise.all([same[0]!, next, again].map((s) => s.release()));
  }, 120_000);

  it('a thread that dies fails every stream on it and none on the other thread; new streams are served', async () => {
    engine = createEngine({ engine: 'pocketsphinx', maxDecoders: 4, threads: 2, assetsDir: ASSETS });
    const streams: RecognitionStream[] = [];
    for (let i = 0; i < 4; i++) streams.push(await engine.open({ inputRate: 8000, profile: 'telephony' }));
    const victim = workerOf(streams[0]!);
    const lost = streams.map((s) => {
      let err: Error | null = null;
      s.onLost((e) => (err = e));
      return () => err;
    });
    await victim.terminate();
    await new Promise((r) => setTimeout(r, 50));
    const audio = mulawSamples(clips[0]!).subarray(0, 1600);
    for (let i = 0; i < 4; i++) {
      if (workerOf(streams[i]!) === victim) {
        expect(lost[i]!()).toMatchObject({ code: 'ENGINE_FAILED' });
        await expect(streams[i]!.accept(audio)).rejects.toMatchObject({ code: 'ENGINE_FAILED' });
      } else {
        expect(lost[i]!()).toBeNull();
        expect((await streams[i]!.accept(audio)).decodedSamples).toBe(1600);
      }
    }
    expect(engine.capacity!().busy).toBe(2);
    await Promise.all(streams.map((s) => s.release()));
    const fresh = await engine.open({ inputRate: 8000, profile: 'telephony' });
    expect(await transcribe(fresh, mulawSamples(clips[0]!))).not.toEqual([]);
    await fresh.release();
  }, 120_000);
});
