// The arrangement job's retries through HTTP against a real server: a job whose store write
// fails is run again after a doubling delay (SCRIBED_ARRANGEMENT_RETRY_BASE_MS) and ends
// ARRANGEMENT_READY once the fault clears; after its last attempt the project is
// ARRANGEMENT_FAILED, refuses quotes with a 47010 that says what to do, and a brief replace
// runs the job again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secondConnection, startService, type TestService } from '../helpers/service.js';
import { call } from '../helpers/api.js';
import type { SqlStore } from '../../src/store/sql-store.js';
import { ARRANGEMENT_MAX_ATTEMPTS, ARRANGEMENT_RETRY_ENV } from '../../src/music/arrangement-retry.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';

const API = '/sound_clone/api/v1/music';
const RETRY_BASE_MS = 300; // retries at +300, +600, +1200, +2400 ms
let svc: TestService;
let acct: ProvisionedAccount;
let other: SqlStore;

beforeAll(async () => {
  process.env[ARRANGEMENT_RETRY_ENV] = String(RETRY_BASE_MS);
  svc = await startService();
  acct = await svc.account(100_000n);
  // A second connection, as another process on the same store would have.
  other = await secondConnection(svc);
});
afterAll(async () => {
  delete process.env[ARRANGEMENT_RETRY_ENV];
  await other?.close();
  await svc?.stop();
});

/** Every write that would end an arrangement (ARRANGEMENT_READY) fails, until cleared. */
async function breakArrangementWrites() {
  if (other.engine === 'sqlite') {
    await other.db.run(`CREATE TRIGGER IF NOT EXISTS arrangement_fault BEFORE UPDATE OF status ON music_projects
             WHEN NEW.status = 'ARRANGEMENT_READY' BEGIN SELECT RAISE(ABORT, 'injected store fault'); END`);
    return;
  }
  await other.db.run(`CREATE OR REPLACE FUNCTION arrangement_fault() RETURNS trigger LANGUAGE plpgsql AS $$
                      BEGIN RAISE EXCEPTION 'injected store fault'; END $$`);
  await other.db.run(`CREATE OR REPLACE TRIGGER arrangement_fault BEFORE UPDATE OF status ON music_projects
                      FOR EACH ROW WHEN (NEW.status = 'ARRANGEMENT_READY') EXECUTE FUNCTION arrangement_fault()`);
}
const clearFault = () =>
  other.db.run(
    other.engine === 'sqlite' ? 'DROP TRIGGER IF EXISTS arrangement_fault' : 'DROP TRIGGER IF EXISTS arrangement_fault ON music_projects',
  );

const brief = {
  description: 'A calm piano piece',
  genre: 'classical',
  moods: ['calm', 'sad'],
  vocalLanguage: 'en',
  durationSec: 60,
  lyricsMode: 'AUTO',
  vocalStyle: 'instrumental',
};
const api = (method: string, p: string, body?: unknown) => call(svc.baseUrl, method, `${API}${p}`, { key: acct.accessKey, body });
const status = async (id: string) => (await api('GET', `/projects/${id}`)).json.data.projectStatus as string;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(id: string, want: string, ms = 15_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const s = await status(id);
    if (s === want) return;
    if (Date.now() > deadline) throw new Error(`project ${id} is ${s}, not ${want}`);
    await sleep(50);
  }
}

describe('arrangement job retries', () => {
  it('runs a failed job again in process and ends ARRANGEMENT_READY once the fault clears', async () => {
    await breakArrangementWrites();
    let id: string;
    try {
      id = (await api('POST', '/projects', brief)).json.data.projectId;
      await sleep(1000); // the first run and two retries fail
      expect(await status(id)).toBe('ARRANGEMENT_GENERATING');
    } finally {
      await clearFault();
    }
    await until(id, 'ARRANGEMENT_READY');
  });

  it(`after ${ARRANGEMENT_MAX_ATTEMPTS} failed runs marks the project ARRANGEMENT_FAILED; quotes get a 47010 saying to send the brief again, which recovers it`, async () => {
    await breakArrangementWrites();
    let id: string;
    try {
      id = (await api('POST', '/projects', brief)).json.data.projectId;
      await until(id, 'ARRANGEMENT_FAILED');
    } finally {
      await clearFault();
    }
    const q = await api('POST', `/projects/${id}/quotes`);
    expect(q.status).toBe(409);
    expect(q.json.code).toBe(47010);
    expect(q.json.message).toMatch(/ARRANGEMENT_FAILED.*send the brief again/);
    const put = await api('PUT', `/projects/${id}/brief`, brief);
    expect(put.status, put.text).toBe(200);
    expect(put.json.data).toMatchObject({ projectStatus: 'ARRANGEMENT_GENERATING', arrangementVersion: 2 });
    await until(id, 'ARRANGEMENT_READY');
  });
});
