// Lossless failover between nodes (docs/scaling.md), with real processes: three `scribed
// serve` on one PostgreSQL database behind HAProxy (deploy/haproxy.cfg). A SessionStreamer
// streams real speech through HAProxy while the test kill -9s whichever node serves the
// session, twice; the client resumes through HAProxy on another node, which takes the session
// over from the shared spool. Every captured sample must be held once and the words must
// equal an uninterrupted run's. And a resume sent straight to another node while the first
// is alive moves the session: the first stops writing, exactly one node serves it.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import pg from 'pg';
import { pino } from 'pino';
import { SessionStreamer, type FinalSegment } from '../../src/client/session-streamer.js';
import { chunks, loadClips } from '../helpers/audio.js';
import { CLI, startCluster, type Cluster, type ClusterNode } from '../helpers/cluster.js';
import { StreamClient } from '../helpers/stream-client.js';

const logger = pino({ level: process.env.SCRIBED_TEST_LOG ?? 'silent' });
// The five sample clips twice: about 50 s of 8 kHz mu-law; the 30 s segment bound falls in the
// middle, so one kill lands in the first segment and one in the second.
const clipAudio = loadClips().map((c) => c.mulaw8k);
const audio = Buffer.concat([...clipAudio, ...clipAudio]);
const words = (finals: FinalSegment[]) => finals.flatMap((f) => f.text.split(/\s+/).filter(Boolean));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let cluster: Cluster;
let db: pg.Client;
let accessKey: string;

beforeAll(async () => {
  cluster = await startCluster({ adminUrl: inject('postgresUrl'), nodes: 3, maxDecoders: 1, extraArgs: ['--max-decoders', '1'] });
  db = new pg.Client({ connectionString: cluster.dbUrl });
  await db.connect();
  accessKey = (await cluster.createAccount(1_000_000)).accessKey;
}, 120_000);

afterAll(async () => {
  await db?.end();
  await cluster?.stop();
});

/** The node serving a session now (its node id names its pid). */
async function ownerOf(sessionId: string): Promise<ClusterNode | null> {
  const r = await db.query<{ owner_node: string | null }>('SELECT owner_node FROM rt_sessions WHERE id = $1', [sessionId]);
  const owner = r.rows[0]?.owner_node;
  if (!owner) return null;
  return cluster.nodeById(owner);
}

describe('failover between nodes (PostgreSQL, HAProxy, kill -9)', () => {
  it('kill -9 the serving node mid-stream, twice: the client resumes on another node, nothing lost, same words', async () => {
    async function run(kills: number[]) {
      const streamer = new SessionStreamer({
        url: cluster.url,
        accessKey,
        encoding: 'mulaw_8000',
        streamId: randomUUID(),
        bufferSamples: 60 * 8000,
        logger,
        backoff: { baseMs: 50, maxMs: 500 },
      });
      await streamer.start();
      const pieces = chunks(audio, 1, 800); // 100 ms each
      let finalizedEnd = 0;
      streamer.on('final', (f: FinalSegment) => (finalizedEnd = Math.max(finalizedEnd, Number(f.endSample))));
      const log: Array<{ node: string; acknowledged: number; finalizedEnd: number; failoverMs: number }> = [];
      for (let i = 0; i < pieces.length; i++) {
        await streamer.write(pieces[i]!);
        await sleep(10);
        if (!kills.includes(i)) continue;
        // Kill while the stream is live and nearly caught up: acknowledged audio not final yet.
        // The second kill also waits for the first final, and a second more: acks do not wait
        // for decoding, so the finals trail them (the kill must land in a later segment), and
        // the channel state is stored by the spool's next commit after the final
        // (docs/scaling.md, "The shared spool").
        const ready = () =>
          streamer.stats().connected && streamer.stats().acknowledged >= streamer.stats().captured - 1600 && (i < 300 || finalizedEnd > 0);
        for (let w = 0; w < 6000 && !ready(); w++) await sleep(10);
        if (i >= 300) await sleep(1000);
        const owner = await ownerOf(streamer.stats().sessionId!);
        expect(owner, 'a node serves the session').not.toBeNull();
        const acknowledged = streamer.stats().acknowledged;
        const t0 = Date.now();
        await owner!.kill('SIGKILL');
        // Failover time: kill to the first new acknowledgement (from another node).
        await streamer.write(pieces[++i]!);
        for (let w = 0; w < 3000 && streamer.stats().acknowledged <= acknowledged; w++) await sleep(5);
        log.push({ node: owner!.name, acknowledged, finalizedEnd, failoverMs: Date.now() - t0 });
        void owner!.restart();
      }
      return { summary: await streamer.end(), log };
    }

    const clean = await run([]);
    expect(clean.summary.serverCapturedSamples).toBe(audio.length);
    const cleanWords = words(clean.summary.finals);
    expect(cleanWords.length).toBeGreaterThan(100);

    const faulted = await run([80, 380]);
    const s = faulted.summary;
    expect(faulted.log).toHaveLength(2);
    for (const k of faulted.log) expect(k.acknowledged).toBeGreaterThan(k.finalizedEnd);
    expect(faulted.log.some((k) => k.finalizedEnd > 0)).toBe(true); // the second kill came after a final
    expect(s.capturedSamples).toBe(audio.length);
    expect(s.acknowledgedSamples).toBe(audio.length);
    expect(s.serverCapturedSamples).toBe(audio.length);
    expect(s.gapSamples).toBe(0);
    const transcribedEnd = Math.max(...s.finals.map((f) => Number(f.endSample)));
    expect(transcribedEnd).toBe(audio.length);
    const segs = await db.query<{ idx: string; start_sample: string; end_sample: string }>(
      'SELECT s.idx, s.start_sample, s.end_sample FROM segments s JOIN rt_sessions r ON r.transcription_id = s.transcription_id WHERE r.id = $1 ORDER BY s.idx',
      [s.sessionId],
    );
    // Contiguous and once each: no segment written twice or by a fenced-off node.
    segs.rows.forEach((row, i) => expect(row.start_sample).toBe(i === 0 ? '0' : segs.rows[i - 1]!.end_sample));
    expect(words(s.finals)).toEqual(cleanWords);
    process.stderr.write(
      `failover: captured ${s.capturedSamples}, acknowledged ${s.acknowledgedSamples}, server-held ${s.serverCapturedSamples}, transcribed to ${transcribedEnd}; ` +
        `${s.reconnects} reconnects, ${s.resumes} resumes; kills: ${JSON.stringify(faulted.log)}\n`,
    );
  }, 400_000);

  it('`scribed stream` through HAProxy: the serving node killed twice, the CLI finishes with every sample held and the same words', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-failover-cli-'));
    const file = path.join(dir, 'call.ulaw');
    fs.writeFileSync(file, audio);
    const keyFile = path.join(dir, 'key');
    fs.writeFileSync(keyFile, `${accessKey}\n`, { mode: 0o600 });

    /** Run the CLI; at each mark (samples held by the server, and segments persisted), kill -9
     * the node serving its session. */
    async function streamCli(killAt: Array<{ samples: number; segments: number; afterMs?: number }>) {
      const out = fs.mkdtempSync(path.join(dir, 'out-'));
      const since = new Date().toISOString();
      const proc = spawn(
        process.execPath,
        // Manual segments, whose bounds do not depend on where a node died: the kill marks
        // below count them, and the words must match the run without faults exactly. (In vad
        // mode a failover replays from the shared spool with a fresh detector, and its segments,
        // and so a few words at their edges, can differ: docs/scaling.md.)
        [
          CLI,
          'stream',
          '--url',
          cluster.url,
          '--input',
          file,
          '--encoding',
          'mulaw_8000',
          '--access-key-file',
          keyFile,
          '--out',
          out,
          '--stream-id',
          randomUUID(),
          '--segment-commit-mode',
          'manual',
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stderr = '';
      proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      proc.stdout.resume();
      const exited = new Promise<number | null>((resolve) => proc.once('exit', resolve));
      const killed: string[] = [];
      let restarting: Promise<void> = Promise.resolve();
      for (const mark of killAt) {
        // The CLI is not held back by decoding (acks follow the spool), so the marks can come
        // close together: a node still starting (it may already have adopted the orphaned
        // session) is not killed again before it listens.
        await restarting;
        for (;;) {
          const r = await db.query<{ id: string; captured_samples: string; n: string }>(
            `SELECT s.id, s.captured_samples, (SELECT COUNT(*) FROM segments g WHERE g.transcription_id = s.transcription_id) AS n
               FROM rt_sessions s WHERE s.created_at >= $1 ORDER BY s.created_at DESC LIMIT 1`,
            [since],
          );
          const row = r.rows[0];
          if (row && Number(row.captured_samples) >= mark.samples && Number(row.n) >= mark.segments) {
            if (mark.afterMs) await sleep(mark.afterMs);
            const owner = await ownerOf(row.id);
            if (owner) {
              await owner.kill('SIGKILL');
              killed.push(owner.name);
              restarting = owner.restart();
              break;
            }
          }
          if (proc.exitCode !== null) break;
          await sleep(20);
        }
      }
      expect(await exited, stderr.slice(-2000)).toBe(0);
      await restarting;
      const finished = stderr
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, any>)
        .find((l) => l.msg === 'stream finished')!;
      const jsonl = fs
        .readFileSync(path.join(out, `${finished.sessionId}.jsonl`), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as FinalSegment);
      return { finished, finals: jsonl, killed };
    }

    const clean = await streamCli([]);
    // The file goes in as fast as it is acknowledged, ahead of the decoding; one kill in the
    // first segment, one a second after it is final, while the second segment (the rest of
    // the call) is being decoded. (Not at once: a crash between a final and the spool's
    // channel-state record starts the next segment from the initial mean, docs/scaling.md.)
    const faulted = await streamCli([
      { samples: 80_000, segments: 0 },
      { samples: 0, segments: 1, afterMs: 1000 },
    ]);
    expect(faulted.killed).toHaveLength(2);
    const f = faulted.finished;
    expect(f.capturedSamples).toBe(audio.length);
    expect(f.acknowledgedSamples).toBe(audio.length);
    expect(f.serverCapturedSamples).toBe(audio.length);
    expect(f.gapSamples).toBe(0);
    expect(f.resumes).toBeGreaterThanOrEqual(2);
    expect(Math.max(...faulted.finals.map((x) => Number(x.endSample)))).toBe(audio.length);
    expect(words(faulted.finals)).toEqual(words(clean.finals));
  }, 400_000);

  it('a resume sent straight to another node while the first is alive moves the session; the first writes nothing more', async () => {
    const [a, b] = cluster.nodes.filter((n) => n.proc !== null);
    const h = { accessKey, 'content-type': 'application/json' };
    const created = (await (
      await fetch(`${a!.base}/sound_clone/api/v1/stt/realtime/sessions`, {
        method: 'POST',
        headers: { ...h, 'Idempotency-Key': `move-${randomUUID()}` },
        body: JSON.stringify({ options: { inputEncoding: 'mulaw_8000' } }),
      })
    ).json()) as any;
    const { sessionId, streamUrl, transcriptionId } = created.data;
    const clip = clipAudio[0]!;
    const half = 16_000;
    const one = await StreamClient.connect(`${a!.base.replace('http', 'ws')}${streamUrl}`, { accessKey });
    await one.next('ready');
    for (let off = 0; off < half; off += 800) one.audio(1, off, clip.subarray(off, off + 800));
    await one.next('ack', (e) => e.capturedSamples === String(half), 30_000);
    expect((await ownerOf(sessionId))?.name).toBe(a!.name);

    // Straight to B, no balancer: B opens epoch 2 and fences A off.
    const resumed = (await (
      await fetch(`${b!.base}/sound_clone/api/v1/stt/realtime/sessions/${sessionId}/resume`, {
        method: 'POST',
        headers: h,
        body: JSON.stringify({ capturedSamples: String(half) }),
      })
    ).json()) as any;
    expect(resumed.data).toMatchObject({ epoch: 2, capturedSamples: String(half), missingSamples: '0' });
    // A's socket is still open: what it sends now can no longer be stored by A.
    one.audio(1, half, clip.subarray(half, half + 800));
    expect((await one.closed).code).toBe(4000);
    expect(one.ofType('error').map((e) => e.code)).toContain('SESSION_MOVED');

    const two = await StreamClient.connect(`${b!.base.replace('http', 'ws')}${streamUrl}`, { accessKey });
    const ready = await two.next('ready');
    expect(ready).toMatchObject({ epoch: 2, capturedSamples: String(half) });
    for (let off = half; off < clip.length; off += 800) two.audio(2, off - half, clip.subarray(off, Math.min(clip.length, off + 800)));
    two.control({ type: 'close' });
    expect(await two.next('closed', () => true, 60_000)).toMatchObject({ capturedSamples: String(clip.length) });
    expect((await ownerOf(sessionId))?.name ?? b!.name).toBe(b!.name);
    const transcript = (await (
      await fetch(`${b!.base}/sound_clone/api/v1/stt/transcriptions/${transcriptionId}/transcript?format=json`, { headers: h })
    ).json()) as any;
    const segs = transcript.segments as Array<{ startSample: string; endSample: string }>;
    expect(segs.length).toBeGreaterThan(0);
    segs.forEach((seg, i) => expect(seg.startSample).toBe(i === 0 ? '0' : segs[i - 1]!.endSample));
    expect(segs.at(-1)!.endSample).toBe(String(clip.length));
    expect(a!.logs.some((l) => l.sessionId === sessionId && /left this node/.test(l.msg ?? ''))).toBe(true);
  }, 120_000);
});
