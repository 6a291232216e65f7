// Job claims (areas/job-claims.ts) on both engines: a job row is held by one node at a time,
// nodes asking at once take different rows, a lease that runs out frees the row, renewal
// says which claims a node still holds.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SqlStore } from '../../src/store/sql-store.js';
import { ENGINES, addAccount, createHarness, type StoreHarness } from './harness.js';

const at = (ms: number) => new Date(Date.parse('2026-01-01T00:00:00Z') + ms);
const LEASE = 10_000;
const GENERATING = "status = 'ARRANGEMENT_GENERATING'";

describe.each(ENGINES)('job claims on %s', (engine) => {
  let harness: StoreHarness;
  let store: SqlStore;

  beforeEach(async () => {
    harness = await createHarness(engine);
    store = await harness.open();
    await addAccount(store, 'acc_1', 100n);
    for (let i = 0; i < 6; i++) {
      await store.createMusicProject({ id: `mup_${i}`, accountId: 'acc_1', brief: { i }, createdAt: `2025-01-01T00:00:0${i}.000Z` });
    }
  });
  afterEach(async () => {
    await harness.dispose();
  });

  it('claims oldest first, one node per row; a released or expired row is claimable again', async () => {
    expect(await store.claimNextJob('music_projects', GENERATING, 'node-a', LEASE, at(0))).toBe('mup_0');
    expect(await store.claimNextJob('music_projects', GENERATING, 'node-b', LEASE, at(0))).toBe('mup_1');
    expect(await store.claimJob({ table: 'music_projects', key: 'mup_0', node: 'node-b' }, LEASE, at(1000))).toBe(false);
    await store.releaseJob({ table: 'music_projects', key: 'mup_0', node: 'node-a' });
    expect(await store.claimJob({ table: 'music_projects', key: 'mup_0', node: 'node-b' }, LEASE, at(1000))).toBe(true);
    // node-b stops renewing mup_1: after the lease, node-c takes it (mup_2.. are newer)
    expect(await store.renewJobs('music_projects', 'node-b', ['mup_0'], LEASE, at(5000))).toEqual(['mup_0']);
    expect(await store.claimNextJob('music_projects', GENERATING, 'node-c', LEASE, at(12_000))).toBe('mup_1');
    expect(await store.renewJobs('music_projects', 'node-b', ['mup_0', 'mup_1'], LEASE, at(12_000))).toEqual(['mup_0']);
  });

  it('nodes claiming at the same instant never get the same row', async () => {
    const claims = await Promise.all(
      Array.from({ length: 8 }, (_, i) => store.claimNextJob('music_projects', GENERATING, `node-${i}`, LEASE, at(0))),
    );
    const got = claims.filter((c): c is string => c !== null);
    expect(got.sort()).toEqual(['mup_0', 'mup_1', 'mup_2', 'mup_3', 'mup_4', 'mup_5']);
    expect(claims.filter((c) => c === null)).toHaveLength(2);
  });
});
