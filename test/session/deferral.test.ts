// Deferred recognition (src/session/deferral.ts) with the fake engine and one decoder: a second
// session is served while the first holds the decoder, its audio acknowledged at once and
// counted against the node's bound; it catches up when the decoder frees, commits and close
// in order with its audio.
import { afterEach, describe, expect, it } from 'vitest';
import { BacklogBudget } from '../../src/core/recognition-backlog.js';
import { RecognizerQueue } from '../../src/session/recognizer-queue.js';
import { FakeEngine, tone } from '../helpers/fake-engine.js';
import { audioFrame, liveSession, RecordingSocket } from '../helpers/live.js';

const FRAME = 640;
const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
});

describe('deferred recognition', () => {
  it('serves a socket with no decoder free, acks at once, and catches up in order once one frees', async () => {
    const engine = new FakeEngine({ decoders: 1 });
    const queue = new RecognizerQueue(new BacklogBudget(60));
    const h = await liveSession(engine, {}, { deferral: queue });
    open.push(h);
    const first = new RecordingSocket();
    await h.session.attach(first);

    const second = await h.newSession({});
    const socket = new RecordingSocket();
    await second.attach(socket);
    expect(second.isDeferred).toBe(true);
    expect(socket.ofType('notice').map((n) => n.code)).toContain('RECOGNITION_DEFERRED');
    for (let at = 0; at < 5 * FRAME; at += FRAME) void second.onBinary(socket, audioFrame(1, at, tone(16000, 0.04)));
    void second.onText(socket, JSON.stringify({ type: 'commit' }));
    for (let at = 5 * FRAME; at < 8 * FRAME; at += FRAME) void second.onBinary(socket, audioFrame(1, at, tone(16000, 0.04)));
    void second.onText(socket, JSON.stringify({ type: 'close' }));
    await socket.until((ev) => ev.some((e) => e.type === 'ack' && e.capturedSamples === String(8 * FRAME)));
    expect(queue.budget.seconds).toBeCloseTo((8 * FRAME) / 16000);
    expect(socket.ofType('final')).toEqual([]);

    // The first session closes: its decoder goes to the waiting one.
    void h.session.onText(first, JSON.stringify({ type: 'close' }));
    await socket.until((ev) => ev.some((e) => e.type === 'closed'));
    expect(socket.ofType('final').map((f) => [f.segmentId, f.start.sample, f.end.sample])).toEqual([
      ['seg_0', '0', String(5 * FRAME)],
      ['seg_1', String(5 * FRAME), String(8 * FRAME)],
    ]);
    expect(socket.ofType('committed')).toMatchObject([{ segmentId: 'seg_0', capturedSamples: String(5 * FRAME) }]);
    expect(queue.budget.seconds).toBe(0);
    expect(queue.deferredCount).toBe(0);
    queue.stop();
  });

  it('holds a deferred session at the node bound (RECOGNITION_BACKLOG) and refuses the frame past it', async () => {
    const engine = new FakeEngine({ decoders: 1 });
    const queue = new RecognizerQueue(new BacklogBudget(0.1));
    const h = await liveSession(engine, {}, { deferral: queue });
    open.push(h);
    await h.session.attach(new RecordingSocket());
    const second = await h.newSession({});
    const socket = new RecordingSocket();
    await second.attach(socket);
    for (let at = 0; at < 4 * FRAME; at += FRAME) void second.onBinary(socket, audioFrame(1, at, tone(16000, 0.04)));
    await socket.until((ev) => ev.some((e) => e.type === 'error') && ev.filter((e) => e.type === 'ack').length === 2);
    expect(socket.ofType('accepting')).toMatchObject([{ accepting: false, reason: 'RECOGNITION_BACKLOG' }]);
    expect(socket.ofType('error')[0]).toMatchObject({ code: 'NOT_ACCEPTING' });
    expect(socket.ofType('ack').map((a) => a.capturedSamples)).toEqual([String(FRAME), String(2 * FRAME)]);
    queue.stop();
  });
});
