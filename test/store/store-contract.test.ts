// The Store contract, run against both engines: the embedded SQLite file and PostgreSQL (a
// fresh database per test on the run's throwaway cluster). Every behaviour the service relies
// on from its store is here; what only one engine has (the file, its permissions and its
// migrations) is in sqlite.test.ts and postgres.test.ts.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SqlStore } from '../../src/store/sql-store.js';
import type { CreateBatchJobInput, CreateSessionInput, SessionRecord, Store } from '../../src/store/store.js';
import { ENGINES, T0, addAccount, createHarness, sha, type StoreHarness } from './harness.js';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const STORE_MODULE = pathToFileURL(path.join(REPO_ROOT, 'src/store/index.ts')).href;
function sessionInput(accountId: string, key: string, n: string, requestHash = 'h1'): CreateSessionInput {
  return {
    accountId,
    idempotencyKey: key,
    requestHash,
    session: {
      id: `rts_${n}`,
      accountId,
      transcriptionId: `stt_${n}`,
      title: `title ${n}`,
      languageHint: 'en',
      options: { encoding: 'pcm_s16le', sampleRateHz: 16000 },
      createdAt: T0,
    },
    sampleRateHz: 16000,
  };
}

async function addSession(store: Store, accountId: string, n: string): Promise<SessionRecord> {
  const out = await store.createSession(sessionInput(accountId, `key-${n}`, n));
  if (out.kind !== 'created') throw new Error(`expected created, got ${out.kind}`);
  return out.session;
}

function ledger(s: SqlStore): Promise<Array<{ delta: bigint; balance_after: bigint; reason: string; session_id: string | null }>> {
  return s.db.all('SELECT delta, balance_after, reason, session_id FROM characters_ledger ORDER BY id');
}

function job(
  accountId: string,
  id: string,
  createdAt: string,
  charge = 3n,
  idempotency: CreateBatchJobInput['idempotency'] = null,
): CreateBatchJobInput {
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

describe.each(ENGINES)('Store contract on %s', (engine) => {
  let harness: StoreHarness;
  const openAt = (): Promise<SqlStore> => harness.open();

  beforeEach(async () => {
    harness = await createHarness(engine);
  });

  afterEach(async () => {
    await harness.dispose();
  });

  describe('accounts and Characters', () => {
    it('creates an account and finds its credentials by kind', async () => {
      const s = await openAt();
      await addAccount(s, 'acc_1', 42n);
      const acc = await s.getAccount('acc_1');
      expect(acc).toEqual({ id: 'acc_1', name: 'name of acc_1', characters: 42n, createdAt: T0 });
      const key = await s.findCredential('access_key', 'sk_acc_1');
      expect(key).toEqual({ id: 'sk_acc_1', accountId: 'acc_1', kind: 'access_key', secretHash: sha('sk-secret-acc_1') });
      expect((await s.findCredential('api_token', 'tok_acc_1'))?.accountId).toBe('acc_1');
      // Wrong kind and unknown id find nothing.
      expect(await s.findCredential('api_token', 'sk_acc_1')).toBeNull();
      expect(await s.findCredential('access_key', 'sk_nope')).toBeNull();
      expect(await s.getAccount('acc_nope')).toBeNull();
    });

    it('credits and debits exactly with bigints beyond 2^53', async () => {
      const s = await openAt();
      const big = 2n ** 53n + 1n;
      await addAccount(s, 'acc_1', big);
      expect(await s.creditCharacters('acc_1', 2n ** 60n, 'operator_credit', null)).toBe(big + 2n ** 60n);
      expect(await s.debitCharacters('acc_1', 3n, 'realtime_audio', 'ref-1')).toBe(big + 2n ** 60n - 3n);
      expect((await s.getAccount('acc_1'))?.characters).toBe(big + 2n ** 60n - 3n);
      const rows = await ledger(s);
      expect(rows.map((r) => r.delta)).toEqual([big, 2n ** 60n, -3n]);
      expect(rows.at(-1)?.balance_after).toBe(big + 2n ** 60n - 3n);
      // The ledger sums to the balance.
      expect(rows.reduce((sum, r) => sum + r.delta, 0n)).toBe(big + 2n ** 60n - 3n);
      // Past signed 64 bits is refused, not silently turned into a float.
      await expect(s.creditCharacters('acc_1', 2n ** 63n - 1n, 'x', null)).rejects.toThrow(RangeError);
      expect((await s.getAccount('acc_1'))?.characters).toBe(big + 2n ** 60n - 3n);
    });

    it('refuses a debit larger than the balance and leaves balance and ledger unchanged', async () => {
      const s = await openAt();
      await addAccount(s, 'acc_1', 10n);
      const session = await addSession(s, 'acc_1', 'a');
      const before = await ledger(s);
      expect(await s.debitCharacters('acc_1', 11n, 'realtime_audio', session.id, session.id)).toBeNull();
      expect((await s.getAccount('acc_1'))?.characters).toBe(10n);
      expect(await ledger(s)).toEqual(before);
      expect((await s.getSession(session.id, 'acc_1'))?.charactersCharged).toBe(0n);
      // Exactly the balance is fine and reaches zero, never below.
      expect(await s.debitCharacters('acc_1', 10n, 'realtime_audio', session.id, session.id)).toBe(0n);
      expect(await s.debitCharacters('acc_1', 1n, 'realtime_audio', null)).toBeNull();
    });

    it('raises the session charactersCharged in the same transaction as a debit', async () => {
      const s = await openAt();
      await addAccount(s, 'acc_1', 100n);
      await addAccount(s, 'acc_2', 100n);
      const session = await addSession(s, 'acc_1', 'a');
      await s.debitCharacters('acc_1', 7n, 'realtime_audio', session.id, session.id);
      await s.debitCharacters('acc_1', 5n, 'realtime_audio', session.id, session.id);
      expect((await s.getSession(session.id, 'acc_1'))?.charactersCharged).toBe(12n);
      expect((await ledger(s)).at(-1)).toMatchObject({ delta: -5n, session_id: session.id });
      // Another account's session cannot be charged; nothing is debited either.
      await expect(s.debitCharacters('acc_2', 1n, 'realtime_audio', null, session.id)).rejects.toThrow(/NOT_FOUND/);
      expect((await s.getAccount('acc_2'))?.characters).toBe(100n);
    });
  });

  describe('real-time sessions', () => {
    it('createSession creates the session, its History row and the idempotency record', async () => {
      const s = await openAt();
      await addAccount(s, 'acc_1');
      const out = await s.createSession(sessionInput('acc_1', 'k1', 'a'));
      expect(out.kind).toBe('created');
      if (out.kind !== 'created') return;
      expect(out.session).toMatchObject({
        id: 'rts_a',
        accountId: 'acc_1',
        transcriptionId: 'stt_a',
        state: 'RECORDING',
        epoch: 1,
        epochBases: [0n],
        capturedSamples: 0n,
        charactersCharged: 0n,
        nextSegmentIndex: 0,
        options: { encoding: 'pcm_s16le', sampleRateHz: 16000 },
        languageHint: 'en',
      });
      const t = await s.getTranscription('stt_a', 'acc_1');
      expect(t).toMatchObject({
        kind: 'realtime',
        sessionId: 'rts_a',
        status: 'RECORDING',
        sampleRateHz: 16000,
        title: 'title a',
        audioSamples: 0n,
      });
    });

    it('createSession replays the same request and reports a conflict for a different one', async () => {
      const s = await openAt();
      await addAccount(s, 'acc_1');
      const first = await s.createSession(sessionInput('acc_1', 'k1', 'a', 'hash-A'));
      // A retry carries fresh ids from the caller; the stored session wins.
      const again = await s.createSession(sessionInput('acc_1', 'k1', 'b', 'hash-A'));
      expect(again.kind).toBe('replayed');
      if (first.kind !== 'created' || again.kind !== 'replayed') return;
      expect(again.session).toEqual(first.session);
      expect(await s.createSession(sessionInput('acc_1', 'k1', 'c', 'hash-B'))).toEqual({ kind: 'conflict' });
      expect(await s.getSession('rts_b', 'acc_1')).toBeNull();
      expect(await s.getSession('rts_c', 'acc_1')).toBeNull();
    });

    it('scopes idempotency keys per account: same key, two accounts, two sessions', async () => {
      const s = await openAt();
      await addAccount(s, 'acc_1');
      await addAccount(s, 'acc_2');
      const a = await s.createSession(sessionInput('acc_1', 'shared', 'a', 'same'));
      const b = await s.createSession(sessionInput('acc_2', 'shared', 'b', 'same'));
      expect(a.kind).toBe('created');
      expect(b.kind).toBe('created');
      expect(await s.getSession('rts_a', 'acc_1')).not.toBeNull();
      expect(await s.getSession('rts_b', 'acc_2')).not.toBeNull();
    });

    it("hides another account's session and transcription", async () => {
      const s = await openAt();
      await addAccount(s, 'acc_1');
      await addAccount(s, 'acc_2');
      await addSession(s, 'acc_1', 'a');
      expect(await s.getSession('rts_a', 'acc_2')).toBeNull();
      expect(await s.getTranscription('stt_a', 'acc_2')).toBeNull();
      expect(await s.getSession('rts_a', 'acc_1')).not.toBeNull();
    });

    it('beginEpoch appends capturedSamples as the new base and increments the epoch', async () => {
      const s = await openAt();
      await addAccount(s, 'acc_1');
      const session = await addSession(s, 'acc_1', 'a');
      const big = 2n ** 40n + 7n;
      await s.saveProgress(session.id, { capturedSamples: 16_000n });
      const e2 = await s.beginEpoch(session.id);
      expect(e2.epoch).toBe(2);
      expect(e2.epochBases).toEqual([0n, 16_000n]);
      await s.saveProgress(session.id, { capturedSamples: big });
      const e3 = await s.beginEpoch(session.id);
      expect(e3.epoch).toBe(3);
      expect(e3.epochBases).toEqual([0n, 16_000n, big]);
      expect((await s.getSession(session.id, 'acc_1'))?.epochBases).toEqual([0n, 16_000n, big]);
      await expect(s.beginEpoch('rts_nope')).rejects.toThrow(/NOT_FOUND/);
    });

    it('saveProgress never lowers capturedSamples, charactersCharged or nextSegmentIndex', async () => {
      const s = await openAt();
      await addAccount(s, 'acc_1');
      const session = await addSession(s, 'acc_1', 'a');
      await s.saveProgress(session.id, { capturedSamples: 48_000n, charactersCharged: 30n, nextSegmentIndex: 4 });
      await s.saveProgress(session.id, { capturedSamples: 16_000n, charactersCharged: 10n, nextSegmentIndex: 2 });
      await s.saveProgress(session.id, { capturedSamples: 32_000n });
      let got = await s.getSession(session.id, 'acc_1');
      expect(got).toMatchObject({ capturedSamples: 48_000n, charactersCharged: 30n, nextSegmentIndex: 4 });
      await s.saveProgress(session.id, { capturedSamples: 2n ** 60n, charactersCharged: 31n, nextSegmentIndex: 5 });
      got = await s.getSession(session.id, 'acc_1');
      expect(got).toMatchObject({ capturedSamples: 2n ** 60n, charactersCharged: 31n, nextSegmentIndex: 5 });
    });

    it('setSessionState moves session and History row together; listSessionsByState finds it', async () => {
      const s = await openAt();
      await addAccount(s, 'acc_1');
      await addSession(s, 'acc_1', 'a');
      await addSession(s, 'acc_1', 'b');
      await s.setSessionState('rts_a', 'PAUSED', 'PAUSED');
      expect((await s.listSessionsByState('RECORDING')).map((x) => x.id)).toEqual(['rts_b']);
      expect((await s.listSessionsByState('PAUSED')).map((x) => x.id)).toEqual(['rts_a']);
      expect((await s.getTranscription('stt_a', 'acc_1'))?.status).toBe('PAUSED');
      await s.setSessionState('rts_a', 'CLOSED', 'PROCESSING');
      await s.setTranscriptionStatus('stt_a', 'COMPLETED', 96_000n);
      const t = await s.getTranscription('stt_a', 'acc_1');
      expect(t).toMatchObject({ status: 'COMPLETED', audioSamples: 96_000n });
      expect(t?.completedAt).not.toBeNull();
    });
  });

  describe('tickets', () => {
    async function withTicket(expiresAt = '2025-01-01T00:01:00.000Z'): Promise<SqlStore> {
      const s = await openAt();
      await addAccount(s, 'acc_1');
      await addSession(s, 'acc_1', 'a');
      await s.insertTicket({ id: 'tkt_1', accountId: 'acc_1', sessionId: 'rts_a', secretHash: sha('secret'), expiresAt, usedAt: null });
      return s;
    }
    const at = (iso: string) => new Date(iso);

    it('consumes a valid ticket once; a second consume is used', async () => {
      const s = await withTicket();
      const first = await s.consumeTicket('tkt_1', sha('secret'), at('2025-01-01T00:00:30.000Z'));
      expect(first.ok).toBe(true);
      if (!first.ok) return;
      expect(first.ticket).toMatchObject({ id: 'tkt_1', accountId: 'acc_1', sessionId: 'rts_a', usedAt: '2025-01-01T00:00:30.000Z' });
      expect(await s.consumeTicket('tkt_1', sha('secret'), at('2025-01-01T00:00:31.000Z'))).toEqual({ ok: false, reason: 'used' });
    });

    it('refuses an expired ticket (expiry instant included) and leaves it unused', async () => {
      const s = await withTicket();
      expect(await s.consumeTicket('tkt_1', sha('secret'), at('2025-01-01T00:01:00.000Z'))).toEqual({ ok: false, reason: 'expired' });
      expect(await s.consumeTicket('tkt_1', sha('secret'), at('2025-01-01T00:02:00.000Z'))).toEqual({ ok: false, reason: 'expired' });
    });

    it('refuses a forged secret without consuming the ticket', async () => {
      const s = await withTicket();
      const now = at('2025-01-01T00:00:10.000Z');
      expect(await s.consumeTicket('tkt_1', sha('guess'), now)).toEqual({ ok: false, reason: 'forged' });
      expect(await s.consumeTicket('tkt_1', Buffer.from('short'), now)).toEqual({ ok: false, reason: 'forged' });
      expect((await s.consumeTicket('tkt_1', sha('secret'), now)).ok).toBe(true);
    });

    it('reports an unknown ticket id', async () => {
      const s = await withTicket();
      expect(await s.consumeTicket('tkt_nope', sha('secret'), at(T0))).toEqual({ ok: false, reason: 'unknown' });
    });
  });

  describe('segments', () => {
    it('appendSegment is idempotent on index and listSegments returns index order', async () => {
      const s = await openAt();
      await addAccount(s, 'acc_1');
      await addSession(s, 'acc_1', 'a');
      const seg = (index: number, text: string) => ({
        transcriptionId: 'stt_a',
        index,
        startSample: BigInt(index) * 16_000n + 2n ** 54n,
        endSample: BigInt(index + 1) * 16_000n + 2n ** 54n,
        text,
        words: [{ word: text, startSample: String(index * 16_000), endSample: String(index * 16_000 + 800), confidence: null }],
        createdAt: T0,
      });
      await s.appendSegment(seg(2, 'two'));
      await s.appendSegment(seg(0, 'zero'));
      await s.appendSegment(seg(1, 'one'));
      await s.appendSegment(seg(1, 'one, re-sent with other text'));
      const list = await s.listSegments('stt_a');
      expect(list.map((x) => [x.index, x.text])).toEqual([
        [0, 'zero'],
        [1, 'one'],
        [2, 'two'],
      ]);
      expect(list[1]).toEqual(seg(1, 'one'));
      expect(await s.listSegments('stt_other')).toEqual([]);
    });
  });

  describe('persistence and several connections', () => {
    it('keeps everything across close and reopen', async () => {
      const a = await openAt();
      await addAccount(a, 'acc_1', 2n ** 62n);
      const session = await addSession(a, 'acc_1', 'a');
      await a.saveProgress(session.id, { capturedSamples: 123n, nextSegmentIndex: 1 });
      await a.beginEpoch(session.id);
      await a.appendSegment({ transcriptionId: 'stt_a', index: 0, startSample: 0n, endSample: 100n, text: 'hi', words: [], createdAt: T0 });
      await a.close();
      expect(a.isOpen()).toBe(false);
      await expect(a.getAccount('acc_1')).rejects.toThrow(/not open/);

      const b = await openAt();
      expect((await b.getAccount('acc_1'))?.characters).toBe(2n ** 62n);
      expect(await b.getSession('rts_a', 'acc_1')).toMatchObject({
        epoch: 2,
        epochBases: [0n, 123n],
        capturedSamples: 123n,
        nextSegmentIndex: 1,
      });
      expect((await b.listSegments('stt_a')).map((x) => x.text)).toEqual(['hi']);
    });

    it("a second store on the same database (the CLI, another node) sees the first one's writes, and the reverse", async () => {
      const server = await openAt();
      const cli = await openAt();
      await addAccount(server, 'acc_1', 10n);
      expect((await cli.getAccount('acc_1'))?.characters).toBe(10n);
      expect(await cli.creditCharacters('acc_1', 5n, 'operator_credit', null)).toBe(15n);
      expect((await server.getAccount('acc_1'))?.characters).toBe(15n);
      expect(await server.debitCharacters('acc_1', 15n, 'realtime_audio', null)).toBe(0n);
      expect((await cli.getAccount('acc_1'))?.characters).toBe(0n);
    });
  });

  describe('batch jobs and History', () => {
    let store: SqlStore;
    beforeEach(async () => {
      store = await openAt();
      await store.createAccount({
        id: 'acc_a',
        name: 'acc_a',
        characters: 10n,
        accessKey: { id: 'sk_acc_a', secretHash: sha('aacc_a') },
        apiToken: { id: 'tok_acc_a', secretHash: sha('tacc_a') },
        createdAt: T0,
      });
      await store.createAccount({
        id: 'acc_b',
        name: 'acc_b',
        characters: 10n,
        accessKey: { id: 'sk_acc_b', secretHash: sha('aacc_b') },
        apiToken: { id: 'tok_acc_b', secretHash: sha('tacc_b') },
        createdAt: T0,
      });
    });

    describe('batch jobs', () => {
      it('creates the History row and the job and debits in one step, with a ledger entry', async () => {
        const created = await store.createBatchJob(job('acc_a', 'stt_1', '2025-01-02T00:00:00.000Z'));
        expect(created).toMatchObject({
          kind: 'created',
          job: {
            transcriptionId: 'stt_1',
            state: 'QUEUED',
            charactersCharged: 3n,
            options: { removeDisfluencies: true },
            source: { format: 'wav', codec: 'pcm_s16le' },
          },
        });
        expect((await store.getAccount('acc_a'))!.characters).toBe(7n);
        expect(await store.getTranscription('stt_1', 'acc_a')).toMatchObject({
          kind: 'batch',
          status: 'PROCESSING',
          audioSamples: 40_000n,
          sessionId: null,
        });
        const row = (await store.db.one<{ delta: bigint; ref: string }>(
          "SELECT delta, reason, ref FROM characters_ledger WHERE reason = 'batch_audio'",
        ))!;
        expect(row).toMatchObject({ delta: -3n, ref: 'stt_1' });
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
        expect(await store.findBatchJobByIdempotencyKey('acc_a', key.key)).toMatchObject({
          requestHash: 'h1',
          job: { transcriptionId: 'stt_1' },
        });
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

    describe('failBatchJob', () => {
      const refunds = () =>
        store.db.all<{ delta: bigint; ref: string }>("SELECT delta, ref FROM characters_ledger WHERE reason = 'batch_refund' ORDER BY id");

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
        expect(await refunds()).toEqual([
          { delta: 3n, ref: 'stt_1' },
          { delta: 2n, ref: 'stt_2' },
        ]);
      });

      it('never touches a delivered (DONE) job', async () => {
        await store.createBatchJob(job('acc_a', 'stt_1', '2025-01-02T00:00:00.000Z', 3n));
        await store.setBatchJobState('stt_1', 'DONE');
        expect(await store.failBatchJob('stt_1', 'late failure')).toBe(false);
        expect(await store.getBatchJob('stt_1')).toMatchObject({ state: 'DONE', error: null });
        expect((await store.getTranscription('stt_1', 'acc_a'))!.status).toBe('COMPLETED');
        expect((await store.getAccount('acc_a'))!.characters).toBe(7n);
        expect(await refunds()).toEqual([]);
      });

      it('a free job (0 Characters) fails without a ledger entry', async () => {
        await store.createBatchJob(job('acc_a', 'stt_1', '2025-01-02T00:00:00.000Z', 0n));
        expect(await store.failBatchJob('stt_1', 'x')).toBe(true);
        expect(await refunds()).toEqual([]);
      });
    });

    describe('appendBatchSegment', () => {
      it("stores the segment and the job's channel state together; null keeps the state; a missing job writes nothing", async () => {
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

    describe('History list', () => {
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

    describe('segment annotations', () => {
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
  });

  // ---------------------------------------------------------------- two real processes

  const CHILD_SCRIPT = `
  import { createHash } from 'node:crypto';
  import { createInterface } from 'node:readline';
  const { openStore } = await import(process.env.STORE_MODULE);
  const [mode, count] = process.argv.slice(2);
  const store = await openStore(JSON.parse(process.env.STORE_SETTINGS));
  process.stdout.write('ready\\n');
  const rl = createInterface({ input: process.stdin });
  for await (const _ of rl) break;
  const results = [];
  for (let i = 0; i < Number(count); i++) {
    if (mode === 'consume') {
      const secret = createHash('sha256').update('secret-' + i).digest();
      const out = await store.consumeTicket('tkt_' + i, secret, new Date('2025-01-01T00:00:10.000Z'));
      results.push(out.ok ? 'ok' : out.reason);
    } else {
      const n = process.pid + '_' + i;
      const out = await store.createSession({
        accountId: 'acc_1', idempotencyKey: 'key-' + i, requestHash: 'h',
        session: { id: 'rts_' + n, accountId: 'acc_1', transcriptionId: 'stt_' + n, title: 't', languageHint: null, options: {}, createdAt: '${T0}' },
        sampleRateHz: 16000,
      });
      results.push(out.kind === 'conflict' ? 'conflict' : out.kind + ':' + out.session.id);
    }
  }
  await store.close();
  process.stdout.write(JSON.stringify(results) + '\\n');
  `;

  async function runRacers(mode: 'consume' | 'create', count: number): Promise<string[][]> {
    const script = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-racer-')), 'racer.mts');
    fs.writeFileSync(script, CHILD_SCRIPT);
    const children = [0, 1].map(() =>
      spawn(process.execPath, ['--import', 'tsx', script, mode, String(count)], {
        cwd: REPO_ROOT,
        env: { ...process.env, STORE_MODULE, STORE_SETTINGS: JSON.stringify(harness.settings) },
        stdio: ['pipe', 'pipe', 'pipe'],
      }),
    );
    const racers = children.map((child) => {
      let out = '';
      let err = '';
      let markReady: () => void = () => undefined;
      const ready = new Promise<void>((r) => (markReady = r));
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('ready\n')) markReady();
      });
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const done = new Promise<string>((resolve, reject) => {
        child.on('error', reject);
        child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`racer exited ${code}: ${err}`))));
      });
      // A racer that dies before "ready" must fail the test, not hang it.
      return { ready: Promise.race([ready, done.then(() => undefined)]), done };
    });
    // Release both only when both have the database open, so they really overlap.
    await Promise.all(racers.map((r) => r.ready));
    for (const c of children) c.stdin.end('go\n');
    const done = (await Promise.all(racers.map((r) => r.done))).map((out) => ({ lines: out.trim().split('\n') }));
    return done.map((d) => JSON.parse(d.lines.at(-1) ?? '[]') as string[]);
  }

  describe('two processes racing on one database', () => {
    it('each ticket is consumed exactly once across two processes', async () => {
      const count = 40;
      const s = await openAt();
      await addAccount(s, 'acc_1');
      await addSession(s, 'acc_1', 'a');
      for (let i = 0; i < count; i++) {
        await s.insertTicket({
          id: `tkt_${i}`,
          accountId: 'acc_1',
          sessionId: 'rts_a',
          secretHash: sha(`secret-${i}`),
          expiresAt: '2025-01-01T00:01:00.000Z',
          usedAt: null,
        });
      }
      const [a, b] = await runRacers('consume', count);
      for (let i = 0; i < count; i++) {
        const pair = [a?.[i], b?.[i]].sort();
        expect(pair).toEqual(['ok', 'used']);
      }
    });

    it('duplicate createSession from two processes yields one session per key', async () => {
      const count = 20;
      const s = await openAt();
      await addAccount(s, 'acc_1');
      const [a, b] = await runRacers('create', count);
      for (let i = 0; i < count; i++) {
        const pair = [a?.[i] ?? '', b?.[i] ?? ''];
        const kinds = pair.map((x) => x.split(':')[0]).sort();
        expect(kinds).toEqual(['created', 'replayed']);
        expect(pair[0]?.split(':')[1]).toBe(pair[1]?.split(':')[1]);
      }
      const n = await s.db.one<{ n: bigint }>('SELECT COUNT(*) AS n FROM rt_sessions');
      const t = await s.db.one<{ n: bigint }>('SELECT COUNT(*) AS n FROM transcriptions');
      expect(n?.n).toBe(BigInt(count));
      expect(t?.n).toBe(BigInt(count));
    });
  });
});
