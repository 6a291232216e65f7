// Event fan-out (src/session/session-events.ts) with the fake engine: watchers get the
// snapshot, then every event of the stream socket but acks, pongs and errors; the watcher
// limit holds; a closed session lets its watchers go.
import { afterEach, describe, expect, it } from 'vitest';
import { FakeEngine, tone } from '../helpers/fake-engine.js';
import { audioFrame, liveSession, RecordingSocket } from '../helpers/live.js';

const FRAME = 640;
const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
});

describe('session events', () => {
  it("watchers see the stream socket's events but acks, pongs and errors, and are let go at close", async () => {
    const engine = new FakeEngine({ samplesPerWord: 640 });
    const h = await liveSession(engine);
    open.push(h);
    const socket = new RecordingSocket();
    await h.session.attach(socket);
    const watcher = new RecordingSocket();
    h.session.watch(watcher, 2);
    expect(watcher.events[0]).toMatchObject({ type: 'watching', streaming: true, state: 'RECORDING' });
    for (let at = 0; at < 4 * FRAME; at += FRAME) void h.session.onBinary(socket, audioFrame(1, at, tone(16000, 0.04)));
    void h.session.onText(socket, JSON.stringify({ type: 'ping', id: 'p' }));
    void h.session.onText(socket, '{"type":"nonsense"}');
    void h.session.onText(socket, JSON.stringify({ type: 'close' }));
    await socket.until((ev) => ev.some((e) => e.type === 'closed'));
    const seenBySocket = socket.events.map((e) => e.type);
    expect(seenBySocket).toEqual(expect.arrayContaining(['ack', 'pong', 'error', 'partial', 'final', 'closed']));
    const mirrored = socket.events.filter((e) => !['ack', 'pong', 'error', 'ready'].includes(e.type));
    expect(watcher.events.slice(1)).toEqual(mirrored);
    expect(watcher.closed).toMatchObject({ code: 1000 });
  });

  it('refuses a watcher past the limit (WATCHER_LIMIT), takes one again when a place frees', async () => {
    const h = await liveSession(new FakeEngine());
    open.push(h);
    const a = new RecordingSocket();
    h.session.watch(a, 1);
    expect(() => h.session.watch(new RecordingSocket(), 1)).toThrow(/WATCHER_LIMIT|watchers/);
    h.session.unwatch(a);
    h.session.watch(new RecordingSocket(), 1);
    expect(h.session.watcherCount).toBe(1);
  });
});
