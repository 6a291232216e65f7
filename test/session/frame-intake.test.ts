// Frame intake (src/session/frame-intake.ts) against the fake engine: an ack depends only on
// the audio being stored, never on recognition, in both commit modes; recognition follows
// in order; a recognizer lost after the ack keeps the stored audio for the next decoder.
import { afterEach, describe, expect, it } from 'vitest';
import { FakeEngine, tone } from '../helpers/fake-engine.js';
import { audioFrame, liveSession, RecordingSocket } from '../helpers/live.js';

const RATE = 16_000;
const FRAME = 640; // 40 ms
const open: Array<{ close(): Promise<void> }> = [];

afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
});

async function attached(engine: FakeEngine, options: Record<string, unknown> = {}) {
  const h = await liveSession(engine, options);
  open.push(h);
  const socket = new RecordingSocket();
  await h.session.attach(socket);
  return { ...h, socket };
}

function send(h: Awaited<ReturnType<typeof attached>>, audio: Int16Array, from = 0, epoch = 1): number {
  let at = from;
  for (; at < from + audio.length; at += FRAME)
    void h.session.onBinary(h.socket, audioFrame(epoch, at, audio.subarray(at - from, at - from + FRAME)));
  return at;
}

describe.each([
  ['manual', 'accept' as const],
  ['vad', 'detect' as const],
])('acks in %s mode', (mode, stuck) => {
  it(`arrive promptly while the recognizer's ${stuck} never answers`, async () => {
    const engine = new FakeEngine();
    engine.hold(stuck);
    const h = await attached(engine, { segmentCommitMode: mode });
    const t0 = Date.now();
    const end = send(h, tone(RATE, 1));
    await h.socket.until((ev) => ev.some((e) => e.type === 'ack' && e.capturedSamples === String(end)), 2000);
    expect(Date.now() - t0).toBeLessThan(1500);
    expect(h.socket.ofType('ack').map((e) => Number(e.capturedSamples))).toEqual(
      Array.from({ length: end / FRAME }, (_, i) => (i + 1) * FRAME),
    );
    // Recognition is behind, one call in flight and held.
    expect(engine.heldCount(stuck)).toBe(1);
    expect(h.socket.ofType('final')).toHaveLength(0);

    // Let it go: every stored sample is recognized, in order, and the final covers them.
    engine.release(stuck);
    void h.session.onText(h.socket, JSON.stringify({ type: 'close' }));
    await h.socket.until((ev) => ev.some((e) => e.type === 'closed'));
    const fed = engine.streams[0]!.accepted;
    expect(fed.reduce((n, f) => n + f.length, 0)).toBeGreaterThan(0);
    const finals = await h.store.listSegments(h.session.transcriptionId);
    expect(finals.at(-1)!.endSample).toBe(BigInt(end));
    if (mode === 'manual') expect(fed.reduce((n, f) => n + f.length, 0)).toBe(end);
  });
});

describe('recognition after the ack', () => {
  it('each frame is decoded once, straight into the array the recognizer is given (gap zeros first)', async () => {
    const engine = new FakeEngine();
    const h = await attached(engine);
    const audio = tone(RATE, 0.08);
    void h.session.onBinary(h.socket, audioFrame(1, 0, audio.subarray(0, FRAME)));
    // 160 samples missing before the second frame: filled with silence, in the same array
    void h.session.onBinary(h.socket, audioFrame(1, FRAME + 160, audio.subarray(FRAME)));
    await h.socket.until((ev) => ev.some((e) => e.type === 'ack' && e.capturedSamples === String(2 * FRAME + 160)));
    await h.socket.until(() => engine.streams[0]!.accepted.length === 2);
    const second = engine.streams[0]!.accepted[1]!;
    expect(second.length).toBe(FRAME + 160);
    expect([...second.subarray(0, 160)].every((s) => s === 0)).toBe(true);
    expect([...second.subarray(160)]).toEqual([...audio.subarray(FRAME)]);
    expect(h.socket.ofType('gap')).toMatchObject([{ samples: 160 }]);
  });

  it('a recognizer lost after the ack loses no stored audio: the next decoder is fed it first', async () => {
    const engine = new FakeEngine();
    const h = await attached(engine);
    const audio = tone(RATE, 1);
    engine.hold('accept');
    const end = send(h, audio);
    await h.socket.until((ev) => ev.some((e) => e.type === 'ack' && e.capturedSamples === String(end)));
    // The decoder dies with one frame in it and the rest acknowledged and waiting.
    engine.fail('accept');
    engine.release('accept');
    await h.socket.until((ev) => ev.some((e) => e.type === 'error' && e.code === 'ENGINE_FAILED'));
    await h.socket.until(() => h.socket.closed !== null);
    expect(h.socket.closed!.code).toBe(1011);
    expect(h.session.state).toBe('PAUSED');

    engine.failing.clear();
    const resumed = await h.session.resume(BigInt(end));
    expect(resumed.capturedSamples).toBe(BigInt(end));
    const again = new RecordingSocket();
    await h.session.attach(again);
    // Everything after the frame the dead decoder had was fed to the new one, before new audio.
    const fedAgain = engine.streams[1]!.accepted.reduce((n, f) => n + f.length, 0);
    expect(fedAgain).toBe(end - FRAME);
    expect(again.ofType('ready')[0]).toMatchObject({ openSegmentId: 'seg_1' }); // seg_0 died with its decoder;
    void h.session.onText(again, JSON.stringify({ type: 'close' }));
    await again.until((ev) => ev.some((e) => e.type === 'closed'));
    const segs = await h.store.listSegments(h.session.transcriptionId);
    expect(segs.map((s) => [s.startSample, s.endSample])).toEqual([[BigInt(FRAME), BigInt(end)]]);
  });
});
