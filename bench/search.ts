// Full-text search at scale (issue 32, docs/search.md): BENCH_SEGMENTS synthetic final
// segments (default 1,000,000) over ten accounts, built from a word list with Zipf-like word
// frequencies (a few words in most segments, most words rare), on each store: SQLite in a temp
// dir and PostgreSQL on a throwaway cluster (test/helpers/postgres-cluster.ts, fsync off).
// Reported per store:
// - search p95 (and p50, max) of one account's first page (20 hits) over a mix of queries:
//   a rare word, a common word, a phrase, OR, an exclusion, a filter by speaker and by time;
// - the index's cost per segment write: appendSegment (one transaction a segment, as a session
//   writes its finals) timed with the index, then with it dropped (SQLite: the FTS5 triggers;
//   PostgreSQL: the generated tsvector column and its GIN index), on the same database in the same run.
//
// Run: npx vite-node bench/search.ts   (BENCH_SEGMENTS=200000 for a quicker run; BENCH_STORES=sqlite)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseSearchRequest } from '../src/core/search-query.js';
import { openStore } from '../src/store/index.js';
import type { SqlStore } from '../src/store/sql-store.js';
import type { SqlValue } from '../src/store/sql/db.js';
import { freshDatabase, startPostgresCluster } from '../test/helpers/postgres-cluster.js';

const SEGMENTS = Number(process.env.BENCH_SEGMENTS ?? 1_000_000);
const STORES = (process.env.BENCH_STORES ?? 'sqlite,postgres').split(',');
const ACCOUNTS = 10;
const SEGMENTS_PER_TRANSCRIPTION = 100;
const QUERY_ROUNDS = Number(process.env.BENCH_QUERY_ROUNDS ?? 30);
const WRITES = Number(process.env.BENCH_WRITES ?? 2000);
const T0 = Date.parse('2026-01-01T00:00:00.000Z');

/** Deterministic PRNG (mulberry32), so every run builds the same segments. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const COMMON = (
  'the to and a i you it of that is in we my for this on have be with your can me so but not what ' +
  'are was do just about like if at know get all there will they our one please yes no thank okay ' +
  'account call help need want cancel subscription payment invoice card order number time today'
).split(' ');
const SYLLABLES = ['ka', 'lo', 'mi', 'ren', 'sto', 'var', 'de', 'pun', 'qui', 'zel', 'tor', 'bri', 'an', 'ex', 'ul', 'fo'];

/** COMMON first (the frequent words), then pseudo-words of two to four syllables. */
function wordList(n: number): string[] {
  const words = [...COMMON];
  const rnd = prng(7);
  const seen = new Set(words);
  while (words.length < n) {
    const k = 2 + Math.floor(rnd() * 3);
    let w = '';
    for (let i = 0; i < k; i++) w += SYLLABLES[Math.floor(rnd() * SYLLABLES.length)];
    if (seen.has(w)) continue;
    seen.add(w);
    words.push(w);
  }
  return words;
}

const WORDS = wordList(20_000);
/** Cumulative Zipf (s = 1) weights over WORDS, for picking by rank. */
const CUMULATIVE = (() => {
  const c: number[] = [];
  let sum = 0;
  for (let r = 0; r < WORDS.length; r++) c.push((sum += 1 / (r + 1)));
  return c.map((x) => x / sum);
})();

function pickWord(rnd: () => number): string {
  const x = rnd();
  let lo = 0;
  let hi = CUMULATIVE.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (CUMULATIVE[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return WORDS[lo]!;
}

function sentence(rnd: () => number): string {
  const n = 4 + Math.floor(rnd() * 14);
  const w: string[] = [];
  for (let i = 0; i < n; i++) w.push(pickWord(rnd));
  return w.join(' ');
}

const iso = (ms: number): string => new Date(ms).toISOString();
const tid = (n: number): string => `stt_bench${String(n).padStart(12, '0')}`;

async function build(store: SqlStore): Promise<void> {
  const db = store.db;
  for (let a = 0; a < ACCOUNTS; a++) {
    await store.createAccount({
      id: `acc_bench${a}`,
      name: `bench ${a}`,
      characters: 0n,
      accessKey: { id: `sk_bench${a}`, secretHash: Buffer.alloc(32, a) },
      apiToken: { id: `tok_bench${a}`, secretHash: Buffer.alloc(32, a + 100) },
      createdAt: iso(T0),
    });
  }
  const transcriptions = Math.ceil(SEGMENTS / SEGMENTS_PER_TRANSCRIPTION);
  const rnd = prng(42);
  const ROWS = 400;
  let done = 0;
  const started = performance.now();
  for (let t = 0; t < transcriptions; t++) {
    const createdMs = T0 + t * 60_000;
    await db.run(
      `INSERT INTO transcriptions (id, account_id, kind, title, status, sample_rate_hz, created_at, updated_at, speaker)
       VALUES (?, ?, 'batch', ?, 'COMPLETED', 8000, ?, ?, ?)`,
      [tid(t), `acc_bench${t % ACCOUNTS}`, `bench ${t}`, iso(createdMs), iso(createdMs), t % 2 === 0 ? 'agent' : 'customer'],
    );
  }
  // Multi-row inserts through the same trigger or index path as appendSegment, in batches.
  let batch: SqlValue[] = [];
  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    const rows = batch.length / 7;
    const values = Array.from({ length: rows }, () => '(?, ?, ?, ?, ?, ?, NULL, ?)').join(', ');
    const params = batch;
    batch = [];
    await db.tx((tx) =>
      tx.run(
        `INSERT INTO segments (transcription_id, idx, start_sample, end_sample, text, words_json, annotations_json, created_at) VALUES ${values}`,
        params,
      ),
    );
  };
  for (let i = 0; i < SEGMENTS; i++) {
    const t = Math.floor(i / SEGMENTS_PER_TRANSCRIPTION);
    const idx = i % SEGMENTS_PER_TRANSCRIPTION;
    batch.push(
      tid(t),
      BigInt(idx),
      BigInt(idx * 40_000),
      BigInt(idx * 40_000 + 32_000),
      sentence(rnd),
      '[]',
      iso(T0 + t * 60_000 + idx * 5_000),
    );
    if (batch.length / 7 >= ROWS) await flush();
    if (++done % 100_000 === 0) console.log(`  ${done} segments (${((performance.now() - started) / 1000).toFixed(0)} s)`);
  }
  await flush();
  console.log(`  built ${SEGMENTS} segments in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

const rare = WORDS[WORDS.length - 3]!;
const mid = WORDS[400]!;
const QUERIES: Record<string, string>[] = [
  { q: rare },
  { q: mid },
  { q: 'cancel' },
  { q: 'the' },
  { q: '"cancel my subscription"' },
  { q: '"thank you"' },
  { q: 'invoice OR payment' },
  { q: `${mid} OR ${WORDS[900]}` },
  { q: 'cancel -the' },
  { q: 'help', speaker: 'customer' },
  { q: 'order', from: iso(T0 + 1000 * 60_000), to: iso(T0 + 3000 * 60_000) },
  { q: 'card number' },
];

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function timeQueries(store: SqlStore): Promise<void> {
  const times: number[] = [];
  const perQuery = new Map<string, number[]>();
  for (let round = 0; round < QUERY_ROUNDS + 1; round++) {
    for (const params of QUERIES) {
      const r = parseSearchRequest(params);
      const t0 = performance.now();
      const hits = await store.searchSegments('acc_bench3', r.query, r.filters, 21);
      const ms = performance.now() - t0;
      if (round === 0) {
        if (params.q === rare || params.q === 'cancel') console.log(`  ${JSON.stringify(params)}: ${hits.length} hits on the first page`);
        continue; // warm-up
      }
      times.push(ms);
      const key = JSON.stringify(params);
      perQuery.set(key, [...(perQuery.get(key) ?? []), ms]);
    }
  }
  times.sort((a, b) => a - b);
  console.log(
    `  search over ${SEGMENTS} segments (${QUERIES.length} queries x ${QUERY_ROUNDS}): p50 ${percentile(times, 50).toFixed(1)} ms, p95 ${percentile(times, 95).toFixed(1)} ms, max ${times[times.length - 1]!.toFixed(1)} ms`,
  );
  for (const [k, v] of perQuery) {
    v.sort((a, b) => a - b);
    console.log(`    ${k}: p50 ${percentile(v, 50).toFixed(1)} ms, p95 ${percentile(v, 95).toFixed(1)} ms`);
  }
}

async function timeWrites(store: SqlStore, label: string, offset: number): Promise<number> {
  const rnd = prng(99 + offset);
  const t0 = performance.now();
  for (let i = 0; i < WRITES; i++) {
    await store.appendSegment({
      transcriptionId: tid(offset),
      index: 1000 + i,
      startSample: 0n,
      endSample: 1n,
      text: sentence(rnd),
      words: [],
      createdAt: iso(T0),
    });
  }
  const us = ((performance.now() - t0) * 1000) / WRITES;
  console.log(`  appendSegment ${label}: ${us.toFixed(0)} us a segment (${WRITES} writes)`);
  return us;
}

async function dropIndex(store: SqlStore): Promise<void> {
  if (store.engine === 'sqlite') {
    for (const t of ['segments_fts_insert', 'segments_fts_update', 'segments_fts_delete']) await store.db.run(`DROP TRIGGER ${t}`);
  } else {
    await store.db.run('ALTER TABLE segments DROP COLUMN search_vector');
  }
}

async function benchStore(engine: string, store: SqlStore): Promise<void> {
  console.log(`${engine}:`);
  await build(store);
  if (store.engine === 'postgres') await store.db.run('ANALYZE');
  await timeQueries(store);
  if (process.env.BENCH_EXPLAIN && store.engine === 'postgres') {
    // The plan of a phrase's first page as areas/search.ts asks it: its matches read through
    // the GIN index up to 5,000, and the page cut from them when they are fewer.
    const plan = await store.db.all<{ 'QUERY PLAN': string }>(
      `EXPLAIN ANALYZE WITH m AS MATERIALIZED (SELECT s.* FROM segments s WHERE s.search_vector @@ websearch_to_tsquery('simple', ?) LIMIT 5000)
       SELECT counted.matches, hit.* FROM (SELECT COUNT(*) AS matches FROM m) AS counted
         LEFT JOIN (SELECT s.transcription_id, s.idx, s.created_at FROM m AS s JOIN transcriptions t ON t.id = s.transcription_id
                     WHERE t.account_id = ? ORDER BY s.created_at DESC, s.transcription_id DESC, s.idx DESC LIMIT 21) AS hit ON true`,
      [process.env.BENCH_EXPLAIN, 'acc_bench3'],
    );
    for (const r of plan) console.log(`    ${r['QUERY PLAN']}`);
  }
  const withIndex = await timeWrites(store, 'with the index', 1);
  await dropIndex(store);
  const without = await timeWrites(store, 'without it', 2);
  console.log(`  index cost per segment write: ${(withIndex - without).toFixed(0)} us (x${(withIndex / without).toFixed(2)})`);
}

async function main(): Promise<void> {
  console.log(`search bench: ${SEGMENTS} segments, ${ACCOUNTS} accounts, ${WORDS.length} words; ${os.cpus().length} cores`);
  if (STORES.includes('sqlite')) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-bench-search-'));
    const store = await openStore({ dataDir: dir });
    try {
      await benchStore('sqlite', store);
    } finally {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  if (STORES.includes('postgres')) {
    const cluster = await startPostgresCluster();
    try {
      const pg = await freshDatabase(cluster.url);
      const store = await openStore({ dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-bench-search-pg-')), databaseUrl: pg.url });
      try {
        await benchStore('postgres', store);
      } finally {
        await store.close();
      }
    } finally {
      await cluster.stop();
    }
  }
}

await main();
