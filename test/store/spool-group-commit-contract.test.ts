// A node's group commit of the shared spool (areas/spool-commit.ts, store.writeSpools), on both
// engines: one transaction writes the batches of many sessions, each fenced on its own (a
// session that moved on changes nothing, the others commit), a batch has the effect of its ops
// applied in order, a malformed batch is refused alone, and (PostgreSQL) a session whose row
// another transaction holds is passed over at once rather than waited for.
import pg from 'pg';
import { mulawToPcm16 } from '../../src/core/audio/encodings.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SqlStore } from '../../src/store/sql-store.js';
import type { SessionFence, SpoolBatch, SpoolOp } from '../../src/store/store.js';
import { ENGINES, T0, addAccount, createHarness, type StoreHarness } from './harness.js';

const at = (ms: number) => new Date(Date.parse('2026-01-01T00:00:00Z') + ms);
const LEASE = 10_000;
const pcm = (n: number, v = 1) => Buffer.from(new Int16Array(n).fill(v).buffer);
const append = (startSample: bigint, frames: number[], v = 1): SpoolOp => ({
  type: 'append',
  chunk: {
    startSample,
    frames,
    pcm: pcm(
      frames.reduce((a, b) => a + b, 0),
      v,
    ),
  },
});

async function newSession(store: SqlStore, n: number): Promise<string> {
  const out = await store.createSession({
    accountId: 'acc_1',
    idempotencyKey: `k${n}`,
    requestHash: 'h',
    session: {
      id: `rts_${n}`,
      accountId: 'acc_1',
      transcriptionId: `stt_${n}`,
      title: 't',
      languageHint: null,
      options: {},
      createdAt: T0,
    },
    sampleRateHz: 8000,
  });
  if (out.kind !== 'created') throw new Error('no session');
  return out.session.id;
}

const sorted = (xs: string[]) => [...xs].sort();

describe.each(ENGINES)('spool group commit on %s', (engine) => {
  let harness: StoreHarness;
  let store: SqlStore;
  let ids: string[];
  let fences: SessionFence[];

  beforeEach(async () => {
    harness = await createHarness(engine);
    store = await harness.open();
    await addAccount(store, 'acc_1', 100n);
    ids = [];
    for (const n of [1, 2, 3]) ids.push(await newSession(store, n));
    for (const id of ids) await store.claimSession(id, 'acc_1', 'node-a', LEASE, at(0));
    fences = ids.map((sessionId) => ({ sessionId, epoch: 1, node: 'node-a' }));
  });
  afterEach(async () => {
    await harness.dispose();
  });

  it('writes every session in one call; a session that moved on changes nothing while the others commit', async () => {
    const [s1, s2, s3] = ids as [string, string, string];
    // s2: a client resumed elsewhere (new epoch); s3: adopted by node-b after node-a's lease ran out
    await store.resumeSession(s2, 'acc_1', { leaseMs: LEASE, now: at(1000) });
    await store.claimSession(s3, null, 'node-b', LEASE, at(20_000));
    const batches: SpoolBatch[] = fences.map((fence) => ({
      fence,
      ops: [append(0n, [160, 160])],
      progress: { capturedSamples: 320n, charactersCharged: 7n, nextSegmentIndex: 1 },
    }));
    const out = await store.writeSpools(batches);
    expect(out).toEqual({ written: [s1], fenced: sorted([s2, s3]), busy: [], invalid: [] });
    expect((await store.readSpool(s1)).map((c) => [c.startSample, c.frames])).toEqual([[0n, [160, 160]]]);
    expect(await store.readSpool(s2)).toEqual([]);
    expect(await store.readSpool(s3)).toEqual([]);
    expect(await store.getSession(s1, 'acc_1')).toMatchObject({ capturedSamples: 320n, charactersCharged: 7n, nextSegmentIndex: 1 });
    expect(await store.getSession(s2, 'acc_1')).toMatchObject({ capturedSamples: 0n, charactersCharged: 0n, nextSegmentIndex: 0 });
    // progress is only ever raised, and a batch with progress alone is fine
    expect(await store.writeSpools([{ fence: fences[0]!, ops: [], progress: { capturedSamples: 100n } }])).toMatchObject({ written: [s1] });
    expect(await store.getSession(s1, 'acc_1')).toMatchObject({ capturedSamples: 320n, charactersCharged: 7n, nextSegmentIndex: 1 });
  });

  it("a batch has the effect of its ops applied in order (writeSpool's, op by op)", async () => {
    const [s1, s2] = ids as [string, string];
    const ops: SpoolOp[] = [
      append(0n, [160, 160], 1),
      { type: 'keepFrom', fromSample: 160n, channelState: [1, 2] },
      append(320n, [160], 2),
      { type: 'keepFrom', fromSample: 400n, channelState: [3] },
      append(480n, [80, 80], 3),
      { type: 'keepFrom', fromSample: 0n, channelState: null },
    ];
    await store.writeSpool(fences[0]!, [append(0n, [8]), append(8n, [8])], at(0), LEASE);
    await store.writeSpool(fences[1]!, [append(0n, [8]), append(8n, [8])], at(0), LEASE);
    for (const op of ops) await store.writeSpool(fences[0]!, [op], at(0), LEASE);
    expect(await store.writeSpools([{ fence: fences[1]!, ops }])).toMatchObject({ written: [s2] });
    const [a, b] = [await store.readSpool(s1), await store.readSpool(s2)];
    // keepFrom 400 falls inside the chunk at 320: it is cut to start there (80 samples left)
    expect(a.map((c) => [c.startSample, c.frames])).toEqual([
      [400n, [80]],
      [480n, [80, 80]],
    ]);
    expect(b).toEqual(a);
    const channel = async (id: string) =>
      ((await store.claimSession(id, 'acc_1', 'node-a', LEASE, at(0))) as { channelState: number[] | null }).channelState;
    expect(await channel(s2)).toEqual([3]);
    expect(await channel(s2)).toEqual(await channel(s1));

    // a clear between appends: only what follows it stays
    const cleared: SpoolOp[] = [append(640n, [160]), { type: 'clear', channelState: null }, append(800n, [160], 4)];
    for (const op of cleared) await store.writeSpool(fences[0]!, [op], at(0), LEASE);
    await store.writeSpools([{ fence: fences[1]!, ops: cleared }]);
    expect((await store.readSpool(s2)).map((c) => c.startSample)).toEqual([800n]);
    expect(await store.readSpool(s2)).toEqual(await store.readSpool(s1));
  });

  it('telephony audio (mu-law values only) is stored one byte a sample and read back as the same PCM; other audio stays PCM', async () => {
    const [s1] = ids as [string];
    const law = new Int16Array(320);
    for (let i = 0; i < law.length; i++) law[i] = mulawToPcm16((i * 37) & 0xff);
    const wide = Int16Array.from(law, (v, i) => (i === 100 ? v + 1 : v)); // one value no mu-law byte gives
    const bytes = (x: Int16Array) => Buffer.from(x.buffer, x.byteOffset, x.byteLength);
    await store.writeSpools([
      {
        fence: fences[0]!,
        ops: [
          { type: 'append', chunk: { startSample: 0n, frames: [160, 160], pcm: bytes(law) } },
          { type: 'append', chunk: { startSample: 320n, frames: [320], pcm: bytes(wide) } },
        ],
      },
    ]);
    const back = await store.readSpool(s1);
    expect(back.map((c) => c.pcm)).toEqual([bytes(law), bytes(wide)]);
    const stored = await store.db.all<{ n: bigint; encoding: string }>(
      'SELECT LENGTH(pcm) AS n, encoding FROM spool_chunks WHERE session_id = ? ORDER BY start_sample',
      [s1],
    );
    expect(stored.map((r) => [Number(r.n), r.encoding])).toEqual([
      [320, 'mulaw'],
      [640, 'pcm_s16le'],
    ]);
  });

  it('keepFrom inside a stored chunk cuts it there, mu-law or PCM, in one batch or in a later one: nothing before the sample stays', async () => {
    const [s1, s2] = ids as [string, string];
    const law = new Int16Array(320);
    for (let i = 0; i < law.length; i++) law[i] = mulawToPcm16(i & 0xff);
    const wide = Int16Array.from(law, (v) => v + 1);
    const bytes = (x: Int16Array) => Buffer.from(x.buffer, x.byteOffset, x.byteLength);
    for (const [i, audio] of [law, wide].entries()) {
      const fence = fences[i]!;
      await store.writeSpools([{ fence, ops: [{ type: 'append', chunk: { startSample: 0n, frames: [160, 160], pcm: bytes(audio) } }] }]);
      // a later window's keepFrom, 10 samples into the second frame
      await store.writeSpools([{ fence, ops: [{ type: 'keepFrom', fromSample: 170n, channelState: null }] }]);
      const back = await store.readSpool(fence.sessionId);
      expect(back.map((c) => [c.startSample, c.frames])).toEqual([[170n, [150]]]);
      expect(back[0]!.pcm).toEqual(bytes(audio.subarray(170)));
    }
    // an append and a keepFrom inside it in the same window
    await store.writeSpools([
      {
        fence: fences[2]!,
        ops: [
          { type: 'append', chunk: { startSample: 0n, frames: [160, 160], pcm: bytes(law) } },
          { type: 'keepFrom', fromSample: 100n, channelState: null },
        ],
      },
    ]);
    const third = await store.readSpool(ids[2]!);
    expect(third.map((c) => [c.startSample, c.frames])).toEqual([[100n, [60, 160]]]);
    expect(third[0]!.pcm).toEqual(bytes(law.subarray(100)));
    // writeSpool (the one-session path) cuts the same way
    await store.writeSpool(fences[1]!, [{ type: 'keepFrom', fromSample: 200n, channelState: null }], at(0), LEASE);
    expect((await store.readSpool(s2)).map((c) => [c.startSample, c.frames])).toEqual([[200n, [120]]]);
    expect((await store.readSpool(s1)).length).toBe(1);
  });

  it('a malformed batch is refused alone', async () => {
    const [s1, s2] = ids as [string, string];
    const bad: SpoolOp = { type: 'append', chunk: { startSample: 0n, frames: [160], pcm: pcm(100) } };
    const out = await store.writeSpools([
      { fence: fences[0]!, ops: [append(0n, [160])] },
      { fence: fences[1]!, ops: [bad] },
    ]);
    expect(out.written).toEqual([s1]);
    expect(out.invalid).toEqual([{ sessionId: s2, reason: expect.stringMatching(/frame sizes/) }]);
    expect(await store.readSpool(s2)).toEqual([]);
  });

  it.runIf(engine === 'postgres')(
    'a session whose row another transaction holds is passed over at once (busy), the others commit',
    async () => {
      const [s1, s2] = ids as [string, string];
      const other = new pg.Client({ connectionString: harness.settings.databaseUrl });
      await other.connect();
      try {
        await other.query('BEGIN');
        await other.query('SELECT id FROM rt_sessions WHERE id = $1 FOR UPDATE', [s2]);
        const started = Date.now();
        const out = await store.writeSpools([
          { fence: fences[0]!, ops: [append(0n, [160])] },
          { fence: fences[1]!, ops: [append(0n, [160])] },
        ]);
        expect(out).toEqual({ written: [s1], fenced: [], busy: [s2], invalid: [] });
        expect(Date.now() - started).toBeLessThan(2000);
        expect(await store.readSpool(s2)).toEqual([]);
        await other.query('ROLLBACK');
        expect(await store.writeSpools([{ fence: fences[1]!, ops: [append(0n, [160])] }])).toMatchObject({ written: [s2] });
        expect((await store.readSpool(s2)).length).toBe(1);
      } finally {
        await other.end();
      }
    },
  );
});
