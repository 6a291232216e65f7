// Session ownership and the shared spool (areas/ownership.ts), on both engines: a claim is a
// lease fenced by the epoch; a resume moves the epoch on and fences the old owner; every
// fenced write changes nothing once the fence is gone; the spool is written and read back in
// order; an owner that stops renewing leaves its session to be adopted.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SqlStore } from '../../src/store/sql-store.js';
import type { SessionFence } from '../../src/store/store.js';
import { ENGINES, T0, addAccount, createHarness, type StoreHarness } from './harness.js';

const at = (ms: number) => new Date(Date.parse('2026-01-01T00:00:00Z') + ms);
const LEASE = 10_000;

async function setup(store: SqlStore): Promise<string> {
  await addAccount(store, 'acc_1', 100n);
  const out = await store.createSession({
    accountId: 'acc_1',
    idempotencyKey: 'k1',
    requestHash: 'h',
    session: { id: 'rts_1', accountId: 'acc_1', transcriptionId: 'stt_1', title: 't', languageHint: null, options: {}, createdAt: T0 },
    sampleRateHz: 8000,
  });
  if (out.kind !== 'created') throw new Error('no session');
  return out.session.id;
}

const pcm = (n: number, v = 1) => Buffer.from(new Int16Array(n).fill(v).buffer);
const segment = (index: number, start: bigint, end: bigint) => ({
  transcriptionId: 'stt_1',
  index,
  startSample: start,
  endSample: end,
  text: `s${index}`,
  words: [],
  createdAt: T0,
});

describe.each(ENGINES)('session ownership on %s', (engine) => {
  let harness: StoreHarness;
  let store: SqlStore;
  let id: string;

  beforeEach(async () => {
    harness = await createHarness(engine);
    store = await harness.open();
    id = await setup(store);
  });
  afterEach(async () => {
    await harness.dispose();
  });

  it('a claim is refused while another node holds an unexpired lease on the same epoch, and taken once it expires', async () => {
    const a = await store.claimSession(id, 'acc_1', 'node-a', LEASE, at(0));
    expect(a).toMatchObject({ kind: 'claimed', previousOwner: null });
    expect(await store.claimSession(id, 'acc_1', 'node-b', LEASE, at(5_000))).toEqual({ kind: 'busy', owner: 'node-a' });
    // the same node claims again (a second socket after a drop)
    expect(await store.claimSession(id, 'acc_1', 'node-a', LEASE, at(5_000))).toMatchObject({ kind: 'claimed', previousOwner: 'node-a' });
    // node-a stops renewing: after its lease another node takes the session
    expect(await store.claimSession(id, 'acc_1', 'node-b', LEASE, at(16_000))).toMatchObject({ kind: 'claimed', previousOwner: 'node-a' });
    // another account's session reads as missing
    expect(await store.claimSession(id, 'acc_2', 'node-b', LEASE, at(16_000))).toEqual({ kind: 'not_found' });
  });

  it('a resume elsewhere moves the epoch on: the old owner is fenced off from every write', async () => {
    await store.claimSession(id, 'acc_1', 'node-a', LEASE, at(0));
    const fenceA: SessionFence = { sessionId: id, epoch: 1, node: 'node-a' };
    expect(await store.saveFencedProgress(fenceA, { capturedSamples: 800n })).toBe(true);
    await store.writeSpool(fenceA, [{ type: 'append', chunk: { startSample: 800n, frames: [160, 160], pcm: pcm(320) } }], at(0), LEASE);

    // a client resumes through node-b: the new epoch starts at everything held (the spool's end)
    const resumed = await store.resumeSession(id, 'acc_1', { leaseMs: LEASE, now: at(1000) });
    expect(resumed).toMatchObject({ epoch: 2, capturedSamples: 1120n, epochBases: [0n, 1120n], state: 'RECORDING' });
    // node-b's claim is immediate: node-a's lease is on an older epoch
    expect(await store.claimSession(id, 'acc_1', 'node-b', LEASE, at(1000))).toMatchObject({ kind: 'claimed' });

    expect(await store.saveFencedProgress(fenceA, { capturedSamples: 9999n })).toBe(false);
    expect(await store.appendFencedSegment(fenceA, segment(0, 0n, 1120n))).toBe(false);
    expect(await store.setFencedSessionState(fenceA, 'PAUSED', 'PAUSED')).toBe(false);
    await expect(
      store.writeSpool(fenceA, [{ type: 'append', chunk: { startSample: 1120n, frames: [160], pcm: pcm(160) } }], at(1000), LEASE),
    ).rejects.toThrow(/SESSION_MOVED/);
    expect(await store.renewLeases('node-a', [id], LEASE, at(1000))).toEqual([]);
    expect(await store.listSegments('stt_1')).toEqual([]);
    expect((await store.getSession(id, 'acc_1'))!.capturedSamples).toBe(1120n);

    const fenceB: SessionFence = { sessionId: id, epoch: 2, node: 'node-b' };
    expect(await store.appendFencedSegment(fenceB, segment(0, 0n, 1120n))).toBe(true);
    expect(await store.renewLeases('node-b', [id], LEASE, at(2000))).toEqual([id]);
  });

  it('the serving node keeps the session through its own resume; a resume below what is held is refused', async () => {
    await store.claimSession(id, 'acc_1', 'node-a', LEASE, at(0));
    const fenceA: SessionFence = { sessionId: id, epoch: 1, node: 'node-a' };
    await expect(
      store.resumeSession(id, 'acc_1', { clientCaptured: 100n, heldSamples: 400n, keepFor: fenceA, leaseMs: LEASE, now: at(0) }),
    ).rejects.toThrow(/CAPTURE_CURSOR_MISMATCH/);
    const r = await store.resumeSession(id, 'acc_1', {
      clientCaptured: 400n,
      heldSamples: 400n,
      keepFor: fenceA,
      leaseMs: LEASE,
      now: at(0),
    });
    expect(r).toMatchObject({ epoch: 2, capturedSamples: 400n });
    expect(await store.saveFencedProgress({ ...fenceA, epoch: 2 }, { capturedSamples: 480n })).toBe(true);
    expect(await store.claimSession(id, 'acc_1', 'node-b', LEASE, at(100))).toEqual({ kind: 'busy', owner: 'node-a' });
  });

  it('writes and reads the spool in order; keepFrom and clear drop what a final covers and keep the channel state', async () => {
    await store.claimSession(id, 'acc_1', 'node-a', LEASE, at(0));
    const f: SessionFence = { sessionId: id, epoch: 1, node: 'node-a' };
    await store.writeSpool(
      f,
      [
        { type: 'append', chunk: { startSample: 0n, frames: [160, 160], pcm: pcm(320, 1) } },
        { type: 'append', chunk: { startSample: 320n, frames: [160], pcm: pcm(160, 2) } },
      ],
      at(0),
      LEASE,
    );
    expect((await store.readSpool(id)).map((c) => [c.startSample, c.frames])).toEqual([
      [0n, [160, 160]],
      [320n, [160]],
    ]);
    await store.writeSpool(f, [{ type: 'keepFrom', fromSample: 320n, channelState: [1.5, -2] }], at(0), LEASE);
    const left = await store.readSpool(id);
    expect(left.map((c) => c.startSample)).toEqual([320n]);
    expect(Array.from(new Int16Array(left[0]!.pcm.buffer, left[0]!.pcm.byteOffset, 160))).toEqual(new Array(160).fill(2));
    const again = await store.claimSession(id, 'acc_1', 'node-a', LEASE, at(0));
    expect(again).toMatchObject({ kind: 'claimed', channelState: [1.5, -2] });
    await store.writeSpool(f, [{ type: 'clear', channelState: null }], at(0), LEASE);
    expect(await store.readSpool(id)).toEqual([]);
  });

  it('a session whose owner stopped renewing, with spooled audio, is listed for adoption; a claim raises the cursor to the spool', async () => {
    await store.claimSession(id, 'acc_1', 'node-a', LEASE, at(0));
    const f: SessionFence = { sessionId: id, epoch: 1, node: 'node-a' };
    await store.writeSpool(f, [{ type: 'append', chunk: { startSample: 0n, frames: [400], pcm: pcm(400) } }], at(0), LEASE);
    expect(await store.listOrphanedSessions(at(5_000), 10)).toEqual([]);
    expect(await store.listOrphanedSessions(at(20_000), 10)).toEqual([{ id, accountId: 'acc_1' }]);
    const taken = await store.claimSession(id, null, 'node-b', LEASE, at(20_000));
    expect(taken).toMatchObject({ kind: 'claimed', previousOwner: 'node-a' });
    if (taken.kind === 'claimed') expect(taken.session.capturedSamples).toBe(400n);
    expect(await store.listOrphanedSessions(at(21_000), 10)).toEqual([]);
  });
});
