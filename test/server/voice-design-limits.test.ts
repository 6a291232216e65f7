// Voice design limits through HTTP against a real server: at most N espeak-ng processes at
// once (SCRIBED_VOICE_DESIGN_CONCURRENCY, default 2), the rest wait PENDING; and at most 20
// PENDING designs per account (429 VOICE_DESIGN_QUEUE_FULL).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secondConnection, startService, tempDir, type TestService } from '../helpers/service.js';
import { call } from '../helpers/api.js';
import { DESIGN_CONCURRENCY_ENV, MAX_PENDING_DESIGNS_PER_ACCOUNT } from '../../src/voices/design-limits.js';

const DESIGN = '/sound_clone/api/v1/voices/design';

// espeak-ng on PATH is wrapped by a script that logs its start and end around the real one
// (held 300 ms so runs that are allowed to overlap do; held longer while the hold file exists).
let runLog: string;
let holdFile: string;
let savedPath: string | undefined;
beforeAll(() => {
  const dir = tempDir('scribed-espeak-');
  runLog = path.join(dir, 'runs');
  holdFile = path.join(dir, 'hold');
  const real = execFileSync('sh', ['-c', 'command -v espeak-ng'], { encoding: 'utf8' }).trim();
  fs.writeFileSync(
    path.join(dir, 'espeak-ng'),
    `#!/bin/sh\nwhile [ -e '${holdFile}' ]; do sleep 0.05; done\necho start >> '${runLog}'\nsleep 0.3\n'${real}' "$@"\nrc=$?\necho end >> '${runLog}'\nexit $rc\n`,
    { mode: 0o755 },
  );
  savedPath = process.env.PATH;
  process.env.PATH = `${dir}:${savedPath}`;
});
afterAll(() => {
  process.env.PATH = savedPath;
  delete process.env[DESIGN_CONCURRENCY_ENV];
});

/** Most espeak-ng processes alive at once, from the wrapper's log. */
function peakRuns(): { peak: number; runs: number } {
  let alive = 0;
  let peak = 0;
  let runs = 0;
  for (const line of fs.readFileSync(runLog, 'utf8').split('\n')) {
    if (line === 'start') {
      runs++;
      peak = Math.max(peak, ++alive);
    } else if (line === 'end') alive--;
  }
  return { peak, runs };
}

async function designsAtOnce(svc: TestService, key: string, count: number) {
  const started = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      call(svc.baseUrl, 'POST', DESIGN, { key, body: { description: 'a calm woman', previewText: `Preview number ${i}.` } }),
    ),
  );
  for (const r of started) expect(r.status, r.text).toBe(200);
  const ids = started.map((r) => r.json.data.designId as string);
  const deadline = Date.now() + 30_000;
  for (;;) {
    const states = await Promise.all(
      ids.map(async (id) => (await call(svc.baseUrl, 'GET', `${DESIGN}/${id}`, { key })).json.data.status as string),
    );
    if (states.every((s) => s !== 'PENDING')) return states;
    if (Date.now() > deadline) throw new Error(`designs still pending: ${states.join(',')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('synthesis concurrency', () => {
  for (const [setting, expected] of [
    [undefined, 2],
    ['1', 1],
  ] as const) {
    it(`runs at most ${expected} espeak-ng at once (${DESIGN_CONCURRENCY_ENV}=${setting ?? 'unset'}); the rest wait and complete`, async () => {
      fs.writeFileSync(runLog, '');
      if (setting === undefined) delete process.env[DESIGN_CONCURRENCY_ENV];
      else process.env[DESIGN_CONCURRENCY_ENV] = setting;
      const svc = await startService();
      try {
        const acct = await svc.account();
        const states = await designsAtOnce(svc, acct.accessKey, 6);
        expect(states).toEqual(Array(6).fill('COMPLETED'));
        expect(peakRuns()).toEqual({ peak: expected, runs: 6 });
      } finally {
        await svc.stop();
      }
    });
  }

  it('refuses to start with an invalid setting', async () => {
    process.env[DESIGN_CONCURRENCY_ENV] = '0';
    try {
      await expect(startService()).rejects.toThrow(DESIGN_CONCURRENCY_ENV);
    } finally {
      delete process.env[DESIGN_CONCURRENCY_ENV];
    }
  });
});

describe('pending designs per account', () => {
  let svc: TestService;
  beforeAll(async () => {
    // Syntheses wait, so no design leaves PENDING while a test counts (on a shared store the
    // nodes' polls take up PENDING rows, the ones made below too).
    fs.writeFileSync(holdFile, '');
    svc = await startService();
  });
  afterAll(async () => {
    fs.rmSync(holdFile, { force: true });
    await svc?.stop();
  });

  let row = 0;
  /** PENDING rows whose synthesis has not started (what a long queue looks like). */
  async function pendingRows(accountId: string, count: number) {
    for (let i = 0; i < count; i++) {
      await svc.service.store.createVoiceDesign({
        id: `vd_queued${String(++row).padStart(12, '0')}`,
        accountId,
        description: 'x',
        previewText: 'y',
        callbackUrl: null,
        params: {},
        createdAt: new Date().toISOString(),
      });
    }
  }
  const start = (key: string) => call(svc.baseUrl, 'POST', DESIGN, { key, body: { description: 'a man', previewText: 'Hello.' } });

  it(`takes a design when the account holds ${MAX_PENDING_DESIGNS_PER_ACCOUNT - 1} PENDING ones`, async () => {
    const acct = await svc.account();
    await pendingRows(acct.accountId, MAX_PENDING_DESIGNS_PER_ACCOUNT - 1);
    const r = await start(acct.accessKey);
    expect(r.status, r.text).toBe(200);
  });

  it(`refuses one more when it holds ${MAX_PENDING_DESIGNS_PER_ACCOUNT}, with 429 VOICE_DESIGN_QUEUE_FULL, and stores nothing`, async () => {
    const acct = await svc.account();
    await pendingRows(acct.accountId, MAX_PENDING_DESIGNS_PER_ACCOUNT);
    // Counted as rows of the account, whatever their state: on a shared store the nodes' polls
    // take up PENDING rows (these ones too) at any time.
    const rows = async () => {
      const db = await secondConnection(svc);
      try {
        return Number(
          (await db.db.one<{ n: bigint }>('SELECT COUNT(*) AS n FROM voice_designs WHERE account_id = ?', [acct.accountId]))!.n,
        );
      } finally {
        await db.close();
      }
    };
    const before = await rows();
    expect(before).toBe(MAX_PENDING_DESIGNS_PER_ACCOUNT);
    const r = await start(acct.accessKey);
    expect(r.status).toBe(429);
    expect(r.json.message).toMatch(/^VOICE_DESIGN_QUEUE_FULL: /);
    expect(await rows()).toBe(before);
  });

  it("does not count another account's PENDING designs", async () => {
    const full = await svc.account();
    await pendingRows(full.accountId, MAX_PENDING_DESIGNS_PER_ACCOUNT);
    const other = await svc.account();
    expect((await start(other.accessKey)).status).toBe(200);
  });

  it('lets parallel starts take exactly the room left', async () => {
    const acct = await svc.account();
    await pendingRows(acct.accountId, MAX_PENDING_DESIGNS_PER_ACCOUNT - 3);
    const statuses = (await Promise.all(Array.from({ length: 8 }, () => start(acct.accessKey)))).map((r) => r.status).sort();
    expect(statuses).toEqual([200, 200, 200, 429, 429, 429, 429, 429]);
  });
});
