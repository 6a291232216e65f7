// Batch jobs run on whichever node is alive (docs/scaling.md, "Background work"), with real
// processes: three `scribed serve` on one PostgreSQL database. A batch job of about 48 s of
// speech (several segments) is uploaded to one node; once it has stored a segment, the node
// holding the job's claim is killed with SIGKILL. Another node must take the job up when the
// claim's lease runs out, continue after the last stored segment from the audio in the store,
// and complete it: COMPLETED, charged once (no refund), and the same segments (text and
// sample ranges) as an undisturbed job of the same audio on the same cluster.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import pg from 'pg';
import { loadClips } from '../helpers/audio.js';
import { startCluster, type Cluster, type ClusterNode } from '../helpers/cluster.js';
import { joined } from '../helpers/speech-fixtures.js';

const TRANSCRIPTIONS = '/sound_clone/api/v1/stt/transcriptions';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const clips = loadClips();
// The five clips, then the first three again, 1 s apart: about 48 s at 16 kHz.
const audioFile = joined(
  [...clips, ...clips.slice(0, 3)].map((c) => c.wavFile),
  1,
);

let cluster: Cluster;
let db: pg.Client;
let accessKey: string;

beforeAll(async () => {
  cluster = await startCluster({ adminUrl: inject('postgresUrl'), nodes: 3, maxDecoders: 1 });
  db = new pg.Client({ connectionString: cluster.dbUrl });
  await db.connect();
  accessKey = (await cluster.createAccount(100_000)).accessKey;
}, 120_000);

afterAll(async () => {
  await db?.end();
  await cluster?.stop();
});

type Json = any;

async function getJson(base: string, path: string): Promise<Json> {
  const res = await fetch(`${base}${path}`, { headers: { accessKey } });
  expect(res.status, `${path}: ${res.status}`).toBe(200);
  return res.json();
}

async function upload(node: ClusterNode): Promise<Json> {
  const form = new FormData();
  form.append('title', 'batch failover');
  form.append('file', new Blob([fs.readFileSync(audioFile)]), 'call.wav');
  const res = await fetch(`${node.base}${TRANSCRIPTIONS}`, { method: 'POST', headers: { accessKey }, body: form });
  const json = (await res.json()) as Json;
  expect(res.status, JSON.stringify(json)).toBe(200);
  return json.data;
}

const balance = async (base: string) => BigInt((await getJson(base, '/sound_clone/api/v1/account')).data.characters);
const transcript = (base: string, id: string) => getJson(base, `${TRANSCRIPTIONS}/${id}/transcript?format=json`);
const live = () => cluster.nodes.filter((n) => n.proc !== null);

/** The node holding the job's claim now (node ids name their pid). */
async function holderOf(id: string): Promise<{ node: ClusterNode | null; claimedBy: string | null }> {
  const r = await db.query<{ claimed_by: string | null }>('SELECT claimed_by FROM batch_jobs WHERE transcription_id = $1', [id]);
  const claimedBy = r.rows[0]?.claimed_by ?? null;
  if (!claimedBy) return { node: null, claimedBy };
  return { node: cluster.nodeById(claimedBy), claimedBy };
}

async function until<T>(what: string, ms: number, step: number, check: () => Promise<T | null | undefined | false>): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(step);
  }
}

const segmentsOf = (t: Json) =>
  t.segments.map((s: Json) => ({ id: s.id, startSample: s.startSample, endSample: s.endSample, text: s.text }));

describe('batch jobs across nodes (PostgreSQL, kill -9)', () => {
  it('kill -9 the node running a batch job: another node completes it after the lease, charged once, same segments', async () => {
    // An undisturbed job of the same audio on the same cluster: the reference.
    const [first] = live();
    const clean = await upload(first!);
    const cleanDone = await until('the undisturbed job', 120_000, 200, async () => {
      const t = await transcript(first!.base, clean.transcriptionId);
      return t.status === 'COMPLETED' && t;
    });
    const expected = segmentsOf(cleanDone);
    expect(expected.length).toBeGreaterThanOrEqual(4);

    // The job to disturb, uploaded to another node.
    const target = live()[1]!;
    const before = await balance(target.base);
    const job = await upload(target);
    const id = job.transcriptionId as string;
    const charged = BigInt(job.charactersCharged);
    expect(charged).toBeGreaterThan(40n);
    expect(await balance(target.base)).toBe(before - charged);

    // Wait for its first stored segment, then kill the node that holds the job.
    const stored = await until('a first stored segment', 60_000, 20, async () => {
      const t = await transcript(target.base, id);
      return t.segments.length > 0 && t.status === 'PROCESSING' && t;
    });
    const { node: holder, claimedBy } = await holderOf(id);
    expect(holder, `claimed by ${claimedBy}`).not.toBeNull();
    const t0 = Date.now();
    await holder!.kill('SIGKILL');
    const storedAtKill = (await transcript(live()[0]!.base, id)).segments.length;
    expect(storedAtKill).toBeLessThan(expected.length); // killed mid-job
    const other = live()[0]!;

    // Another node claims the job once the dead node's lease runs out, and completes it.
    const taken = await until('another node claiming the job', 60_000, 50, async () => {
      const h = await holderOf(id);
      return h.claimedBy !== null && h.claimedBy !== claimedBy && h;
    });
    const takeoverMs = Date.now() - t0;
    const done = await until('the job completing on another node', 120_000, 100, async () => {
      const t = await transcript(other.base, id);
      return t.status === 'COMPLETED' && t;
    });
    const completeMs = Date.now() - t0;

    expect(segmentsOf(done)).toEqual(expected);
    expect(done.text).toBe(cleanDone.text);
    // Charged once: the debit at upload, no refund.
    expect(before - (await balance(other.base))).toBe(charged);
    const ledger = await db.query<{ reason: string; delta: string }>(
      'SELECT reason, delta::text AS delta FROM characters_ledger WHERE ref = $1 ORDER BY id',
      [id],
    );
    expect(ledger.rows).toEqual([{ reason: 'batch_audio', delta: (-charged).toString() }]);
    const row = await db.query<{ state: string; error: string | null }>('SELECT state, error FROM batch_jobs WHERE transcription_id = $1', [
      id,
    ]);
    expect(row.rows[0]).toEqual({ state: 'DONE', error: null });
    // The node that completed it deleted the audio from the store (the undisturbed job's too).
    await until('batch audio deleted', 10_000, 100, async () => {
      const r = await db.query<{ n: string }>('SELECT COUNT(*)::text AS n FROM batch_audio WHERE audio_file IN ($1, $2)', [
        `${id}.s16le`,
        `${clean.transcriptionId}.s16le`,
      ]);
      return r.rows[0]!.n === '0';
    });
    const finisher = cluster.nodes.find((n) => n.logs.some((l) => l.msg === 'batch job done' && l.transcriptionId === id));
    expect(finisher?.name).not.toBe(holder!.name);
    // It took the job up after the stored segments (they were not recognized again).
    expect(finisher!.logs.some((l) => l.msg === 'batch job taken up again after its last stored segment' && l.transcriptionId === id)).toBe(
      true,
    );

    process.stderr.write(
      `batch failover: ${expected.length} segments, ${stored.segments.length} stored before the kill of ${holder!.name} (${storedAtKill} at the kill); ` +
        `kill -> claimed by another node ${takeoverMs} ms (${taken.node?.name ?? taken.claimedBy}), kill -> COMPLETED ${completeMs} ms (finished by ${finisher?.name})\n`,
    );
  }, 400_000);
});
