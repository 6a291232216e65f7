// The search index forgets what the store erases (docs/search.md), on both engines,
// through the store's own erase paths rather than SQL: a History row erased by the account
// (eraseTranscription, eraseCall) and rows the retention sweeper erases once expired are not
// found any more, in the same transaction (no later index maintenance), while the rest still are.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import { parseSearchQuery } from '../../src/core/search-query.js';
import { RetentionSweeper } from '../../src/batch/retention-sweeper.js';
import type { SqlStore } from '../../src/store/sql-store.js';
import { ENGINES, T0, addAccount, createHarness, type StoreHarness } from './harness.js';

const DAY_MS = 24 * 3600_000;

describe.each(ENGINES)('search forgets erased and expired rows on %s', (engine) => {
  let h: StoreHarness;
  let store: SqlStore;

  const found = async (q: string, account = 'acc_a'): Promise<string[]> =>
    (await store.searchSegments(account, parseSearchQuery(q), {}, 50)).map((x) => `${x.transcriptionId}/${x.index}`);

  async function leg(
    accountId: string,
    n: string,
    createdAt: string,
    texts: string[],
    call: { callId: string; speaker: string } | null = null,
  ): Promise<void> {
    await store.createSession({
      accountId,
      idempotencyKey: `key-${n}`,
      requestHash: 'h',
      session: { id: `rts_${n}`, accountId, transcriptionId: `stt_${n}`, title: `row ${n}`, languageHint: null, options: {}, createdAt },
      sampleRateHz: 8000,
      call,
    });
    for (const [i, text] of texts.entries()) {
      await store.appendSegment({
        transcriptionId: `stt_${n}`,
        index: i,
        startSample: BigInt(i * 8000),
        endSample: BigInt(i * 8000 + 4000),
        text,
        words: [],
        createdAt,
      });
    }
    await store.setTranscriptionStatus(`stt_${n}`, 'COMPLETED', 8000n);
  }

  /** Entries the engine's index itself holds for a word, not only what a search joins back to
   * segments: SQLite's FTS5 table and its row map; PostgreSQL's index is on segments' own column. */
  const indexed = async (word: string): Promise<number> => {
    const row =
      engine === 'sqlite'
        ? await store.db.one<{ n: bigint }>(
            'SELECT COUNT(*) AS n FROM segments_fts JOIN segments_fts_rows r ON r.id = segments_fts.rowid WHERE segments_fts MATCH ?',
            [`"${word}"`],
          )
        : await store.db.one<{ n: bigint }>("SELECT COUNT(*) AS n FROM segments WHERE search_vector @@ to_tsquery('simple', ?)", [word]);
    return Number(row?.n ?? -1);
  };
  const rowMap = async (): Promise<number> =>
    engine === 'sqlite' ? Number((await store.db.one<{ n: bigint }>('SELECT COUNT(*) AS n FROM segments_fts_rows'))?.n) : 0;

  beforeEach(async () => {
    h = await createHarness(engine);
    store = await h.open();
    await addAccount(store, 'acc_a');
    await leg('acc_a', 'old', T0, ['please cancel my subscription', 'the blue invoice']);
    await leg('acc_a', 'new', new Date(Date.parse(T0) + 20 * DAY_MS).toISOString(), ['cancel my subscription today']);
    await store.createCall({
      call: { id: 'call_1', accountId: 'acc_a', externalId: null, title: 'call', createdAt: T0 },
      idempotency: { key: 'c1', requestHash: 'h' },
    });
    await leg('acc_a', 'agent', T0, ['orange juice refund'], { callId: 'call_1', speaker: 'agent' });
    await leg('acc_a', 'customer', T0, ['orange juice please'], { callId: 'call_1', speaker: 'customer' });
  });
  afterEach(async () => {
    await h.dispose();
  });

  it("does not find an erased transcription's phrases; the others still are", async () => {
    expect(await found('"cancel my subscription"')).toEqual(['stt_new/0', 'stt_old/0']);
    expect((await store.eraseTranscription('stt_old', 'acc_a')).kind).toBe('erased');
    expect(await found('"cancel my subscription"')).toEqual(['stt_new/0']);
    expect(await found('invoice')).toEqual([]);
    expect(await indexed('invoice')).toBe(0);
    expect(await indexed('cancel')).toBe(1);
    if (engine === 'sqlite') expect(await rowMap()).toBe(3);
  });

  it("does not find an erased call's legs", async () => {
    expect(await found('orange')).toHaveLength(2);
    expect((await store.eraseCall('call_1', 'acc_a')).kind).toBe('erased');
    expect(await found('orange')).toEqual([]);
    expect(await indexed('orange')).toBe(0);
    expect(await found('cancel')).toHaveLength(2);
  });

  it('does not find rows the retention sweeper erased once they expired', async () => {
    const now = new Date(Date.parse(T0) + 25 * DAY_MS);
    await store.setRetention('acc_a', { transcriptsDays: 10, recordingsDays: null }, now);
    const erased = await new RetentionSweeper({ store, log: pino({ level: 'silent' }), now: () => now }).sweep();
    expect(erased).toBe(3); // stt_old and the call's two legs; stt_new is 5 days old
    expect(await found('cancel')).toEqual(['stt_new/0']);
    expect(await found('invoice')).toEqual([]);
    expect(await found('orange')).toEqual([]);
    expect([await indexed('invoice'), await indexed('orange'), await indexed('cancel')]).toEqual([0, 0, 1]);
    if (engine === 'sqlite') expect(await rowMap()).toBe(1);
  });
});
