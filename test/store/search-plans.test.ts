// Both ways PostgreSQL answers a phrase (areas/search.ts): a phrase with few matches is cut
// from all of them, sorted; one with more matches than the first read takes (5,000) walks
// segments_newest. Either way the page is the newest matches, in order, with their keyset.
// Run on both engines (SQLite's FTS5 has one way).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseSearchQuery } from '../../src/core/search-query.js';
import type { SqlValue } from '../../src/store/sql/db.js';
import type { SqlStore } from '../../src/store/sql-store.js';
import { ENGINES, T0, addAccount, createHarness, type StoreHarness } from './harness.js';

const COMMON = 5_200;

describe.each(ENGINES)('phrase pages over few and many matches on %s', (engine) => {
  let h: StoreHarness;
  let store: SqlStore;

  beforeEach(async () => {
    h = await createHarness(engine);
    store = await h.open();
    await addAccount(store, 'acc_a');
    await store.createSession({
      accountId: 'acc_a',
      idempotencyKey: 'k',
      requestHash: 'h',
      session: { id: 'rts_1', accountId: 'acc_a', transcriptionId: 'stt_1', title: 'one', languageHint: null, options: {}, createdAt: T0 },
      sampleRateHz: 8000,
      call: null,
    });
    // COMMON segments say "thank you"; every 1000th also says "rare phrase here".
    for (let from = 0; from < COMMON; from += 400) {
      const params: SqlValue[] = [];
      const rows: string[] = [];
      for (let i = from; i < Math.min(COMMON, from + 400); i++) {
        rows.push("('stt_1', ?, 0, 1, ?, '[]', NULL, ?)");
        params.push(
          BigInt(i),
          `well thank you ${i % 1000 === 0 ? 'rare phrase here' : 'so much'}`,
          new Date(Date.parse(T0) + i * 1000).toISOString(),
        );
      }
      await store.db.run(
        `INSERT INTO segments (transcription_id, idx, start_sample, end_sample, text, words_json, annotations_json, created_at) VALUES ${rows.join(', ')}`,
        params,
      );
    }
  });
  afterEach(async () => {
    await h.dispose();
  });

  it('pages a phrase with more matches than the first read newest first, every hit once', async () => {
    const q = parseSearchQuery('"thank you"');
    const first = await store.searchSegments('acc_a', q, {}, 20);
    expect(first.map((x) => x.index)).toEqual(Array.from({ length: 20 }, (_, k) => COMMON - 1 - k));
    const last = first[first.length - 1]!;
    const second = await store.searchSegments('acc_a', q, {}, 20, {
      createdAt: last.createdAt,
      transcriptionId: last.transcriptionId,
      index: last.index,
    });
    expect(second.map((x) => x.index)).toEqual(Array.from({ length: 20 }, (_, k) => COMMON - 21 - k));
    expect(second[0]!.marked).not.toBe(second[0]!.text); // the matches are marked
  });

  it('pages a phrase with few matches newest first', async () => {
    const hits = await store.searchSegments('acc_a', parseSearchQuery('"rare phrase"'), {}, 3);
    expect(hits.map((x) => x.index)).toEqual([5000, 4000, 3000]);
    const rest = await store.searchSegments('acc_a', parseSearchQuery('"rare phrase"'), {}, 10, {
      createdAt: hits[2]!.createdAt,
      transcriptionId: 'stt_1',
      index: 3000,
    });
    expect(rest.map((x) => x.index)).toEqual([2000, 1000, 0]);
    expect(await store.searchSegments('acc_a', parseSearchQuery('"phrase rare"'), {}, 10)).toEqual([]);
  });
});
