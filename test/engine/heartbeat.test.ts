// The keepalive between a session's stream and its recognition worker (heartbeatIntervalMs).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, kStall } from '../../src/engine/pool.js';
import type { Engine, RecognitionStream } from '../../src/engine/types.js';
import { loadClips, pcmSamples } from '../helpers/audio.js';

type Stallable = RecognitionStream & { [kStall](ms: number): Promise<void> };

let engine: Engine;
beforeAll(async () => {
  engine = createEngine({ engine: 'pocketsphinx', maxDecoders: 2 });
  await engine.start();
}, 60_000);
afterAll(async () => {
  await engine?.close();
});

function lostWithin(stream: RecognitionStream, ms: number): Promise<{ err: Error; afterMs: number } | null> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), ms);
    stream.onLost((err) => {
      clearTimeout(timer);
      resolve({ err, afterMs: performance.now() - t0 });
    });
  });
}

describe('recognition worker heartbeat', () => {
  it('a worker that stops answering is declared lost within the interval; its calls fail with ENGINE_FAILED', async () => {
    const stream = (await engine.open({ inputRate: 16000, profile: 'wideband', heartbeatIntervalMs: 500 })) as Stallable;
    const lost = lostWithin(stream, 3000);
    void stream[kStall](10_000).catch(() => undefined);
    const r = await lost;
    expect(r).not.toBeNull();
    // the interval, plus at most one check period (125 ms here) and slack for a loaded machine
    expect(r!.afterMs).toBeLessThan(500 + 1000);
    expect(r!.err).toMatchObject({ code: 'ENGINE_FAILED' });
    await expect(stream.accept(new Int16Array(320))).rejects.toMatchObject({ code: 'ENGINE_FAILED' });
    await stream.release();
  }, 30_000);

  it('without a heartbeat the same stall goes unnoticed', async () => {
    const stream = (await engine.open({ inputRate: 16000, profile: 'wideband' })) as Stallable;
    const lost = lostWithin(stream, 1500);
    const stall = stream[kStall](1200);
    expect(await lost).toBeNull();
    await stall;
    await stream.release();
  }, 30_000);

  it('a busy worker is not mistaken for a stuck one: it answers pings while decoding a long frame', async () => {
    const clips = loadClips();
    // Twice over (about 36 s): on a fast, quiet day these machines decode 18 s in 1.5 s, under
    // the interval, and the frame must outlast it for the test to mean anything.
    const three = ['librivox-0870', 'librivox-0920', 'librivox-0890'].map((id) => pcmSamples(clips.find((c) => c.id === id)!));
    const parts = [...three, ...three];
    const pcm = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
    parts.reduce((at, p) => (pcm.set(p, at), at + p.length), 0);
    // 2 s: under a loaded machine (CI shares two cores) a 50 ms piece can take a while; the
    // frame below still takes longer than the interval to decode.
    const stream = await engine.open({ inputRate: 16000, profile: 'wideband', heartbeatIntervalMs: 2000 });
    let lost: Error | null = null;
    stream.onLost((err) => (lost = err));
    // 36 s of audio in one call: longer than the interval to decode, none of it a hang
    const t0 = performance.now();
    const r = await stream.accept(pcm);
    const decodeMs = performance.now() - t0;
    expect(r.partial.length).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 2200));
    expect(lost).toBeNull();
    // only meaningful when the decode outlasted the interval
    expect(decodeMs).toBeGreaterThan(2000);
    await stream.finish();
    await stream.release();
  }, 90_000);
});
