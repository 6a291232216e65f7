// The store's batch jobs, History list and segment annotations, on a real SQLite file.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { CreateBatchJobInput } from '../../src/store/store.js';

const sha = (s: string): Buffer => crypto.createHash('sha256').update(s).digest();
let dir: string;
let store: SqliteStore;

async function addAccount(id: string, characters: bigint): Promise<void> {
  await store.createAccount({
    id,
    name: id,
    characters,
    accessKey: { id: `sk_${id}`, secretHash: sha(`a${id}`) },
    apiToken: { id: `tok_${id}`, secretHash: sha(`t${id}`) },
    createdAt: '2025-01-01T00:00:00.000Z',
  });
}

function job(accountId: string, id: string, createdAt: string, charge = 3n, idempotency: CreateBatchJobInput['idempotency'] = null): CreateBatchJobInput {
  return {
    job: {
      transcriptionId: id,
      accountId,
      options: { removeDisfluencies: true },
      notices: [{ code: 'X', message: 'y' }],
      audioFile: `${id}.s16le`,
      charactersCharged: charge,
      source: { format: 'wav', codec: 'pcm_s16le' },
      createdAt,
    },
    title: `t ${id}`,
    languageHint: null,
    sampleRateHz: 16000,
    audioSamples: 40_000n,
    idempotency,
  };
}

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-bstore-'));
  store = new SqliteStore({ path: path.join(dir, 'scribed.db') });
  await store.open();
  await addAccount('acc_a', 10n);
  await addAccount('acc_b', 10n);
});
afterEach(async () => {
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('SqliteStore: batch jobs', () => {
  it('creates the History row and the job and debits in one step, with a ledger entry', async () => {
    const created = await store.createBatchJob(job('acc_a', 'stt_1', '2025-01-02T00:00:00.000Z'));
    expect(created).toMatchObject({
      kind: 'created',
      job: { transcriptionId: 'stt_1', state: 'QUEUED', charactersCharged: 3n, options: { removeDisfluencies: true }, source: { format: 'wav', codec: 'pcm_s16le' } },
    });
    expect((await store.getAccount('acc_a'))!.characters).toBe(7n);
    expect(await store.getTranscription('stt_1', 'acc_a')).toMatchObject({ kind: 'batch', status: 'PROCESSING', audioSamples: 40_000n, sessionId: null });
    const db = new Database(path.join(dir, 'scribed.db'), { readonly: true });
    const row = db.prepare("SELECT delta, reason, ref FROM characters_ledger WHERE reason = 'batch_audio'").get() as { delta: number; ref: string };
    db.close();
    expect(row).toMatchObject({ delta: -3, ref: 'stt_1' });
  });

  it('changes nothing when the balance is short', async () => {
    expect(await store.createBatchJob(job('acc_a', 'stt_1', '2025-01-02T00:00:00.000Z', 11n))).toEqual({ kind: 'insufficient' });
    expect((await store.getAccount('acc_a'))!.characters).toBe(10n);
    expect(await store.getTranscription('stt_1', 'acc_a')).toBeNull();
    expect(await store.getBatchJob('stt_1')).toBeNull();
  });

  it('an Idempotency-Key used again replays its job with the same request, conflicts with another, and charges once', async () => {
    const T = '2025-01-02T00:00:00.000Z';
    const key = { key: 'upload-key-000001', requestHash: 'h1' };
    expect((await store.createBatchJob(job('acc_a', 'stt_1', T, 3n, key))).kind).toBe('created');
    const again = await store.createBatchJob(job('acc_a', 'stt_2', T, 3n, key));
    expect(again).toMatchObject({ kind: 'replayed', job: { transcriptionId: 'stt_1' } });
    expect(await store.createBatchJob(job('acc_a', 'stt_3', T, 3n, { ...key, requestHash: 'h2' }))).toEqual({ kind: 'conflict' });
    expect((await store.getAccount('acc_a'))!.characters).toBe(7n);
    expect(await store.getTranscription('stt_2', 'acc_a')).toBeNull();
    expect(await store.findBatchJobByIdempotencyKey('acc_a', key.key)).toMatchObject({ requestHash: 'h1', job: { transcriptionId: 'stt_1' } });
    // keys are per account
    expect(await store.findBatchJobByIdempotencyKey('acc_b', key.key)).toBeNull();
    expect((await store.createBatchJob(job('acc_b', 'stt_4', T, 3n, key))).kind).toBe('created');
  });

  it('a short balance stores nothing under the key, so the same key works after a top-up', async () => {
    const key = { key: 'upload-key-000002', requestHash: 'h1' };
    expect((await store.createBatchJob(job('acc_a', 'stt_1', '2025-01-02T00:00:00.000Z', 11n, key))).kind).toBe('insufficient');
    expect(await store.findBatchJobByIdempotencyKey('acc_a', key.key)).toBeNull();
    await store.creditCharacters('acc_a', 5n, 'top_up', 'test');
    expect((await store.createBatchJob(job('acc_a', 'stt_1', '2025-01-02T00:00:00.000Z', 11n, key))).kind).toBe('created');
  });

  it('moves job and History row together and lists unfinished jobs oldest first', async () => {
    await store.createBatchJob(job('acc_a', 'stt_2', '2025-01-03T00:00:00.000Z'));
    await store.createBatchJob(job('acc_a', 'stt_1', '2025-01-02T00:00:00.000Z'));
    await store.setBatchJobState('stt_2', 'RUNNING');
    expect((await store.listBatchJobs(['QUEUED', 'RUNNING'])).map((j) => j.transcriptionId)).toEqual(['stt_1', 'stt_2']);
    await store.setBatchJobState('stt_2', 'DONE');
    await store.setBatchJobState('stt_1', 'FAILED', 'ENGINE_FAILED: x');
    expect(await store.listBatchJobs(['QUEUED', 'RUNNING'])).toEqual([]);
    expect((await store.getTranscription('stt_2', 'acc_a'))!.status).toBe('COMPLETED');
    expect((await store.getTranscription('stt_2', 'acc_a'))!.completedAt).not.toBeNull();
    expect((await store.getTranscription('stt_1', 'acc_a'))!.status).toBe('FAILED');
    expect((await store.getBatchJob('stt_1'))!.error).toBe('ENGINE_FAILED: x');
  });
});

describe('SqliteStore: failBatchJob', () => {
  const refunds = (): Array<{ delta: number; ref: string }> => {
    const db = new Database(path.join(dir, 'scribed.db'), { readonly: true });
    const rows = db.prepare("SELECT delta, ref FROM characters_ledger WHERE reason = 'batch_refund'").all() as Array<{ delta: number; ref: string }>;
    db.close();
    return rows;
  };

  it('fails a QUEUED or RUNNING job and refunds it in the same step, once', async () => {
    await store.createBatchJob(job('acc_a', 'stt_1', '2025-01-02T00:00:00.000Z', 3n));
    await store.createBatchJob(job('acc_a', 'stt_2', '2025-01-02T00:00:01.000Z', 2n));
    await store.setBatchJobState('stt_2', 'RUNNING');
    expect((await store.getAccount('acc_a'))!.characters).toBe(5n);
    expect(await store.failBatchJob('stt_1', 'ENGINE_FAILED: x')).toBe(true);
    expect(await store.failBatchJob('stt_2', 'ENGINE_FAILED: y')).toBe(true);
    expect((await store.getAccount('acc_a'))!.characters).toBe(10n);
    expect(await store.getBatchJob('stt_2')).toMatchObject({ state: 'FAILED', error: 'ENGINE_FAILED: y' });
    expect((await store.getTranscription('stt_2', 'acc_a'))!.status).toBe('FAILED');
    // again: nothing changes, nothing is credited twice
    expect(await store.failBatchJob('stt_2', 'again')).toBe(false);
    expect((await store.getAccount('acc_a'))!.characters).toBe(10n);
    expect((await store.getBatchJob('stt_2'))!.error).toBe('ENGINE_FAILED: y');
    expect(refunds()).toEqual([
      { delta: 3, ref: 'stt_1' },
      { delta: 2, ref: 'stt_2' },
    ]);
  });

  it('never touches a delivered (DONE) job', async () => {
    await store.createBatchJob(job('acc_a', 'stt_1', '2025-01-02T00:00:00.000Z', 3n));
    await store.setBatchJobState('stt_1', 'DONE');
    expect(await store.failBatchJob('stt_1', 'late failure')).toBe(false);
    expect(await store.getBatchJob('stt_1')).toMatchObject({ state: 'DONE', error: null });
    expect((await store.getTranscription('stt_1', 'acc_a'))!.status).toBe('COMPLETED');
    expect((await store.getAccount('acc_a'))!.characters).toBe(7n);
    expect(refunds()).toEqual([]);
  });

  it('a free job (0 Characters) fails without a ledger entry', async () => {
    await store.createBatchJob(job('acc_a', 'stt_1', '2025-01-02T00:00:00.000Z', 0n));
    expect(await store.failBatchJob('stt_1', 'x')).toBe(true);
    expect(refunds()).toEqual([]);
  });
});

describe('SqliteStore: appendBatchSegment', () => {
  it('stores the segment and the job\'s channel state together; null keeps the state; a missing job writes nothing', async () => {
    await store.createBatchJob(job('acc_a', 'stt_1', '2025-01-02T00:00:00.000Z'));
    expect((await store.getBatchJob('stt_1'))!.channelState).toBeNull();
    const base = { transcriptionId: 'stt_1', startSample: 0n, endSample: 10n, words: [], createdAt: '2025-01-02T00:00:01.000Z' };
    await store.appendBatchSegment({ ...base, index: 0, text: 'one' }, [47.34, -0.125, 31.05]);
    expect((await store.getBatchJob('stt_1'))!.channelState).toEqual([47.34, -0.125, 31.05]);
    await store.appendBatchSegment({ ...base, index: 1, text: 'two' }, null);
    expect((await store.getBatchJob('stt_1'))!.channelState).toEqual([47.34, -0.125, 31.05]);
    expect((await store.listSegments('stt_1')).map((x) => x.text)).toEqual(['one', 'two']);
    await expect(store.appendBatchSegment({ ...base, transcriptionId: 'stt_nope', index: 0, text: 'x' }, [1])).rejects.toThrow();
    expect(await store.listSegments('stt_nope')).toEqual([]);
    await expect(store.appendBatchSegment({ ...base, index: 2, text: 'x' }, [Number.NaN])).rejects.toThrow(RangeError);
  });
});

describe('SqliteStore: History list', () => {
  it('pages newest first on (createdAt, id), ties broken by id, per account', async () => {
    const same = '2025-01-05T00:00:00.000Z';
    await store.createBatchJob(job('acc_a', 'stt_a', same, 0n));
    await store.createBatchJob(job('acc_a', 'stt_c', same, 0n));
    await store.createBatchJob(job('acc_a', 'stt_b', same, 0n));
    await store.createBatchJob(job('acc_a', 'stt_old', '2025-01-04T00:00:00.000Z', 0n));
    await store.createBatchJob(job('acc_b', 'stt_z', same, 0n));
    const all = (await store.listTranscriptions('acc_a', 10)).map((t) => t.id);
    expect(all).toEqual(['stt_c', 'stt_b', 'stt_a', 'stt_old']);
    const page1 = await store.listTranscriptions('acc_a', 2);
    const last = page1[1]!;
    const page2 = await store.listTranscriptions('acc_a', 2, { createdAt: last.createdAt, id: last.id });
    expect([...page1, ...page2].map((t) => t.id)).toEqual(all);
    expect((await store.listTranscriptions('acc_b', 10)).map((t) => t.id)).toEqual(['stt_z']);
  });
});

describe('SqliteStore: segment annotations', () => {
  it('stores and returns annotations, absent when not given', async () => {
    await store.createBatchJob(job('acc_a', 'stt_1', '2025-01-02T00:00:00.000Z'));
    const base = { transcriptionId: 'stt_1', startSample: 0n, endSample: 10n, words: [], createdAt: '2025-01-02T00:00:01.000Z' };
    await store.appendSegment({ ...base, index: 0, text: 'call me', annotations: { rawText: 'um call me', entities: [] } });
    await store.appendSegment({ ...base, index: 1, text: 'plain' });
    const [a, b] = await store.listSegments('stt_1');
    expect(a!.annotations).toEqual({ rawText: 'um call me', entities: [] });
    expect(b!.annotations).toBeUndefined();
  });
});
