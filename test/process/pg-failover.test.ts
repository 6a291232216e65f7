// PostgreSQL failing over under live calls (docs/scaling.md, "Database failover"): a primary
// and its synchronous streaming standby (test/helpers/postgres-replication.ts), two `scribed
// serve` behind HAProxy given both hosts in one URL (`...?target_session_attrs=read-write`),
// live calls of real speech through the client library at real time. Mid-call the primary is
// killed (kill -9 of every process of it) and the standby promoted (`pg_ctl promote`). The
// nodes move their pools to the new primary; the calls go on and complete. Checked on the new
// primary: every sample acknowledged before the kill is held, every final a client received is
// stored; and each call ends with all its audio acknowledged, held once and transcribed.
// Measured: kill to the first new acknowledgement (printed).
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionStreamer, type FinalSegment } from '../../src/client/session-streamer.js';
import { chunks, loadClips } from '../helpers/audio.js';
import { startCluster, type Cluster } from '../helpers/cluster.js';
import { startReplicatedPostgres, type ReplicatedPostgres } from '../helpers/postgres-replication.js';

/** Live calls at once: the ten (two nodes of five decoders on this 2-core machine). */
const CALLS = 10;
/** The kill comes this far into the calls' audio. */
const KILL_AFTER_MS = 3000;
const logger = pino({ level: process.env.SCRIBED_TEST_LOG ?? 'silent' });
const clips = loadClips().map((c) => c.mulaw8k);
/** Two clips a call (8-13 s of 8 kHz mu-law), each call starting at another clip: live
 * calls, decoded on two cores within the test's time. */
const callAudio = (i: number) => Buffer.concat([0, 1].map((k) => clips[(i + k) % clips.length]!));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let db: ReplicatedPostgres;
let cluster: Cluster;
let accessKey: string;

beforeAll(async () => {
  db = await startReplicatedPostgres();
  cluster = await startCluster({ databaseUrl: db.url, nodes: 2, maxDecoders: 5 });
  accessKey = (await cluster.createAccount(1_000_000)).accessKey;
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
  await db?.stop();
});

describe('PostgreSQL failover under live calls (primary killed, synchronous standby promoted)', () => {
  it(`${CALLS} live calls: 0 acknowledged samples lost, every final stored, the calls complete`, async () => {
    const calls = Array.from({ length: CALLS }, (_, i) => {
      const streamer = new SessionStreamer({
        url: cluster.url,
        accessKey,
        encoding: 'mulaw_8000',
        streamId: randomUUID(),
        bufferSamples: 60 * 8000,
        logger,
        backoff: { baseMs: 50, maxMs: 500 },
      });
      const finals: FinalSegment[] = [];
      streamer.on('final', (f: FinalSegment) => finals.push(f));
      return { streamer, finals, audio: callAudio(i) };
    });
    await Promise.all(calls.map((c) => c.streamer.start()));
    // Live from the first sample: the audio starts once every socket is up (a decoder loads
    // for each, seconds on a busy machine).
    for (let w = 0; w < 6000 && !calls.every((c) => c.streamer.stats().connected); w++) await sleep(10);
    expect(calls.map((c) => c.streamer.stats().connected)).toEqual(calls.map(() => true));

    // Each call at real time, 100 ms pieces.
    const t0 = Date.now();
    const streaming = calls.map(async (c) => {
      const pieces = chunks(c.audio, 1, 800);
      for (let k = 0; k < pieces.length; k++) {
        await c.streamer.write(pieces[k]!);
        const due = t0 + (k + 1) * 100 - Date.now();
        if (due > 0) await sleep(due);
      }
    });

    // Every call live and acknowledged (a call that met a full node retries on the other).
    await sleep(KILL_AFTER_MS);
    for (let w = 0; w < 2000 && !calls.every((c) => c.streamer.stats().acknowledged >= 8000); w++) await sleep(10);
    const ackedAtKill = calls.map((c) => c.streamer.stats().acknowledged);
    const waitedMs = Date.now() - t0;
    const sessionIds = calls.map((c) => c.streamer.stats().sessionId!);
    expect(Math.min(...ackedAtKill), JSON.stringify(calls.map((c) => c.streamer.stats()))).toBeGreaterThanOrEqual(8000);
    // New audio: sent after the kill, so committed on the new primary (acknowledgements of what
    // the old one committed may still arrive after the kill). Not what was captured: the
    // client's send window holds captured audio back while acknowledgements pause.
    const sentAtKill = calls.map((c) => c.streamer.stats().sent);
    const killedAt = Date.now();
    // Kill to the first acknowledgement of new audio (any call), and to every call's, watched
    // from the kill on (the promotion runs meanwhile).
    let firstAckMs = -1;
    let allAckMs = -1;
    const watching = (async () => {
      for (;;) {
        const moved = calls.map((c, i) => c.streamer.stats().acknowledged > sentAtKill[i]! || sentAtKill[i] === c.audio.length);
        if (firstAckMs < 0 && moved.some(Boolean)) firstAckMs = Date.now() - killedAt;
        if (moved.every(Boolean)) return (allAckMs = Date.now() - killedAt);
        if (Date.now() - killedAt > 30_000)
          throw new Error(`not every call acknowledged again: ${JSON.stringify(calls.map((c) => c.streamer.stats()))}`);
        await sleep(5);
      }
    })();
    await db.killPrimary();
    await db.promoteStandby();
    const promotedMs = Date.now() - killedAt;
    await watching;

    // On the new primary: what each session holds covers what was acknowledged at the kill.
    const client = new pg.Client({ connectionString: db.standby.url });
    client.on('error', () => undefined); // torn down with the cluster if the test times out
    await client.connect();
    try {
      const held = await client.query<{ id: string; held: string }>(
        `SELECT s.id, GREATEST(s.captured_samples,
                  COALESCE((SELECT MAX(end_sample) FROM spool_chunks c WHERE c.session_id = s.id), 0),
                  COALESCE((SELECT MAX(end_sample) FROM segments g WHERE g.transcription_id = s.transcription_id), 0))::text AS held
           FROM rt_sessions s WHERE s.id = ANY($1)`,
        [sessionIds],
      );
      const heldBy = new Map(held.rows.map((r) => [r.id, Number(r.held)]));
      const lost = sessionIds.map((id, i) => Math.max(0, ackedAtKill[i]! - (heldBy.get(id) ?? 0)));
      expect(lost, 'acknowledged samples missing on the new primary, per call').toEqual(sessionIds.map(() => 0));

      await Promise.all(streaming);
      const summaries = await Promise.all(calls.map((c) => c.streamer.end()));
      for (const [i, s] of summaries.entries()) {
        const len = calls[i]!.audio.length;
        expect(s.capturedSamples).toBe(len);
        expect(s.acknowledgedSamples).toBe(len);
        expect(s.serverCapturedSamples).toBe(len);
        expect(s.gapSamples).toBe(0);
        expect(Math.max(...s.finals.map((f) => Number(f.endSample)))).toBe(len);
        expect(
          s.finals
            .map((f) => f.text)
            .join(' ')
            .split(/\s+/)
            .filter(Boolean).length,
        ).toBeGreaterThan(10);
      }
      // Every final a client received (before the kill too) is stored, once, contiguous.
      for (const [i, c] of calls.entries()) {
        const segs = await client.query<{ start_sample: string; end_sample: string; text: string }>(
          `SELECT g.start_sample, g.end_sample, g.text FROM segments g JOIN rt_sessions s ON s.transcription_id = g.transcription_id
            WHERE s.id = $1 ORDER BY g.idx`,
          [sessionIds[i]],
        );
        segs.rows.forEach((row, k) => expect(row.start_sample).toBe(k === 0 ? '0' : segs.rows[k - 1]!.end_sample));
        const stored = new Set(segs.rows.map((r) => `${r.start_sample}-${r.end_sample}:${r.text}`));
        for (const f of c.finals)
          expect(stored.has(`${f.startSample}-${f.endSample}:${f.text}`), `final ${f.startSample}-${f.endSample}`).toBe(true);
      }
      const switched = cluster.nodes.map((n) => n.logs.filter((r) => r.msg === 'database failover: pool moved to the new primary'));
      for (const s of switched) expect(s, 'each node moved its pool once').toHaveLength(1);
      for (const node of cluster.nodes) {
        const metrics = await (await fetch(`${node.base}/metrics`)).text();
        expect(metrics).toMatch(/^scribed_store_failovers_total 1$/m);
      }
      process.stderr.write(
        `pg failover: ${CALLS} calls, kill at ${waitedMs} ms; promote done ${promotedMs} ms after the kill; ` +
          `first new ack ${firstAckMs} ms, every call acknowledged again ${allAckMs} ms after the kill; ` +
          `node search ${JSON.stringify(switched.map((s) => s[0]?.searchMs))} ms; resumes ${summaries.map((s) => s.resumes).join(',')}; ` +
          `acknowledged at kill ${ackedAtKill.join(',')}\n`,
      );
    } finally {
      await client.end();
    }
  }, 240_000);
});
