// The bound on a facade request's wait, against a real server and store: past the bound the
// job still pending is failed with the reason and its Characters given back; a client that
// hangs up on a facade request has its job cancelled and refunded the same way; a job that
// finished within the bound is answered.
import fs from 'node:fs';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../../helpers/service.js';
import { loadClips } from '../../helpers/audio.js';
import { awaitTranscriptions, WAIT_BOUND_REASON, WaitBoundPassed } from '../../../src/server/facades/batch-wait.js';

const clips = loadClips();
const clip = clips.find((c) => c.id === 'librivox-0870')!;
const TRANSCRIPTIONS = '/sound_clone/api/v1/stt/transcriptions';

let svc: TestService;

beforeAll(async () => {
  svc = await startService({ maxDecoders: 2 });
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

async function balance(key: string): Promise<bigint> {
  const res = await fetch(`${svc.baseUrl}/sound_clone/api/v1/account`, { headers: { accessKey: key } });
  return BigInt(((await res.json()) as { data: { characters: string } }).data.characters);
}

async function nativeUpload(key: string): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([fs.readFileSync(clip.wavFile)]), 'a.wav');
  const res = await fetch(`${svc.baseUrl}${TRANSCRIPTIONS}`, { method: 'POST', headers: { accessKey: key }, body: form });
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: { transcriptionId: string } }).data.transcriptionId;
}

async function until<T>(what: () => Promise<T>, ok: (v: T) => boolean, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await what();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('the wait bound of a facade request', () => {
  it('past the bound, the pending job is failed with the reason and refunded', async () => {
    const acct = await svc.account(100n);
    const id = await nativeUpload(acct.accessKey);
    expect(await balance(acct.accessKey)).toBe(92n);
    const err = await awaitTranscriptions(svc.service.store, acct.accountId, [id], { maxWaitMs: 0 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WaitBoundPassed);
    const job = await svc.service.store.getBatchJob(id);
    expect(job).toMatchObject({ state: 'FAILED', error: WAIT_BOUND_REASON });
    expect(await balance(acct.accessKey)).toBe(100n);
    // The runner working on it lets it go; nothing is charged again.
    await svc.service.batch.idle();
    expect(await balance(acct.accessKey)).toBe(100n);
    expect((await svc.service.store.getBatchJob(id))!.state).toBe('FAILED');
  }, 60_000);

  it('within the bound, the finished transcription is answered with its segments', async () => {
    const acct = await svc.account(100n);
    const id = await nativeUpload(acct.accessKey);
    const [done] = await awaitTranscriptions(svc.service.store, acct.accountId, [id], { maxWaitMs: 60_000 });
    expect(done!.job.state).toBe('DONE');
    expect(
      done!.segments
        .map((s) => s.text)
        .join(' ')
        .split(' ').length,
    ).toBeGreaterThan(10);
    expect(await balance(acct.accessKey)).toBe(92n);
  }, 60_000);

  it('a client that hangs up on POST /v1/listen has its job cancelled and refunded', async () => {
    const acct = await svc.account(100n);
    const body = fs.readFileSync(clip.wavFile);
    const req = http.request(`${svc.baseUrl}/v1/listen`, {
      method: 'POST',
      headers: { authorization: `Token ${acct.accessKey}`, 'content-type': 'audio/wav', 'content-length': body.length },
    });
    req.on('error', () => undefined);
    req.end(body);
    // Hang up once the job exists (charged), before it can finish.
    await until(
      () => balance(acct.accessKey),
      (b) => b === 92n,
    );
    req.destroy();
    const rows = await until(
      async () => (await svc.service.store.listTranscriptions(acct.accountId, 10)).map((r) => r.status),
      (s) => s.length === 1 && s[0] === 'FAILED',
    );
    expect(rows).toEqual(['FAILED']);
    expect(await balance(acct.accessKey)).toBe(100n);
  }, 60_000);
});
