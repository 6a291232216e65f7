// The search part of the Store contract (areas/search.ts over FTS5 and PostgreSQL's GIN
// index), run against both engines: phrases, OR, exclusions, filters, keyset pages, the
// account boundary, erased and redacted rows, and the migration's backfill.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseSearchQuery, highlightParts, type SearchFilters } from '../../src/core/search-query.js';
import path from 'node:path';
import { DATABASE_FILE } from '../../src/store/index.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { POSTGRES_MIGRATIONS } from '../../src/store/migrations-postgres.js';
import { appendSegment } from '../../src/store/areas/history.js';
import { createSession } from '../../src/store/areas/sessions.js';
import { PostgresDb } from '../../src/store/sql/postgres-db.js';
import { SqliteDb } from '../../src/store/sql/sqlite-db.js';
import { createAccount } from '../../src/store/areas/accounts.js';
import type { SqlStore } from '../../src/store/sql-store.js';
import type { CreateSessionInput, SearchHit } from '../../src/store/store.js';
import { ENGINES, T0, addAccount, createHarness, sha, type StoreHarness } from './harness.js';

function legInput(accountId: string, n: string, call: { callId: string; speaker: string } | null): CreateSessionInput {
  return {
    accountId,
    idempotencyKey: `skey-${n}`,
    requestHash: 'sh',
    session: { id: `rts_${n}`, accountId, transcriptionId: `stt_${n}`, title: `leg ${n}`, languageHint: null, options: {}, createdAt: T0 },
    sampleRateHz: 8000,
    call,
  };
}

const at = (s: number): string => new Date(Date.parse(T0) + s * 1000).toISOString();

/** Three calls of two legs each on acc_a, one on acc_b; [transcription, index, text, second stored]. */
const SEGMENTS: [string, number, string, number][] = [
  ['stt_c1a', 0, 'thank you for calling how can I help', 1],
  ['stt_c1c', 0, 'I want to cancel my subscription please', 2],
  ['stt_c1a', 1, 'I am sorry to hear that', 3],
  ['stt_c2a', 0, 'good morning how can I help', 10],
  ['stt_c2c', 0, 'my invoice is wrong this month', 11],
  ['stt_c2c', 1, 'please cancel the invoice', 12],
  ['stt_c3a', 0, 'hello you are through to billing', 20],
  ['stt_c3c', 0, 'can I upgrade my subscription', 21],
  ['stt_c3c', 1, 'and cancel my subscription to the other plan', 22],
  ['stt_b1', 0, 'I want to cancel my subscription today', 5],
];

describe.each(ENGINES)('full-text search in the store on %s', (engine) => {
  let h: StoreHarness;
  let store: SqlStore;

  const search = (q: string, filters: SearchFilters = {}, limit = 50, account = 'acc_a'): Promise<SearchHit[]> =>
    store.searchSegments(account, parseSearchQuery(q), filters, limit);
  const keys = (hits: SearchHit[]): string[] => hits.map((x) => `${x.transcriptionId}/${x.index}`);

  beforeEach(async () => {
    h = await createHarness(engine);
    store = await h.open();
    await addAccount(store, 'acc_a');
    await addAccount(store, 'acc_b');
    for (const n of [1, 2, 3]) {
      await store.createCall({
        call: { id: `call_${n}`, accountId: 'acc_a', externalId: `CA${n}`, title: `call ${n}`, createdAt: T0 },
        idempotency: { key: `k${n}`, requestHash: 'h' },
      });
      await store.createSession(legInput('acc_a', `c${n}a`, { callId: `call_${n}`, speaker: 'agent' }));
      await store.createSession(legInput('acc_a', `c${n}c`, { callId: `call_${n}`, speaker: 'customer' }));
    }
    await store.createSession(legInput('acc_b', 'b1', null));
    for (const [transcriptionId, index, text, s] of SEGMENTS) {
      await store.appendSegment({
        transcriptionId,
        index,
        startSample: BigInt(index * 16000 + 800),
        endSample: BigInt(index * 16000 + 8800),
        text,
        words: [],
        createdAt: at(s),
      });
    }
  });
  afterEach(async () => {
    await h.dispose();
  });

  it('finds a phrase with its transcription, call, speaker, times and highlighted words, newest first', async () => {
    const hits = await search('"cancel my subscription"');
    expect(keys(hits)).toEqual(['stt_c3c/1', 'stt_c1c/0']);
    expect(hits[1]).toMatchObject({
      transcriptionId: 'stt_c1c',
      index: 0,
      text: 'I want to cancel my subscription please',
      callId: 'call_1',
      speaker: 'customer',
      startSample: 800n,
      endSample: 8800n,
      sampleRateHz: 8000,
      createdAt: at(2),
    });
    expect(
      highlightParts(hits[1]!.marked)
        .filter((p) => p.match)
        .map((p) => p.text.trim())
        .join(' '),
    ).toBe('cancel my subscription');
    expect(
      highlightParts(hits[1]!.marked)
        .map((p) => p.text)
        .join(''),
    ).toBe(hits[1]!.text);
    // The words apart are not the phrase.
    expect(keys(await search('"subscription my"'))).toEqual([]);
  });

  it('ORs alternatives and excludes with -', async () => {
    expect(keys(await search('invoice OR upgrade'))).toEqual(['stt_c3c/0', 'stt_c2c/1', 'stt_c2c/0']);
    expect(keys(await search('cancel -subscription'))).toEqual(['stt_c2c/1']);
    expect(keys(await search('cancel -"my subscription"'))).toEqual(['stt_c2c/1']);
    expect(keys(await search('help OR hello -morning'))).toEqual(['stt_c3a/0', 'stt_c1a/0']);
    expect(keys(await search('CANCEL Subscription'))).toEqual(['stt_c3c/1', 'stt_c1c/0']);
  });

  it('filters by time range, call, external id, speaker and title', async () => {
    expect(keys(await search('cancel', { from: at(2), to: at(12) }))).toEqual(['stt_c1c/0']);
    expect(keys(await search('cancel', { callId: 'call_2' }))).toEqual(['stt_c2c/1']);
    expect(keys(await search('cancel', { externalId: 'CA3' }))).toEqual(['stt_c3c/1']);
    expect(keys(await search('can', { speaker: 'agent' }))).toEqual(['stt_c2a/0', 'stt_c1a/0']);
    expect(keys(await search('can', { speaker: 'customer' }))).toEqual(['stt_c3c/0']);
    expect(keys(await search('help', { title: 'call 2' }))).toEqual(['stt_c2a/0']);
    expect(keys(await search('help', { title: 'leg c1a' }))).toEqual(['stt_c1a/0']);
  });

  it('pages by keyset: every hit once, in order', async () => {
    const all = await search('my OR you OR I OR the');
    expect(all.length).toBeGreaterThan(5);
    const seen: string[] = [];
    let after: { createdAt: string; transcriptionId: string; index: number } | undefined;
    for (;;) {
      const page = await store.searchSegments('acc_a', parseSearchQuery('my OR you OR I OR the'), {}, 2, after);
      if (page.length === 0) break;
      seen.push(...keys(page));
      const last = page[page.length - 1]!;
      after = { createdAt: last.createdAt, transcriptionId: last.transcriptionId, index: last.index };
    }
    expect(seen).toEqual(keys(all));
  });

  it("never finds another account's segments", async () => {
    expect(keys(await search('"cancel my subscription" today'))).toEqual([]);
    expect(keys(await search('today', {}, 50, 'acc_b'))).toEqual(['stt_b1/0']);
    expect(keys(await search('subscription', {}, 50, 'acc_b'))).toEqual(['stt_b1/0']);
  });

  it('forgets erased segments and follows a changed text (deleted and updated in SQL: the store has no erase path yet)', async () => {
    expect(keys(await search('invoice'))).toEqual(['stt_c2c/1', 'stt_c2c/0']);
    await store.db.tx(async (tx) => {
      await tx.run('DELETE FROM segments WHERE transcription_id = ?', ['stt_c2c']);
    });
    expect(keys(await search('invoice'))).toEqual([]);
    expect(keys(await search('cancel'))).toEqual(['stt_c3c/1', 'stt_c1c/0']);
    await store.db.run('UPDATE segments SET text = ? WHERE transcription_id = ? AND idx = ?', [
      'I want to stop my [redacted] please',
      'stt_c1c',
      0n,
    ]);
    expect(keys(await search('cancel'))).toEqual(['stt_c3c/1']);
    expect(keys(await search('redacted'))).toEqual(['stt_c1c/0']);
    if (engine === 'sqlite') {
      const rows = await store.db.all<{ n: bigint }>('SELECT count(*) AS n FROM segments_fts_rows');
      expect(Number(rows[0]!.n)).toBe(SEGMENTS.length - 2);
    }
  });

  it('drops a re-sent final (first write wins) without indexing it twice', async () => {
    await store.appendSegment({
      transcriptionId: 'stt_c2c',
      index: 0,
      startSample: 0n,
      endSample: 1n,
      text: 'a different invoice',
      words: [],
      createdAt: at(99),
    });
    expect(keys(await search('invoice'))).toEqual(['stt_c2c/1', 'stt_c2c/0']);
    expect(keys(await search('different'))).toEqual([]);
  });

  it('indexes the segments stored before the search migration (backfill)', async () => {
    // A second database, migrated to the version before search, given a segment, then opened
    // by this build: the migration must index what was there.
    const old = await createHarness(engine);
    try {
      const file = path.join(old.settings.dataDir, DATABASE_FILE);
      const before =
        engine === 'sqlite'
          ? SqliteDb.open(
              file,
              MIGRATIONS.filter((m) => m.version < 12),
            )
          : await PostgresDb.open(
              { url: old.settings.databaseUrl! },
              POSTGRES_MIGRATIONS.filter((m) => m.version < 7),
            );
      await createAccount(before, {
        id: 'acc_a',
        name: 'a',
        characters: 0n,
        accessKey: { id: 'sk_acc_a', secretHash: sha('a') },
        apiToken: { id: 'tok_acc_a', secretHash: sha('t') },
        createdAt: T0,
      });
      await createSession(before, legInput('acc_a', 'old1', null));
      await appendSegment(before, {
        transcriptionId: 'stt_old1',
        index: 0,
        startSample: 0n,
        endSample: 80n,
        text: 'said before search existed',
        words: [],
        createdAt: T0,
      });
      await before.close();
      const reopened = await old.open();
      const hits = await reopened.searchSegments('acc_a', parseSearchQuery('"before search"'), {}, 10);
      expect(keys(hits)).toEqual(['stt_old1/0']);
    } finally {
      await old.dispose();
    }
  });
});
