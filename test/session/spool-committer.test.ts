// The node-wide group commit of the shared spool (src/session/spool-committer.ts and
// database-spool.ts) on the run's store: one transaction a window for every session of the
// node, each still fenced (a session that moved on gets SESSION_MOVED and adds nothing to its
// spool, the others commit), progress saved in the same commit, and (PostgreSQL) a session
// whose row another transaction holds does not hold up the others' acknowledgements.
import pg from 'pg';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { DatabaseSpool, DatabaseSpools } from '../../src/session/database-spool.js';
import { SpoolCommitter, WINDOW_ATTEMPTS } from '../../src/session/spool-committer.js';
import { openStore } from '../../src/store/index.js';
import type { SqlStore } from '../../src/store/sql-store.js';
import type { SessionFence, SpoolBatch, Store } from '../../src/store/store.js';
import { FakeEngine, tone } from '../helpers/fake-engine.js';
import { audioFrame, liveSession, RecordingSocket } from '../helpers/live.js';
import { storeSettingsFor, tempDir, testStore } from '../helpers/service.js';

const LEASE = 30_000;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function node(sessions: number) {
  const dataDir = tempDir('scribed-committer-');
  const settings = await storeSettingsFor(dataDir);
  const store = (await openStore(settings)) as SqlStore;
  cleanups.push(() => store.close());
  await store.createAccount({
    id: 'acc_1',
    name: 'committer test',
    characters: 1000n,
    accessKey: { id: 'ak_1', secretHash: Buffer.alloc(32) },
    apiToken: { id: 'at_1', secretHash: Buffer.alloc(32) },
    createdAt: new Date().toISOString(),
  });
  const spools = new DatabaseSpools({ store, windowMs: 20, leaseMs: LEASE, log: pino({ level: 'silent' }) });
  const members: Array<{ id: string; fence: SessionFence; spool: DatabaseSpool }> = [];
  for (let n = 0; n < sessions; n++) {
    const id = `rts_${n}`;
    await store.createSession({
      accountId: 'acc_1',
      idempotencyKey: `k${n}`,
      requestHash: 'h',
      session: {
        id,
        accountId: 'acc_1',
        transcriptionId: `stt_${n}`,
        title: 't',
        languageHint: null,
        options: {},
        createdAt: new Date().toISOString(),
      },
      sampleRateHz: 8000,
    });
    await store.claimSession(id, 'acc_1', 'node-a', LEASE, new Date());
    const fence: SessionFence = { sessionId: id, epoch: 1, node: 'node-a' };
    members.push({ id, fence, spool: spools.open(id, () => fence, 0n) });
  }
  return { store, settings, committer: spools.committer, members };
}

const frame = (n = 160) => new Int16Array(n).fill(3);

describe('the node-wide spool commit', () => {
  it('writes every session of the node in one transaction per window', async () => {
    const { store, committer, members } = await node(5);
    const before = committer.commits;
    await Promise.all(
      members.map((m) => {
        m.spool.append(0n, frame());
        m.spool.append(160n, frame());
        return m.spool.whenDurable();
      }),
    );
    expect(committer.commits - before).toBe(1);
    for (const m of members) {
      expect(m.spool.durableEnd).toBe(320n);
      expect((await store.readSpool(m.id)).map((c) => [c.startSample, c.frames])).toEqual([[0n, [160, 160]]]);
    }
    // progress rides the next commit with the frames
    const saved = members.map((m, i) => m.spool.saveProgress(m.fence, { capturedSamples: 320n, nextSegmentIndex: i }));
    await Promise.all(members.map((m) => (m.spool.append(320n, frame()), m.spool.whenDurable())));
    expect(await Promise.all(saved)).toEqual(members.map(() => true));
    expect(committer.commits - before).toBe(2);
    for (const [i, m] of members.entries())
      expect(await store.getSession(m.id, 'acc_1')).toMatchObject({ capturedSamples: 320n, nextSegmentIndex: i });
  });

  it('a session that moved on gets SESSION_MOVED and adds nothing to its spool; the others commit in the same window', async () => {
    const { store, committer, members } = await node(3);
    const [a, moved, c] = members as [(typeof members)[0], (typeof members)[0], (typeof members)[0]];
    await store.resumeSession(moved.id, 'acc_1', { leaseMs: LEASE, now: new Date() }); // a client resumed on another node
    const before = committer.commits;
    for (const m of members) m.spool.append(0n, frame());
    const progress = moved.spool.saveProgress(moved.fence, { capturedSamples: 160n });
    const results = await Promise.allSettled(members.map((m) => m.spool.whenDurable()));
    expect(committer.commits - before).toBe(1);
    expect(results[0]).toEqual({ status: 'fulfilled', value: undefined });
    expect(results[2]).toEqual({ status: 'fulfilled', value: undefined });
    expect(results[1]).toMatchObject({ status: 'rejected', reason: { code: 'SESSION_MOVED' } });
    expect(await progress).toBe(false);
    expect(await store.readSpool(moved.id)).toEqual([]);
    expect(moved.spool.durableEnd).toBe(0n);
    for (const m of [a, c]) expect((await store.readSpool(m.id)).length).toBe(1);
  });

  it.runIf(testStore() === 'postgres')("a session whose row another transaction holds does not hold up the others' acks", async () => {
    const { store, settings, members } = await node(3);
    const [slow, ...others] = members as [(typeof members)[0], ...typeof members];
    const other = new pg.Client({ connectionString: settings.databaseUrl });
    await other.connect();
    cleanups.push(() => other.end());
    await other.query('BEGIN');
    await other.query('SELECT id FROM rt_sessions WHERE id = $1 FOR UPDATE', [slow.id]);
    let slowDone = false;
    slow.spool.append(0n, frame());
    const slowDurable = slow.spool.whenDurable().then(() => (slowDone = true));
    const t0 = Date.now();
    await Promise.all(others.map((m) => (m.spool.append(0n, frame()), m.spool.whenDurable())));
    expect(Date.now() - t0).toBeLessThan(2000);
    for (const m of others) expect((await store.readSpool(m.id)).length).toBe(1);
    // the held session keeps being offered, window after window, and commits once let go
    await new Promise((r) => setTimeout(r, 200));
    expect(slowDone).toBe(false);
    expect(await store.readSpool(slow.id)).toEqual([]);
    await other.query('ROLLBACK');
    await slowDurable;
    expect((await store.readSpool(slow.id)).map((c) => c.startSample)).toEqual([0n]);
    expect(slow.spool.durableEnd).toBe(160n);
  });

  it.runIf(testStore() === 'postgres')(
    'a session whose rows the database refuses fails alone; the others of its window commit',
    async () => {
      const { store, settings, members } = await node(3);
      const [a, bad, c] = members as [(typeof members)[0], (typeof members)[0], (typeof members)[0]];
      const other = new pg.Client({ connectionString: settings.databaseUrl });
      await other.connect();
      cleanups.push(() => other.end());
      await other.query(
        `CREATE FUNCTION spool_fault() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.session_id = '${bad.id}' THEN RAISE EXCEPTION 'injected storage fault'; END IF; RETURN NEW; END $$`,
      );
      await other.query('CREATE TRIGGER spool_fault BEFORE INSERT ON spool_chunks FOR EACH ROW EXECUTE FUNCTION spool_fault()');
      for (const m of members) m.spool.append(0n, frame());
      const results = await Promise.allSettled(members.map((m) => m.spool.whenDurable()));
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/injected storage fault/);
      for (const m of [a, c]) expect((await store.readSpool(m.id)).length).toBe(1);
      expect(await store.readSpool(bad.id)).toEqual([]);
    },
  );
});

describe.runIf(testStore() === 'postgres')('a live session on the node-wide commit', () => {
  it('a node that lost one session: that socket gets SESSION_MOVED and its spool nothing more; the other session keeps its acks', async () => {
    const engine = new FakeEngine();
    const h = await liveSession(engine, { inputEncoding: 'pcm_s16le_16000' });
    cleanups.push(() => h.close());
    const second = await h.newSession({});
    const [s1, s2] = [new RecordingSocket(), new RecordingSocket()];
    await h.session.attach(s1);
    await second.attach(s2);
    const audio = tone(16_000, 0.2);
    const FRAME = 640;
    const send = (session: typeof second, socket: RecordingSocket, from: number) => {
      for (let at = 0; at < audio.length; at += FRAME)
        void session.onBinary(socket, audioFrame(1, from + at, audio.subarray(at, at + FRAME)));
      return from + audio.length;
    };
    let end1 = send(h.session, s1, 0);
    const end2 = send(second, s2, 0);
    await s1.until((ev) => ev.some((e) => e.type === 'ack' && e.capturedSamples === String(end1)));
    await s2.until((ev) => ev.some((e) => e.type === 'ack' && e.capturedSamples === String(end2)));

    // a client resumes the second session through another node: this node is fenced off
    await h.store.resumeSession(second.id, second.accountId, { leaseMs: LEASE, now: new Date() });
    const acked2 = s2.ofType('ack').length;
    send(second, s2, end2);
    end1 = send(h.session, s1, end1);
    await s1.until((ev) => ev.some((e) => e.type === 'ack' && e.capturedSamples === String(end1)));
    await s2.until(() => s2.closed !== null || s2.ofType('error').length > 0);
    expect(s2.ofType('ack').length).toBe(acked2);
    expect(s2.closed?.code ?? s2.ofType('error')[0]?.code).toSatisfy((x: unknown) => x === 4000 || x === 'SESSION_MOVED');
    const stored = await h.store.readSpool(second.id);
    expect(stored.reduce((n, c) => Math.max(n, Number(c.startSample) + c.frames.reduce((a, b) => a + b, 0)), 0)).toBe(end2);
  });
});

describe('a window that fails as a whole', () => {
  /** A store whose group commit fails `failures` times, then writes everything. */
  function flaky(failures: number) {
    const calls: SpoolBatch[][] = [];
    const store = {
      async writeSpools(batches: readonly SpoolBatch[]) {
        calls.push([...batches]);
        if (calls.length <= failures) throw new Error('Connection terminated unexpectedly');
        return { written: batches.map((b) => b.fence.sessionId), fenced: [], busy: [], invalid: [] };
      },
    } as unknown as Store;
    const committer = new SpoolCommitter({ store, windowMs: 5 });
    const spools = ['s1', 's2'].map(
      (id) => new DatabaseSpool(id, () => ({ sessionId: id, epoch: 1, node: 'n' }), committer, { store, windowMs: 5, leaseMs: LEASE }, 0n),
    );
    return { calls, spools };
  }

  it(`is tried again in the next windows (up to ${WINDOW_ATTEMPTS}), its frames kept, and the acks go out once it commits`, async () => {
    const { calls, spools } = flaky(WINDOW_ATTEMPTS - 1);
    for (const s of spools) s.append(0n, frame());
    await Promise.all(spools.map((s) => s.whenDurable()));
    expect(calls).toHaveLength(WINDOW_ATTEMPTS);
    expect(calls.at(-1)!.map((b) => [b.fence.sessionId, b.ops.length])).toEqual([
      ['s1', 1],
      ['s2', 1],
    ]);
    for (const s of spools) expect(s.durableEnd).toBe(160n);
  });

  it(`fails every waiting ack after ${WINDOW_ATTEMPTS} windows in a row`, async () => {
    const { calls, spools } = flaky(Number.POSITIVE_INFINITY);
    for (const s of spools) s.append(0n, frame());
    const results = await Promise.allSettled(spools.map((s) => s.whenDurable()));
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(calls).toHaveLength(WINDOW_ATTEMPTS);
    for (const s of spools) expect(s.durableEnd).toBe(0n);
  });
});
