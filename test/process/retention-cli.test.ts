// `scribed retention` as an operator runs it: a separate process on the store of a running
// server sets an account's retention, which the store then holds; bad input is refused with
// a one-line message and status 2 (usage) or 1 (an unknown account).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secondConnection, startService, storeArgsFor, type TestService } from '../helpers/service.js';
import { CLI } from '../helpers/serve-process.js';

const run = promisify(execFile);
let svc: TestService;

beforeAll(async () => {
  svc = await startService();
});
afterAll(async () => {
  await svc?.stop();
});

async function retention(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, [CLI, 'retention', ...args, ...(await storeArgsFor(svc.dataDir))]);
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('scribed retention', () => {
  it('sets, keeps what is not given, clears with none, and prints the setting', async () => {
    const acct = await svc.account(0n);
    expect(JSON.parse((await retention(['--account', acct.accountId])).stdout)).toEqual({
      accountId: acct.accountId,
      transcriptsDays: null,
      recordingsDays: null,
    });
    expect(JSON.parse((await retention(['--account', acct.accountId, '--transcripts-days', '30'])).stdout)).toMatchObject({
      transcriptsDays: 30,
      recordingsDays: null,
    });
    expect(JSON.parse((await retention(['--account', acct.accountId, '--recordings-days', '7'])).stdout)).toMatchObject({
      transcriptsDays: 30,
      recordingsDays: 7,
    });
    const store = await secondConnection(svc);
    try {
      expect(await store.getRetention(acct.accountId)).toMatchObject({ transcriptsDays: 30, recordingsDays: 7 });
    } finally {
      await store.close();
    }
    expect(JSON.parse((await retention(['--account', acct.accountId, '--transcripts-days', 'none'])).stdout)).toMatchObject({
      transcriptsDays: null,
      recordingsDays: 7,
    });
  }, 60_000);

  it('refuses a bad number of days and an unknown account', async () => {
    const acct = await svc.account(0n);
    const bad = await retention(['--account', acct.accountId, '--transcripts-days', '0']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--transcripts-days must be a whole number of days/);
    const unknown = await retention(['--account', 'acc_nope']);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/NOT_FOUND/);
  }, 60_000);
});
