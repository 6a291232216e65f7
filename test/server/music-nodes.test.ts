// Arrangement jobs on a shared store (docs/scaling.md, "Background work"): while a node holds a
// project's job, other nodes leave it alone; a project whose node stops before its job ran is
// taken up by another node (the stopping node lets its claims go; a node that dies loses them
// when its lease runs out, tested in test/store/job-claims-contract.test.ts). PostgreSQL only: on the embedded store
// there is one node.
import { afterAll, describe, expect, it } from 'vitest';
import { call } from '../helpers/api.js';
import { startService, tempDir, testStore, type TestService } from '../helpers/service.js';

const API = '/sound_clone/api/v1/music';
const brief = {
  description: 'A calm piano piece',
  genre: 'classical',
  moods: ['calm'],
  vocalLanguage: 'en',
  durationSec: 60,
  lyricsMode: 'AUTO',
  vocalStyle: 'instrumental',
};
const services: TestService[] = [];
afterAll(async () => {
  for (const s of services) await s.stop();
});

describe.skipIf(testStore() !== 'postgres')('arrangement jobs across nodes', () => {
  it('a job left by a node that stops is run by another node', async () => {
    const LEASE = 1000;
    // Node A holds the job for a minute before running it, then stops without running it.
    const a = await startService({ arrangementJobDelayMs: 60_000, sessionLeaseMs: LEASE });
    services.push(a);
    const acct = await a.account(100_000n);
    const created = await call(a.baseUrl, 'POST', `${API}/projects`, { key: acct.accessKey, body: brief });
    expect(created.status, created.text).toBe(200);
    const id = created.json.data.projectId as string;
    expect(created.json.data.projectStatus).toBe('ARRANGEMENT_GENERATING');

    // Node B on the same database, its own data dir.
    const b = await startService({ dataDir: tempDir(), databaseUrl: a.storeSettings.databaseUrl, sessionLeaseMs: LEASE });
    services.push(b);
    await new Promise((r) => setTimeout(r, 1500));
    // A still holds the claim (it renews it): B leaves the job alone.
    expect((await call(b.baseUrl, 'GET', `${API}/projects/${id}`, { key: acct.accessKey })).json.data.projectStatus).toBe(
      'ARRANGEMENT_GENERATING',
    );

    await a.stop();
    const t0 = Date.now();
    for (;;) {
      const s = (await call(b.baseUrl, 'GET', `${API}/projects/${id}`, { key: acct.accessKey })).json.data;
      if (s.projectStatus === 'ARRANGEMENT_READY') {
        expect(s.arrangement).not.toBeNull();
        break;
      }
      expect(Date.now() - t0, 'taken up within a lease and a poll').toBeLessThan(LEASE + 1000 + 3000);
      await new Promise((r) => setTimeout(r, 100));
    }
  }, 60_000);
});
