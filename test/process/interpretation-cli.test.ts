// `scribed interpretation fail-target` as an operator runs it: a separate process on the
// data dir of a running server moves the target to FAILED_RELEASED and releases its
// reserved Characters; the server then quotes and accepts a retry.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, storeArgsFor, type TestService } from '../helpers/service.js';
import { call } from '../helpers/api.js';
import { CLI } from '../helpers/serve-process.js';

const run = promisify(execFile);
let svc: TestService;

beforeAll(async () => {
  svc = await startService();
});
afterAll(async () => {
  await svc?.stop();
});

describe('scribed interpretation fail-target', () => {
  it('fails a QUEUED target, releases its reservation, and the retry then works', async () => {
    const acct = await svc.account(1000n);
    const project = (
      await call(svc.baseUrl, 'POST', '/sound_clone/api/v1/interpretation/projects', {
        key: acct.accessKey,
        body: { title: 'Ops', sourceLanguage: 'en', targetLanguages: ['de'], source: { text: 'y'.repeat(250) } },
      })
    ).json.data;
    const target = project.targets[0];
    const balanceOf = async () =>
      (await call(svc.baseUrl, 'GET', '/sound_clone/api/v1/account', { key: acct.accessKey })).json.data.characters;
    expect(await balanceOf()).toBe('750');

    const { stdout } = await run(process.execPath, [
      CLI,
      'interpretation',
      'fail-target',
      '--target',
      target.targetId,
      ...(await storeArgsFor(svc.dataDir)),
    ]);
    expect(JSON.parse(stdout)).toMatchObject({
      targetId: target.targetId,
      state: 'FAILED_RELEASED',
      reservedCharacters: '0',
      projectId: project.projectId,
    });
    expect(await balanceOf()).toBe('1000');

    const base = `/sound_clone/api/v1/interpretation/projects/${project.projectId}/targets/${target.targetId}`;
    const plan = (await call(svc.baseUrl, 'GET', `${base}/retry-plan`, { key: acct.accessKey })).json.data;
    const retried = await call(svc.baseUrl, 'POST', `${base}/retry`, {
      key: acct.accessKey,
      headers: { 'Idempotency-Key': 'ops-retry-000000000001' },
      body: { nextReservationCycle: plan.nextReservationCycle, characters: plan.characters, rateVersion: plan.rateVersion },
    });
    expect(retried.json.data).toMatchObject({ state: 'QUEUED', reservationCycle: 2, reservedCharacters: '250' });
    expect(await balanceOf()).toBe('750');
  });

  it('exits non-zero for a target already failed, and for an unknown one', async () => {
    const acct = await svc.account(1000n);
    const project = (
      await call(svc.baseUrl, 'POST', '/sound_clone/api/v1/interpretation/projects', {
        key: acct.accessKey,
        body: { title: 'Ops', sourceLanguage: 'en', targetLanguages: ['de'] },
      })
    ).json.data;
    const args = ['interpretation', 'fail-target', '--target', project.targets[0].targetId, ...(await storeArgsFor(svc.dataDir))];
    await run(process.execPath, [CLI, ...args]);
    await expect(run(process.execPath, [CLI, ...args])).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining('FAILED_RELEASED'),
    });
    await expect(
      run(process.execPath, [CLI, 'interpretation', 'fail-target', '--target', 'it_missing', ...(await storeArgsFor(svc.dataDir))]),
    ).rejects.toMatchObject({
      stderr: expect.stringContaining('NOT_FOUND'),
    });
  });
});
