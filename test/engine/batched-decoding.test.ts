// Batched decoding (StreamRequest.decodeBatchMs): accept() does not wait for the decoder,
// partials are pushed as batches decode, finish() covers everything accepted, a failure
// reaches the next call, the engine reports its backlog, and the caller's samples are left
// as they were (shared read-only).
import type { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, kStall, kWorker } from '../../src/engine/pool.js';
import type { Engine, RecognitionStream } from '../../src/engine/types.js';
import { loadClips, mulawSamples } from '../helpers/audio.js';

type Hooked = RecognitionStream & { [kStall](ms: number): Promise<void>; [kWorker]: Worker };

const clip = loadClips()[0]!;
const audio = mulawSamples(clip); // 8 kHz
const FRAME = 160; // 20 ms

let engine: Engine;
beforeAll(async () => {
  engine = createEngine({ engine: 'pocketsphinx', maxDecoders: 3 });
  await engine.start();
}, 60_000);
afterAll(async () => {
  await engine?.close();
});

async function feed(stream: RecognitionStream, samples: Int16Array): Promise<void> {
  for (let i = 0; i < samples.length; i += FRAME) await stream.accept(samples.subarray(i, i + FRAME));
}

describe('batched decoding', () => {
  it('gives the same words as decoding every frame, with partials pushed between accepts', async () => {
    const direct = await engine.open({ inputRate: 8000, profile: 'telephony' });
    await feed(direct, audio);
    const expected = await direct.finish();
    await direct.release();

    const batched = await engine.open({ inputRate: 8000, profile: 'telephony', decodeBatchMs: 200 });
    const partials: Array<{ partial: string; partialSamples: number }> = [];
    batched.onPartial((p) => partials.push(p));
    await feed(batched, audio); // returns before the decoder has the first batch done
    expect(partials).toHaveLength(0);
    for (let i = 0; i < 500 && partials.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    const final = await batched.finish();
    await batched.release();
    expect(final.text).toBe(expected.text);
    expect(final.words.map((w) => [w.word, w.startSample, w.endSample])).toEqual(
      expected.words.map((w) => [w.word, w.startSample, w.endSample]),
    );
    expect(partials.length).toBeGreaterThan(0);
    // a partial covers whole batches of the utterance, never more than was accepted
    for (const p of partials) {
      expect(p.partialSamples % 1600).toBe(0);
      expect(p.partialSamples).toBeLessThanOrEqual(audio.length);
    }
    expect(final.channelState).toHaveLength(27);
  }, 60_000);

  it("takes the caller's samples as shared read-only: never detached nor changed, batched or not, a batch of one accept() included", async () => {
    // RecognitionStream.accept/detect: the caller keeps reading its buffer (a spool, a
    // deferral backlog), so the stream may keep the array but must not move it to the worker.
    expect(audio.length).toBeGreaterThanOrEqual(16_000);
    const own = audio.slice(0, 16_000);
    const before = own.slice();
    for (const decodeBatchMs of [0, 200]) {
      const stream = await engine.open({
        inputRate: 8000,
        profile: 'telephony',
        vad: { threshold: 0.5 },
        ...(decodeBatchMs > 0 ? { decodeBatchMs } : {}),
      });
      await feed(stream, own.subarray(0, 8000)); // 20 ms views of one buffer: gathered into batches
      await stream.detect(own.subarray(0, 8000));
      await stream.accept(own.subarray(8000)); // 1 s at once: with batching, a batch of this array alone
      const final = await stream.finish();
      await stream.release();
      expect(final.text).not.toBe('');
      expect(own.buffer.byteLength).toBe(before.byteLength);
      expect(own).toEqual(before);
    }
  }, 60_000);

  it('accept() resolves while the decoder is busy; the backlog is reported and drains; finish() waits for it', async () => {
    const stream = (await engine.open({ inputRate: 8000, profile: 'telephony', decodeBatchMs: 200 })) as Hooked;
    const stalled = stream[kStall](1500);
    const t0 = performance.now();
    await feed(stream, audio.subarray(0, 8000)); // 1 s
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(engine.decodeBacklogSeconds!()).toBeGreaterThanOrEqual(0.8);
    const final = await stream.finish();
    await stalled;
    expect(performance.now() - t0).toBeGreaterThanOrEqual(1400);
    expect(final.words.every((w) => w.endSample <= 8000)).toBe(true);
    expect(engine.decodeBacklogSeconds!()).toBe(0);
    await stream.release();
  }, 60_000);

  it('a release that drops what is pending does not decode it, and the decoder serves the next stream whole', async () => {
    const direct = await engine.open({ inputRate: 8000, profile: 'telephony' });
    await feed(direct, audio);
    const expected = await direct.finish();
    await direct.release();

    // 22-45 s of audio (whole copies of the clip) posted behind a stall: seconds of decoding,
    // not wanted, and under the backlog's bound (accept() does not wait).
    const stream = (await engine.open({ inputRate: 8000, profile: 'telephony', decodeBatchMs: 200 })) as Hooked;
    const stalled = stream[kStall](300);
    const copies = Math.max(1, Math.floor((45 * 8000) / audio.length));
    const long = new Int16Array(copies * audio.length);
    for (let i = 0; i < copies; i++) long.set(audio, i * audio.length);
    let releaseMs: number;
    try {
      await feed(stream, long);
      expect(engine.decodeBacklogSeconds!()).toBeGreaterThan(20);
    } finally {
      const t0 = performance.now();
      await stream.release({ dropPending: true });
      releaseMs = performance.now() - t0;
      await stalled;
    }
    expect(engine.decodeBacklogSeconds!()).toBe(0);
    // Decoding it would take a tenth of its length at the least (this engine's real-time
    // factor is 0.1-0.3 on a quiet machine, more on a loaded one).
    expect(releaseMs).toBeLessThan((long.length / 8000) * 100);

    // Every decoder of the pool serves a stream now (the released one among them): each
    // gives the words of a decoder that never dropped anything.
    const next = await Promise.all([0, 1, 2].map(() => engine.open({ inputRate: 8000, profile: 'telephony', decodeBatchMs: 200 })));
    try {
      for (const s of next) await feed(s, audio);
      for (const s of next) expect((await s.finish()).text).toBe(expected.text);
    } finally {
      for (const s of next) await s.release();
    }
  }, 60_000);

  it('a decoder lost behind accepted batches fails the next accept() and finish()', async () => {
    const stream = (await engine.open({ inputRate: 8000, profile: 'telephony', decodeBatchMs: 200 })) as Hooked;
    await feed(stream, audio.subarray(0, 4000));
    await stream[kWorker].terminate();
    await new Promise((r) => setTimeout(r, 50));
    await expect(feed(stream, audio.subarray(4000, 8000))).rejects.toMatchObject({ code: 'ENGINE_FAILED' });
    await expect(stream.finish()).rejects.toMatchObject({ code: 'ENGINE_FAILED' });
    await stream.release();
  }, 60_000);
});
