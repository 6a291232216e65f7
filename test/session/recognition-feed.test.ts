// The recognition feed (src/session/recognition-feed.ts): items recognized one at a time, in
// the order pushed, only while feeding; idle() waits out the item under way; the node's budget
// counts exactly the audio waiting while deferred; it reports running dry, also when it is
// started with nothing waiting (a deferred session that took a recognizer before any audio
// came has caught up at once).
import { afterEach, describe, expect, it } from 'vitest';
import { BacklogBudget, type BacklogItem } from '../../src/core/recognition-backlog.js';
import { RecognitionFeed } from '../../src/session/recognition-feed.js';
import { RecognizerQueue } from '../../src/session/recognizer-queue.js';
import { FakeEngine } from '../helpers/fake-engine.js';
import { liveSession, RecordingSocket } from '../helpers/live.js';

const audio = (at: number, n = 1600): BacklogItem => ({ kind: 'audio', at: BigInt(at), samples: new Int16Array(n), arrivedAtMs: 0 });

function gatedFeed() {
  const seen: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const gates: Array<() => void> = [];
  let drained = 0;
  const feed = new RecognitionFeed(
    16000,
    async (item) => {
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise<void>((go) => gates.push(go));
      seen.push(item.kind === 'audio' ? `audio@${item.at}` : item.kind);
      inFlight -= 1;
      return true;
    },
    () => (drained += 1),
  );
  const step = async () => {
    while (gates.length === 0) await new Promise((r) => setImmediate(r));
    gates.shift()!();
    await new Promise((r) => setImmediate(r));
  };
  return { feed, seen, step, maxInFlight: () => maxInFlight, drained: () => drained };
}

describe('RecognitionFeed', () => {
  it('feeds one item at a time, in order, only once started', async () => {
    const f = gatedFeed();
    f.feed.push(audio(0));
    f.feed.push({ kind: 'commit', capturedSamples: '1600' });
    f.feed.push(audio(1600));
    await new Promise((r) => setTimeout(r, 10));
    expect(f.seen).toEqual([]);
    f.feed.start();
    for (let i = 0; i < 3; i++) await f.step();
    await f.feed.idle();
    expect(f.seen).toEqual(['audio@0', 'commit', 'audio@1600']);
    expect(f.maxInFlight()).toBe(1);
    expect(f.drained()).toBe(1);
  });

  it('idle() resolves only after the item under way; stop() leaves the rest waiting', async () => {
    const f = gatedFeed();
    f.feed.start();
    f.feed.push(audio(0));
    f.feed.push(audio(1600));
    let idle = false;
    const waiting = f.feed.idle().then(() => (idle = true));
    f.feed.stop();
    await new Promise((r) => setTimeout(r, 10));
    expect(idle).toBe(false);
    await f.step();
    await waiting;
    expect(f.seen).toEqual(['audio@0']);
    expect(f.feed.seconds).toBeCloseTo(0.1);
  });

  it('counts waiting audio against the node budget while deferred, frame by frame, back to zero', async () => {
    const budget = new BacklogBudget(10);
    const f = gatedFeed();
    f.feed.count(budget);
    for (let i = 0; i < 5; i++) f.feed.push(audio(i * 1600));
    expect(budget.seconds).toBeCloseTo(0.5);
    f.feed.start();
    await f.step();
    await f.step();
    expect(budget.seconds).toBeCloseTo(0.2);
    const left = f.feed.clear();
    expect(left).toHaveLength(2);
    expect(budget.seconds).toBe(0);
  });

  it('whenBelow() holds a producer while more than the bound waits', async () => {
    const f = gatedFeed();
    f.feed.start();
    for (let i = 0; i < 4; i++) f.feed.push(audio(i * 16000, 16000)); // 4 s
    let through = false;
    const held = f.feed.whenBelow(1).then(() => (through = true));
    await f.step(); // one second in the recognizer, two waiting
    expect(through).toBe(false);
    await f.step();
    await held;
    expect(f.feed.seconds).toBeLessThanOrEqual(1);
  });

  it('reports running dry when started with nothing waiting', async () => {
    const f = gatedFeed();
    f.feed.start();
    await f.feed.idle();
    expect(f.drained()).toBe(1);
    // And again after more came and went.
    f.feed.push(audio(0));
    await f.step();
    await f.feed.idle();
    expect(f.drained()).toBe(2);
  });
});

describe('a deferred session with no audio', () => {
  const open: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    for (const h of open.splice(0)) await h.close();
  });

  it('is told RECOGNITION_CAUGHT_UP once it takes a recognizer', async () => {
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

    // The first session closes: its decoder goes to the waiting one, which has nothing to catch up on.
    void h.session.onText(first, JSON.stringify({ type: 'close' }));
    await socket.until((ev) => ev.some((e) => e.type === 'notice' && e.code === 'RECOGNITION_CAUGHT_UP'), 5000);
    expect(second.isDeferred).toBe(false);
    expect(queue.deferredCount).toBe(0);
    queue.stop();
  });
});
