// Finals (src/session/finals.ts) with the fake engine: finals go out in segment order even when a later one is decoded first, and a partial of the
// next segment waits for the finals before it.
import { afterEach, describe, expect, it } from 'vitest';
import { FakeEngine, tone } from '../helpers/fake-engine.js';
import { audioFrame, liveSession, RecordingSocket } from '../helpers/live.js';

const FRAME = 640;
const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
});

describe('finals', () => {
  it('go out in segment order once decoded and stored, with partials of the next segment behind them', async () => {
    const engine = new FakeEngine({ samplesPerWord: 1600 });
    const h = await liveSession(engine);
    open.push(h);
    const socket = new RecordingSocket();
    await h.session.attach(socket);
    const audio = tone(16000, 0.4);
    let at = 0;
    const frames = (n: number) => {
      for (let i = 0; i < n; i++, at += FRAME) void h.session.onBinary(socket, audioFrame(1, at, audio.subarray(0, FRAME)));
    };
    engine.hold('finish');
    frames(5);
    void h.session.onText(socket, JSON.stringify({ type: 'commit' }));
    frames(5);
    void h.session.onText(socket, JSON.stringify({ type: 'commit' }));
    frames(3);
    await socket.until(() => engine.heldCount('finish') === 2);
    // Both finals asked for, neither decoded: nothing of seg_1 or seg_2 may go out yet.
    expect(socket.ofType('final')).toHaveLength(0);
    expect(socket.ofType('partial').some((p) => p.segmentId !== 'seg_0')).toBe(false);
    expect((await h.store.listSegments(h.session.transcriptionId)).length).toBe(0);
    engine.release('finish');
    await socket.until((ev) => ev.filter((e) => e.type === 'committed').length === 2);
    const finals = socket.ofType('final');
    expect(finals.map((f) => f.segmentId)).toEqual(['seg_0', 'seg_1']);
    expect(socket.ofType('committed').map((c) => c.segmentId)).toEqual(['seg_0', 'seg_1']);
    const segs = await h.store.listSegments(h.session.transcriptionId);
    expect(segs.map((s) => [Number(s.startSample), Number(s.endSample)])).toEqual([
      [0, 5 * FRAME],
      [5 * FRAME, 10 * FRAME],
    ]);
    expect(segs.map((s) => s.text)).toEqual(finals.map((f) => f.text));
    // seg_2's partials only after seg_1's final
    const order = socket.events.filter((e) => e.type === 'partial' || e.type === 'final').map((e) => `${e.type}:${e.segmentId}`);
    const firstSeg2 = order.findIndex((x) => x.endsWith('seg_2'));
    if (firstSeg2 >= 0) expect(firstSeg2).toBeGreaterThan(order.indexOf('final:seg_1'));
  });

  it('a final whose decode fails drops its segment and reports ENGINE_FAILED; nothing is stored for it', async () => {
    const engine = new FakeEngine();
    const h = await liveSession(engine);
    open.push(h);
    const socket = new RecordingSocket();
    await h.session.attach(socket);
    for (let at = 0; at < 5 * FRAME; at += FRAME) void h.session.onBinary(socket, audioFrame(1, at, tone(16000, 0.04)));
    engine.fail('finish');
    void h.session.onText(socket, JSON.stringify({ type: 'commit' }));
    await socket.until((ev) => ev.some((e) => e.type === 'error' && e.code === 'ENGINE_FAILED'));
    expect(await h.store.listSegments(h.session.transcriptionId)).toEqual([]);
    expect(socket.ofType('final')).toEqual([]);
  });
});
