// The coordinator (src/session/live-session.ts) with the fake engine: the state machine's
// effects are what happens (socket lost: persisted PAUSED, decoder held; hold over: final and
// decoder released; shutdown of a paused session: its held segment finalized), and the one
// queue keeps control messages in order with frames.
import { afterEach, describe, expect, it } from 'vitest';
import { FakeEngine, tone } from '../helpers/fake-engine.js';
import { audioFrame, liveSession, RecordingSocket } from '../helpers/live.js';

const FRAME = 640;
const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
});

async function streamed(engine: FakeEngine, holdMs: number) {
  const h = await liveSession(engine, {}, { pausedDecoderHoldMs: holdMs });
  open.push(h);
  const socket = new RecordingSocket();
  await h.session.attach(socket);
  for (let at = 0; at < 10 * FRAME; at += FRAME) void h.session.onBinary(socket, audioFrame(1, at, tone(16000, 0.04)));
  await socket.until((ev) => ev.some((e) => e.type === 'ack' && e.capturedSamples === String(10 * FRAME)));
  return { ...h, socket };
}

describe('LiveSession, driven by the state machine', () => {
  it('socket lost: PAUSED in the store, the decoder held with the open segment, then finalized and released when the hold ends', async () => {
    const engine = new FakeEngine();
    const h = await streamed(engine, 300);
    await h.session.detach(h.socket);
    expect(h.session.state).toBe('PAUSED');
    expect((await h.store.getSession(h.session.id, h.session.accountId))!.state).toBe('PAUSED');
    expect(h.session.holdsIdleDecoder).toBe(true);
    expect(engine.streams[0]!.released).toBe(false);
    await new Promise((r) => setTimeout(r, 600));
    expect(engine.streams[0]!.released).toBe(true);
    const segs = await h.store.listSegments(h.session.transcriptionId);
    expect(segs.map((s) => [Number(s.startSample), Number(s.endSample)])).toEqual([[0, 10 * FRAME]]);
  });

  it('shutdown of a paused session that holds a decoder finalizes its segment and releases the decoder', async () => {
    const engine = new FakeEngine();
    const h = await streamed(engine, 60_000);
    await h.session.detach(h.socket);
    await h.session.shutdown();
    expect(engine.streams[0]!.released).toBe(true);
    expect((await h.store.listSegments(h.session.transcriptionId)).length).toBe(1);
    expect((await h.store.getSession(h.session.id, h.session.accountId))!.state).toBe('PAUSED');
  });

  it('close: every frame before it recognized, the final stored and sent, then closed; frames after it refused', async () => {
    const engine = new FakeEngine();
    engine.latencyMs.accept = 5;
    const h = await streamed(engine, 60_000);
    void h.session.onText(h.socket, JSON.stringify({ type: 'close' }));
    void h.session.onBinary(h.socket, audioFrame(1, 10 * FRAME, tone(16000, 0.04)));
    await h.socket.until((ev) => ev.some((e) => e.type === 'closed'));
    const types = h.socket.events.map((e) => e.type).filter((t) => t === 'final' || t === 'closed');
    expect(types).toEqual(['final', 'closed']);
    expect(engine.streams[0]!.accepted.reduce((n, f) => n + f.length, 0)).toBe(10 * FRAME);
    expect(h.socket.ofType('closed')[0]).toMatchObject({ capturedSamples: String(10 * FRAME), segments: 1 });
    expect(h.session.state).toBe('CLOSED');
    expect(h.socket.closed).toMatchObject({ code: 1000 });
  });

  it('resume while a socket is attached: the old socket is detached (4000), the next epoch begins where the audio ends', async () => {
    const engine = new FakeEngine();
    const h = await streamed(engine, 60_000);
    const r = await h.session.resume(BigInt(10 * FRAME));
    expect(r).toMatchObject({ epoch: 2, capturedSamples: BigInt(10 * FRAME) });
    expect(h.socket.closed).toMatchObject({ code: 4000 });
    expect(h.session.hasSocket).toBe(false);
  });
});
