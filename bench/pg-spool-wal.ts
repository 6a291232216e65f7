// The shared spool's WAL per audio byte at its nominal window, whatever the machine's load
// (docs/benchmarks.md, "WAL per audio byte"). bench/pg-scale.ts measures a live node, whose
// windows stretch when the machine is busy (a 400 ms window writes one row where a quiet node
// writes eight), so its WAL figure depends on the load. This drives the store's group commit
// (store.writeSpools, as src/session/spool-committer.ts calls it) directly: N sessions, each
// window one chunk per session of BENCH_WINDOW_MS of 8 kHz mu-law speech (frames of 20 ms), a
// progress save per session once a second, a final (keepFrom with channel state) per session
// every 5 s, for BENCH_SECONDS of audio; WAL from pg_current_wal_lsn, with pg_waldump's
// per-record statistics (BENCH_WALDUMP=1). Durable settings as pg-scale (fsync,
// synchronous_commit, full_page_writes on). The debits and lease renewals of a live node are
// not in it (pg-scale has them).
//
// Run: npx vite-node bench/pg-spool-wal.ts
//      BENCH_STREAMS=40,200 BENCH_WINDOW_MS=50 BENCH_SECONDS=20 npx vite-node bench/pg-spool-wal.ts
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { mulawToPcm16 } from '../src/core/audio/encodings.js';
import { SqlStore } from '../src/store/sql-store.js';
import type { SpoolBatch } from '../src/store/store.js';
import { loadClips } from '../test/helpers/audio.js';
import { findPostgresBinDir, freshDatabase, startPostgresCluster } from '../test/helpers/postgres-cluster.js';

const execFileAsync = promisify(execFile);
const STREAMS = (process.env.BENCH_STREAMS ?? '40,200').split(',').map(Number);
const WINDOW_MS = Number(process.env.BENCH_WINDOW_MS ?? 50);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const WALDUMP = process.env.BENCH_WALDUMP === '1';
const T0 = '2026-01-01T00:00:00.000Z';

const speech = Buffer.concat(loadClips().map((c) => c.mulaw8k));
const samplesPerWindow = (8000 * WINDOW_MS) / 1000;
/** The window's frames: 20 ms (160 samples) each, the last one what is left. */
const frames: number[] = [];
for (let left = samplesPerWindow; left > 0; left -= 160) frames.push(Math.min(160, left));

function pcmOf(offset: number): Buffer {
  const out = Buffer.alloc(samplesPerWindow * 2);
  for (let i = 0; i < samplesPerWindow; i++) out.writeInt16LE(mulawToPcm16(speech[(offset + i) % speech.length]!), i * 2);
  return out;
}

/** pg_waldump --stats=record's record types, each as its combined size (records and full-page
 * images) per chunk row, largest first. */
function perRow(stats: string, rows: number): string {
  const types: Array<[string, number]> = [];
  for (const line of stats.split('\n')) {
    const m = /^(\S+\/\S+)\s+\d+\s+\(\s*[\d.]+\)\s+\d+\s+\(\s*[\d.]+\)\s+\d+\s+\(\s*[\d.]+\)\s+(\d+)/.exec(line);
    if (m && Number(m[2]) > 0) types.push([m[1]!, Number(m[2]) / rows]);
  }
  return types
    .sort((a, b) => b[1] - a[1])
    .map(([t, b]) => `${t} ${b.toFixed(0)}`)
    .join(', ');
}

const pgc = await startPostgresCluster();
const admin = new pg.Client({ connectionString: pgc.url });
await admin.connect();
for (const setting of ['fsync', 'synchronous_commit', 'full_page_writes']) await admin.query(`ALTER SYSTEM SET ${setting} = on`);
await admin.query('SELECT pg_reload_conf()');
const version = (await admin.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]!.v;
console.log(
  `pg-spool-wal: PostgreSQL ${version}, window ${WINDOW_MS} ms (${samplesPerWindow} samples, frames ${frames.join('+')}), ${SECONDS} s of audio per session`,
);

try {
  for (const n of STREAMS) {
    const db = await freshDatabase(pgc.url);
    const store = new SqlStore({ kind: 'postgres', url: db.url, poolSize: 4 });
    await store.open();
    try {
      await store.createAccount({
        id: 'acc_1',
        name: 'bench',
        characters: 1_000_000_000n,
        accessKey: { id: 'sk_1', secretHash: Buffer.alloc(32, 1) },
        apiToken: { id: 'tok_1', secretHash: Buffer.alloc(32, 2) },
        createdAt: T0,
      });
      const ids: string[] = [];
      for (let i = 0; i < n; i++) {
        const out = await store.createSession({
          accountId: 'acc_1',
          idempotencyKey: `k${i}`,
          requestHash: 'h',
          session: {
            id: `rts_bench${String(i).padStart(14, '0')}`,
            accountId: 'acc_1',
            transcriptionId: `stt_bench${i}`,
            title: 't',
            languageHint: null,
            options: {},
            createdAt: T0,
          },
          sampleRateHz: 8000,
        });
        if (out.kind !== 'created') throw new Error('no session');
        ids.push(out.session.id);
        await store.claimSession(out.session.id, 'acc_1', 'node-bench', 600_000, new Date());
      }
      const windows = Math.round((SECONDS * 1000) / WINDOW_MS);
      const perSecond = 1000 / WINDOW_MS;
      const lsn = async () => (await admin.query<{ l: string }>('SELECT pg_current_wal_lsn()::text AS l')).rows[0]!.l;
      await admin.query('CHECKPOINT'); // every run starts after a checkpoint: its full-page images alike
      const a = await lsn();
      const t = performance.now();
      for (let w = 0; w < windows; w++) {
        const start = BigInt(w * samplesPerWindow);
        const batches: SpoolBatch[] = ids.map((id, i) => {
          const ops: SpoolBatch['ops'][number][] = [
            { type: 'append', chunk: { startSample: start, frames, pcm: pcmOf(i * 997 + w * samplesPerWindow) } },
          ];
          // A final every 5 s, staggered over the sessions.
          if ((w + i) % (5 * perSecond) === 0 && w > 0) ops.unshift({ type: 'keepFrom', fromSample: start, channelState: [1.5, -2.25, 3] });
          const progress = (w + i) % perSecond === 0 ? { capturedSamples: start } : undefined;
          return { fence: { sessionId: id, epoch: 1, node: 'node-bench' }, ops, ...(progress ? { progress } : {}) };
        });
        const out = await store.writeSpools(batches);
        if (out.written.length !== n) throw new Error(`window ${w}: ${JSON.stringify(out).slice(0, 300)}`);
      }
      const ms = performance.now() - t;
      const b = await lsn();
      const wal = Number((await admin.query<{ d: string }>('SELECT pg_wal_lsn_diff($1, $2)::text AS d', [b, a])).rows[0]!.d);
      const audio = n * windows * samplesPerWindow; // mu-law: one byte a sample
      console.log(
        `  N=${String(n).padStart(4)}  windows ${windows}  WAL ${(wal / 1e6).toFixed(2)} MB  audio ${(audio / 1e6).toFixed(2)} MB  ` +
          `${(wal / audio).toFixed(3)} WAL B/audio B  ${((wal - audio) / (n * windows)).toFixed(0)} B overhead per chunk  (${(ms / windows).toFixed(1)} ms a commit)`,
      );
      if (WALDUMP) {
        const dataDir = (await admin.query<{ data_directory: string }>('SHOW data_directory')).rows[0]!.data_directory;
        const { stdout } = await execFileAsync(
          path.join(findPostgresBinDir()!, 'pg_waldump'),
          ['--stats=record', '-p', path.join(dataDir, 'pg_wal'), '-s', a, '-e', b],
          {
            maxBuffer: 16 << 20,
          },
        );
        console.log(
          stdout
            .split('\n')
            .filter((l) => /\S/.test(l) && !/\s0 \(\s*0\.00\)\s+0 \(\s*0\.00\)\s+0 \(\s*0\.00\)\s+0 \(\s*0\.00\)/.test(l))
            .join('\n'),
        );
        console.log(`  per row (B of WAL per ${samplesPerWindow}-byte chunk): ${perRow(stdout, n * windows)}`);
      }
    } finally {
      await store.close();
      await db.drop().catch(() => undefined);
    }
  }
} finally {
  await admin.end();
  await pgc.stop();
}
