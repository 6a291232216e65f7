// NodeDrain's decisions over sessions that stand in for live ones: who is told to reconnect,
// when (after the notice, at a segment boundary, or after the boundary wait), and how the drain
// ends (no socket left, grace over, cut short). The real path, sockets and HAProxy included, is
// test/process/drain.test.ts.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { NodeDrain, type DrainOptions } from '../../src/server/drain.js';
import type { ServerEvent } from '../../src/core/protocol.js';
import type { SessionRegistry } from '../../src/session/registry.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

class FakeSession {
  hasSocket = true;
  closeRequested = false;
  told: ServerEvent[] = [];
  constructor(
    readonly id: string,
    public openSegmentSamples = 0,
    readonly socketCanResume = true,
  ) {}
  tellSocket(event: ServerEvent): boolean {
    this.told.push(event);
    return true;
  }
  whenStored(): Promise<void> {
    return Promise.resolve();
  }
  left = false;
  movedOn(): Promise<void> {
    this.left = true;
    return Promise.resolve();
  }
}

function drainOf(sessions: FakeSession[], o: Partial<DrainOptions> = {}): NodeDrain {
  const registry = { all: () => sessions } as unknown as SessionRegistry;
  return new NodeDrain({
    sessions: () => registry,
    log: pino({ level: 'silent' }),
    graceMs: 5_000,
    boundaryWaitMs: 2_000,
    noticeMs: 100,
    pollMs: 10,
    ...o,
  });
}

const final = { type: 'final' } as ServerEvent;

describe('NodeDrain', () => {
  it('tells a session between utterances after the notice, one mid-utterance at its next final; never a socket that cannot resume', async () => {
    const idle = new FakeSession('a', 0);
    const speaking = new FakeSession('b', 8000);
    const facade = new FakeSession('c', 0, false);
    const drain = drainOf([idle, speaking, facade]);
    const done = drain.start();
    expect(drain.draining).toBe(true);
    await sleep(50);
    expect(idle.told).toHaveLength(0); // the notice: the balancer takes the node out first
    await sleep(150);
    expect(idle.told.map((e) => e.type)).toEqual(['reconnect']);
    const r = idle.told[0] as Extract<ServerEvent, { type: 'reconnect' }>;
    expect(r.reason).toBe('NODE_DRAINING');
    expect(r.withinMs).toBeGreaterThan(4_000);
    expect(r.withinMs).toBeLessThanOrEqual(5_000);
    expect(speaking.told).toHaveLength(0);
    drain.observe('b', final);
    await sleep(50);
    expect(speaking.told.map((e) => e.type)).toEqual(['reconnect']);
    expect(facade.told).toHaveLength(0);
    // Told once each, however long the drain goes on.
    await sleep(100);
    expect(idle.told).toHaveLength(1);
    for (const s of [idle, speaking, facade]) s.hasSocket = false;
    expect(await done).toBe('empty');
    // The told sessions leave without finalizing here; the one never told is the stop's.
    expect([idle.left, speaking.left, facade.left]).toEqual([true, true, false]);
  });

  it('a session whose boundary does not come is told after the boundary wait', async () => {
    const speaking = new FakeSession('b', 8000);
    const drain = drainOf([speaking], { boundaryWaitMs: 200 });
    const done = drain.start();
    await sleep(200);
    expect(speaking.told).toHaveLength(0);
    await sleep(250);
    expect(speaking.told).toHaveLength(1);
    speaking.hasSocket = false;
    expect(await done).toBe('empty');
  });

  it('never tells a session whose client has sent close (its client waits for `closed` there): the drain waits for it', async () => {
    const closing = new FakeSession('a', 0);
    closing.closeRequested = true;
    const drain = drainOf([closing], { boundaryWaitMs: 100 });
    const done = drain.start();
    await sleep(400);
    expect(closing.told).toHaveLength(0);
    closing.hasSocket = false; // closed here
    expect(await done).toBe('empty');
    expect(closing.left).toBe(false);
  });

  it('ends when the grace is over with sockets left, or at once when cut short (a second SIGTERM)', async () => {
    const stays = new FakeSession('a', 0, false);
    const t0 = Date.now();
    expect(await drainOf([stays], { graceMs: 300 }).start()).toBe('grace');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
    const drain = drainOf([stays], { graceMs: 60_000 });
    const done = drain.start();
    await sleep(50);
    drain.cutShort();
    expect(await done).toBe('cut');
    expect(await drainOf([]).start()).toBe('empty');
  });
});
