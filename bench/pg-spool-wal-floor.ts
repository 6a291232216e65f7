// What a spool row costs in PostgreSQL's WAL, by layout (docs/benchmarks.md, "WAL per audio
// byte"): the same load as bench/pg-spool-wal.ts (N sessions, one row per session per window of
// BENCH_WINDOW_MS of 8 kHz mu-law, a progress save per session a second, a final per session
// every 5 s deleting what it covers), written with plain SQL in four layouts, to tell which part
// of the per-row overhead a design change could remove:
//   today     the spool_chunks row (text session id, frames as JSON, encoding), the session row
//             locked per window (the fence), a progress save on an indexed updated_at;
//   hot       today with progress saves HOT (fillfactor 70 on the session table, updated_at
//             moved on only once a minute: an indexed column that changes makes an update non-HOT);
//   no-lock   hot's rows with the fence compared in the INSERT's WHERE (no row lock, no
//             foreign key), progress saves HOT;
//   slim      no-lock with a bigint session key, frame sizes as bytes, no end_sample/encoding;
//   slim-copy slim written with COPY (PostgreSQL logs one multi-insert record per heap page
//             instead of a record per row; COPY has no WHERE: the fence would be a lock that
//             writes nothing, an advisory lock);
//   no-delete slim with consumed rows left for a partition drop instead of per-row deletes.
// Run: BENCH_STREAMS=40,200 BENCH_WINDOW_MS=50 npx vite-node bench/pg-spool-wal-floor.ts
import pg from 'pg';
import { freshDatabase, startPostgresCluster } from '../test/helpers/postgres-cluster.js';

const STREAMS = (process.env.BENCH_STREAMS ?? '40,200').split(',').map(Number);
const WINDOW_MS = Number(process.env.BENCH_WINDOW_MS ?? 50);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const LAYOUTS = (process.env.BENCH_LAYOUTS ?? 'today,hot,no-lock,slim,slim-copy,no-delete').split(',');
const perWindow = (8000 * WINDOW_MS) / 1000;
const perSecond = 1000 / WINDOW_MS;
const frames: number[] = [];
for (let left = perWindow; left > 0; left -= 160) frames.push(Math.min(160, left));
const framesBytes = Buffer.from(new Uint16Array(frames).buffer);

const SCHEMA: Record<string, string> = {
  today: `
    CREATE TABLE sess (id TEXT PRIMARY KEY, k BIGINT NOT NULL, owner TEXT, epoch BIGINT NOT NULL, captured BIGINT NOT NULL, updated_at TEXT NOT NULL);
    CREATE INDEX sess_updated ON sess(updated_at);
    CREATE TABLE chunks (session_id TEXT NOT NULL REFERENCES sess(id), start_sample BIGINT NOT NULL, end_sample BIGINT NOT NULL,
      frames_json TEXT NOT NULL, pcm BYTEA NOT NULL, encoding TEXT NOT NULL, PRIMARY KEY (session_id, start_sample));`,
  'no-lock': `
    CREATE TABLE sess (id TEXT PRIMARY KEY, k BIGINT NOT NULL, owner TEXT, epoch BIGINT NOT NULL, captured BIGINT NOT NULL, updated_at TEXT NOT NULL) WITH (fillfactor = 70);
    CREATE INDEX sess_updated ON sess(updated_at);
    CREATE TABLE chunks (session_id TEXT NOT NULL, start_sample BIGINT NOT NULL, end_sample BIGINT NOT NULL,
      frames_json TEXT NOT NULL, pcm BYTEA NOT NULL, encoding TEXT NOT NULL, PRIMARY KEY (session_id, start_sample));`,
};
SCHEMA.slim = `
    CREATE TABLE sess (id TEXT PRIMARY KEY, k BIGINT NOT NULL, owner TEXT, epoch BIGINT NOT NULL, captured BIGINT NOT NULL, updated_at TEXT NOT NULL) WITH (fillfactor = 70);
    CREATE INDEX sess_updated ON sess(updated_at);
    CREATE TABLE chunks (k BIGINT NOT NULL, start_sample BIGINT NOT NULL, frames BYTEA NOT NULL, pcm BYTEA NOT NULL, PRIMARY KEY (k, start_sample));`;
SCHEMA['no-delete'] = SCHEMA.slim;
SCHEMA.hot = SCHEMA.today!.replace('updated_at TEXT NOT NULL)', 'updated_at TEXT NOT NULL) WITH (fillfactor = 70)');
SCHEMA['slim-copy'] = SCHEMA.slim;

const marks = (n: number, width: number, casts: string[]) =>
  Array.from({ length: n }, (_, i) => `(${casts.map((c, j) => `CAST($${i * width + j + 1} AS ${c})`).join(', ')})`).join(', ');

async function run(admin: pg.Client, url: string, layout: string, n: number): Promise<void> {
  const db = await freshDatabase(url);
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  try {
    await c.query(SCHEMA[layout]!);
    const ids = Array.from({ length: n }, (_, i) => `rts_bench${String(i).padStart(14, '0')}`);
    for (const [i, id] of ids.entries()) await c.query('INSERT INTO sess VALUES ($1, $2, $3, 1, 0, $4)', [id, i + 1, 'node-a', '2026']);
    const slim = layout.startsWith('slim') || layout === 'no-delete';
    const pcm = Buffer.alloc(perWindow, 0x55);
    const windows = SECONDS * perSecond;
    await admin.query('CHECKPOINT');
    const lsn = async () => (await admin.query<{ l: string }>('SELECT pg_current_wal_lsn()::text AS l')).rows[0]!.l;
    const a = await lsn();
    for (let w = 0; w < windows; w++) {
      const start = BigInt(w * perWindow);
      await c.query('BEGIN');
      if (layout === 'today' || layout === 'hot')
        await c.query("SELECT id FROM sess WHERE owner = 'node-a' AND id = ANY($1) FOR NO KEY UPDATE", [ids]);
      for (const [i, id] of ids.entries()) {
        if ((w + i) % (5 * perSecond) !== 0 || w === 0 || layout === 'no-delete') continue;
        if (slim) await c.query('DELETE FROM chunks WHERE k = $1 AND start_sample < $2', [i + 1, start]);
        else await c.query('DELETE FROM chunks WHERE session_id = $1 AND end_sample <= $2', [id, start]);
      }
      for (let at = 0; at < n; at += 100) {
        const part = ids.slice(at, at + 100);
        if (layout === 'slim-copy') {
          const hex = (b: Buffer) => `\\\\x${b.toString('hex')}`;
          const text = part.map((id) => `${ids.indexOf(id) + 1}\t${start}\t${hex(framesBytes)}\t${hex(pcm)}\n`).join('');
          await copyIn(c, 'COPY chunks (k, start_sample, frames, pcm) FROM STDIN', Buffer.from(text));
        } else if (slim) {
          // The fence compared in the statement: the row is written only while the session names this node and epoch.
          await c.query(
            `INSERT INTO chunks (k, start_sample, frames, pcm) SELECT s.k, v.st, v.f, v.p FROM (VALUES ${marks(part.length, 4, ['TEXT', 'BIGINT', 'BYTEA', 'BYTEA'])}) AS v(id, st, f, p)
              JOIN sess s ON s.id = v.id AND s.owner = 'node-a' AND s.epoch = 1`,
            part.flatMap((id) => [id, start, framesBytes, pcm]),
          );
        } else {
          await c.query(
            `INSERT INTO chunks SELECT v.* FROM (VALUES ${marks(part.length, 6, ['TEXT', 'BIGINT', 'BIGINT', 'TEXT', 'BYTEA', 'TEXT'])}) AS v(a, b, e, f, p, enc)
              ${layout === 'today' || layout === 'hot' ? '' : "WHERE EXISTS (SELECT 1 FROM sess s WHERE s.id = v.a AND s.owner = 'node-a' AND s.epoch = 1)"}`,
            part.flatMap((id) => [id, start, start + BigInt(perWindow), JSON.stringify(frames), pcm, 'mulaw']),
          );
        }
      }
      const saving = ids.filter((_, i) => (w + i) % perSecond === 0);
      if (saving.length > 0) {
        // today: updated_at moves on every save (an index on it: not HOT); the others keep it unless a minute old.
        const upd =
          layout === 'today'
            ? 'CASE WHEN $3::text IS NOT NULL THEN $2 ELSE updated_at END'
            : 'CASE WHEN updated_at < $3 THEN $2 ELSE updated_at END';
        await c.query(`UPDATE sess SET captured = $1, updated_at = ${upd} WHERE id = ANY($4)`, [
          start,
          `2026-${String(w).padStart(8, '0')}`,
          `2026-${String(w - 60 * perSecond).padStart(8, '0')}`,
          saving,
        ]);
      }
      await c.query('COMMIT');
    }
    const b = await lsn();
    const wal = Number((await admin.query<{ d: string }>('SELECT pg_wal_lsn_diff($1, $2)::text AS d', [b, a])).rows[0]!.d);
    const audio = n * windows * perWindow;
    const kept = (
      await c.query<{ n: string; b: string }>('SELECT count(*)::text AS n, COALESCE(sum(length(pcm)), 0)::text AS b FROM chunks')
    ).rows[0]!;
    const expected = layout === 'no-delete' ? n * windows : null;
    if (Number(kept.b) !== Number(kept.n) * perWindow || (expected !== null && Number(kept.n) !== expected) || Number(kept.n) < n)
      throw new Error(`${layout}: ${kept.n} rows, ${kept.b} bytes kept`);
    console.log(
      `  ${layout.padEnd(9)} N=${String(n).padStart(4)}  ${(wal / audio).toFixed(3)} WAL B/audio B  ${((wal - audio) / (n * windows)).toFixed(0)} B overhead per row`,
    );
  } finally {
    await c.end();
    await db.drop().catch(() => undefined);
  }
}

/** COPY ... FROM STDIN with `data` (pg answers a copy-in request through its Query's hook). */
function copyIn(c: pg.Client, text: string, data: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const q = new pg.Query(text, [], (err: Error | undefined) => (err ? reject(err) : resolve()));
    (q as unknown as { handleCopyInResponse(con: unknown): void }).handleCopyInResponse = (con) => {
      const w = con as { sendCopyFromChunk(b: Buffer): void; endCopyFrom(): void };
      w.sendCopyFromChunk(data);
      w.endCopyFrom();
    };
    void c.query(q);
  });
}

const pgc = await startPostgresCluster();
const admin = new pg.Client({ connectionString: pgc.url });
await admin.connect();
try {
  for (const setting of ['fsync', 'synchronous_commit', 'full_page_writes']) await admin.query(`ALTER SYSTEM SET ${setting} = on`);
  await admin.query('SELECT pg_reload_conf()');
  console.log(`pg-spool-wal-floor: window ${WINDOW_MS} ms (${perWindow} B of mu-law a row), ${SECONDS} s per session`);
  for (const n of STREAMS) for (const layout of LAYOUTS) await run(admin, pgc.url, layout, n);
} finally {
  await admin.end();
  await pgc.stop();
}
