// Erasure, retention and the audit trail through a real server, checked by reading the store
// directly: DELETE of a batch row, a real-time row and a call; another account's row reads as
// not found; a row still in progress is refused; the retention sweeper erases expired rows,
// also when two sweep at once; every download and delete leaves an audit row and log line
// with ids only.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { capturedLogger, secondConnection, startService, type TestService } from '../helpers/service.js';
import { loadClips } from '../helpers/audio.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';
import { RetentionSweeper } from '../../src/batch/retention-sweeper.js';
import { DATABASE_FILE } from '../../src/store/index.js';
import type { SqlStore } from '../../src/store/sql-store.js';

const API = '/sound_clone/api/v1';
const TRANSCRIPTIONS = `${API}/stt/transcriptions`;
const clip = loadClips()[0]!;

type Json = any;

let svc: TestService;
let alice: ProvisionedAccount;
let bob: ProvisionedAccount;
const logLines: string[] = [];

beforeAll(async () => {
  svc = await startService({ logger: capturedLogger('info', logLines) });
  alice = await svc.account(100_000n);
  bob = await svc.account(100_000n);
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

async function call(
  method: string,
  url: string,
  key: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: Json; text: string }> {
  const res = await fetch(`${svc.baseUrl}${url}`, {
    method,
    headers: { accessKey: key, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  let json: Json = null;
  try {
    json = JSON.parse(text);
  } catch {
    // a transcript download in another format
  }
  return { status: res.status, json, text };
}

async function batchRow(key: string): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([fs.readFileSync(clip.wavFile)]), 'clip.wav');
  const res = await fetch(`${svc.baseUrl}${TRANSCRIPTIONS}`, { method: 'POST', headers: { accessKey: key }, body: form });
  const json = (await res.json()) as Json;
  expect(res.status, JSON.stringify(json)).toBe(200);
  await svc.service.batch.idle();
  return json.data.transcriptionId as string;
}

async function withStore<T>(fn: (s: SqlStore) => Promise<T>): Promise<T> {
  const s = await secondConnection(svc);
  try {
    return await fn(s);
  } finally {
    await s.close();
  }
}

/** Rows naming `transcriptionId` in every table that holds a row's words or audio. */
async function rowsOf(transcriptionId: string): Promise<Record<string, number>> {
  return withStore(async (s) => {
    const count = async (sql: string) => Number((await s.db.one<{ n: bigint | string }>(sql, [transcriptionId]))!.n);
    return {
      transcriptions: await count('SELECT COUNT(*) AS n FROM transcriptions WHERE id = ?'),
      segments: await count('SELECT COUNT(*) AS n FROM segments WHERE transcription_id = ?'),
      batchJobs: await count('SELECT COUNT(*) AS n FROM batch_jobs WHERE transcription_id = ?'),
      batchAudio: await count("SELECT COUNT(*) AS n FROM batch_audio WHERE audio_file LIKE ? || '%'"),
      sessions: await count('SELECT COUNT(*) AS n FROM rt_sessions WHERE transcription_id = ?'),
    };
  });
}

const GONE = { transcriptions: 0, segments: 0, batchJobs: 0, batchAudio: 0, sessions: 0 };

describe('DELETE .../stt/transcriptions/{id}', () => {
  it('erases a batch row with its segments and job; another account reads it as not found; audit rows carry ids only', async () => {
    const id = await batchRow(alice.accessKey);
    const before = await rowsOf(id);
    expect(before.transcriptions).toBe(1);
    expect(before.segments).toBeGreaterThan(0);
    expect(before.batchJobs).toBe(1);

    const foreign = await call('DELETE', `${TRANSCRIPTIONS}/${id}`, bob.accessKey);
    expect(foreign.status).toBe(404);
    expect(foreign.json).toMatchObject({ code: -1, message: expect.stringMatching(/^NOT_FOUND/) });
    expect((await rowsOf(id)).transcriptions).toBe(1);

    expect((await call('GET', `${TRANSCRIPTIONS}/${id}/transcript?format=txt`, alice.accessKey)).status).toBe(200);
    const del = await call('DELETE', `${TRANSCRIPTIONS}/${id}`, alice.accessKey);
    expect(del.status).toBe(200);
    expect(del.json).toEqual({ code: 1, message: 'success', data: { transcriptionId: id, deleted: true } });
    expect(await rowsOf(id)).toEqual(GONE);
    expect((await call('GET', `${TRANSCRIPTIONS}/${id}`, alice.accessKey)).status).toBe(404);
    expect((await call('GET', `${TRANSCRIPTIONS}/${id}/transcript`, alice.accessKey)).status).toBe(404);
    expect((await call('DELETE', `${TRANSCRIPTIONS}/${id}`, alice.accessKey)).status).toBe(404);

    const [, keyId, secret] = /^sk_([0-9a-f]{16})_(.+)$/.exec(alice.accessKey)!;
    const audit = await withStore((s) => s.listAudit(alice.accountId, 10));
    const mine = audit.filter((e) => e.subjectId === id);
    expect(mine.map((e) => e.action).sort()).toEqual(['transcript.download', 'transcription.delete']);
    for (const e of mine) expect(e.credentialId).toBe(keyId);
    expect(JSON.stringify(audit)).not.toContain(secret!);
    const lines = logLines.filter((l) => l.includes('"audit"') && l.includes(id));
    expect(lines.length).toBe(2);
    for (const l of lines) expect(l).not.toContain(secret!);
  }, 120_000);

  it('refuses a real-time row still recording (409), then erases it with its session once closed', async () => {
    const created = await call(
      'POST',
      `${API}/stt/realtime/sessions`,
      alice.accessKey,
      { title: 'erase me' },
      { 'Idempotency-Key': `erase-${randomUUID()}` },
    );
    expect(created.status).toBe(200);
    const { sessionId, transcriptionId } = created.json.data as { sessionId: string; transcriptionId: string };
    const busy = await call('DELETE', `${TRANSCRIPTIONS}/${transcriptionId}`, alice.accessKey);
    expect(busy.status).toBe(409);
    expect(busy.json.message).toMatch(/^TRANSCRIPTION_IN_PROGRESS/);
    expect((await rowsOf(transcriptionId)).sessions).toBe(1);

    expect((await call('POST', `${API}/stt/realtime/sessions/${sessionId}/close`, alice.accessKey)).status).toBeLessThan(300);
    await expect
      .poll(async () => (await call('GET', `${TRANSCRIPTIONS}/${transcriptionId}`, alice.accessKey)).json.data.status, { timeout: 20_000 })
      .toBe('COMPLETED');
    expect((await call('DELETE', `${TRANSCRIPTIONS}/${transcriptionId}`, alice.accessKey)).status).toBe(200);
    expect(await rowsOf(transcriptionId)).toEqual(GONE);
    const left = await withStore(async (s) => ({
      keys: Number(
        (await s.db.one<{ n: bigint | string }>('SELECT COUNT(*) AS n FROM idempotency_keys WHERE session_id = ?', [sessionId]))!.n,
      ),
      tickets: Number((await s.db.one<{ n: bigint | string }>('SELECT COUNT(*) AS n FROM tickets WHERE session_id = ?', [sessionId]))!.n),
    }));
    expect(left).toEqual({ keys: 0, tickets: 0 });
    expect((await call('GET', `${API}/stt/realtime/sessions/${sessionId}`, alice.accessKey)).status).toBe(404);
  }, 60_000);
});

describe('what a delete leaves in the SQLite file', () => {
  it.runIf(process.env.SCRIBED_TEST_STORE !== 'postgres')(
    'secure_delete is on, and after a checkpoint the file no longer holds an erased transcript',
    async () => {
      const id = await batchRow(alice.accessKey);
      const text = (await withStore((s) => s.listSegments(id))).map((seg) => seg.text).join(' ');
      const phrase = text
        .split(' ')
        .filter((w) => w.length > 0)
        .slice(0, 4)
        .join(' ');
      expect(phrase.length).toBeGreaterThan(8);
      expect((await withStore((s) => s.db.one<{ secure_delete: bigint }>('PRAGMA secure_delete')))?.secure_delete).toBe(1n);
      expect((await call('DELETE', `${TRANSCRIPTIONS}/${id}`, alice.accessKey)).status).toBe(200);
      const db = new Database(path.join(svc.dataDir, DATABASE_FILE));
      try {
        db.pragma('wal_checkpoint(TRUNCATE)');
      } finally {
        db.close();
      }
      const file = fs.readFileSync(path.join(svc.dataDir, DATABASE_FILE)).toString('latin1');
      expect(file).not.toContain(phrase);
    },
    120_000,
  );
});

describe('DELETE .../stt/calls/{id}', () => {
  it('erases a call; another account reads it as not found', async () => {
    const created = await call(
      'POST',
      `${API}/stt/calls`,
      alice.accessKey,
      { title: 'a call' },
      { 'Idempotency-Key': `call-${randomUUID()}` },
    );
    expect(created.status).toBe(201);
    const callId = created.json.data.callId as string;
    expect((await call('DELETE', `${API}/stt/calls/${callId}`, bob.accessKey)).status).toBe(404);
    const del = await call('DELETE', `${API}/stt/calls/${callId}`, alice.accessKey);
    expect(del.status).toBe(200);
    expect(del.json.data).toEqual({ callId, deleted: true, transcriptionIds: [] });
    const rows = await withStore(async (s) =>
      Number((await s.db.one<{ n: bigint | string }>('SELECT COUNT(*) AS n FROM calls WHERE id = ?', [callId]))!.n),
    );
    expect(rows).toBe(0);
    expect((await call('GET', `${API}/stt/calls/${callId}`, alice.accessKey)).status).toBe(404);
  });
});

describe('DELETE .../stt/calls/{id} of a two-leg batch call', () => {
  it('erases both legs with their segments and jobs, then the call; the audit names the key', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-erase-call-'));
    const stereo = path.join(dir, 'call.wav');
    execFileSync('sox', ['-M', clip.wavFile, clip.wavFile, stereo]);
    const form = new FormData();
    form.append('options', JSON.stringify({ multichannel: true }));
    form.append('file', new Blob([fs.readFileSync(stereo)]), 'call.wav');
    const res = await fetch(`${svc.baseUrl}${TRANSCRIPTIONS}`, { method: 'POST', headers: { accessKey: alice.accessKey }, body: form });
    const json = (await res.json()) as Json;
    expect(res.status, JSON.stringify(json)).toBe(200);
    const callId = json.data.callId as string;
    const legs = (json.data.legs as Json[]).map((l) => l.transcriptionId as string);
    expect(legs).toHaveLength(2);
    await svc.service.batch.idle();
    for (const leg of legs) expect((await rowsOf(leg)).segments).toBeGreaterThan(0);

    expect((await call('DELETE', `${API}/stt/calls/${callId}`, bob.accessKey)).status).toBe(404);
    const del = await call('DELETE', `${API}/stt/calls/${callId}`, alice.accessKey);
    expect(del.status).toBe(200);
    expect([...del.json.data.transcriptionIds].sort()).toEqual([...legs].sort());
    for (const leg of legs) expect(await rowsOf(leg)).toEqual(GONE);
    const calls = await withStore(async (s) =>
      Number((await s.db.one<{ n: bigint | string }>('SELECT COUNT(*) AS n FROM calls WHERE id = ?', [callId]))!.n),
    );
    expect(calls).toBe(0);
    expect((await call('GET', `${API}/stt/calls/${callId}/transcript`, alice.accessKey)).status).toBe(404);
    const audit = await withStore((s) => s.listAudit(alice.accountId, 20));
    expect(audit.find((e) => e.action === 'call.delete' && e.subjectId === callId)?.credentialId).toMatch(/^[0-9a-f]{16}$/);
    fs.rmSync(dir, { recursive: true, force: true });
  }, 120_000);
});

describe('retention', () => {
  it('the sweeper erases rows older than the account retention, once, however many nodes sweep', async () => {
    const carol = await svc.account(100_000n);
    const old = await batchRow(carol.accessKey);
    const kept = await batchRow(alice.accessKey); // alice has no retention
    await withStore((s) => s.setRetention(carol.accountId, { transcriptsDays: 30, recordingsDays: null }, new Date()));
    const later = new Date(Date.now() + 31 * 86_400_000);
    // Not yet expired today: nothing erased.
    const today = await withStore((s) => new RetentionSweeper({ store: s, log: pino({ level: 'silent' }) }).sweep());
    expect(today).toBe(0);
    expect((await rowsOf(old)).transcriptions).toBe(1);

    const a = await secondConnection(svc);
    const b = await secondConnection(svc);
    try {
      const sweep = (s: SqlStore) => new RetentionSweeper({ store: s, log: pino({ level: 'silent' }), now: () => later }).sweep();
      // Nodes share only a PostgreSQL store; two SQLite connections in one process would
      // block each other's write transactions (one node per data dir), so they take turns.
      const counts = a.engine === 'postgres' ? await Promise.all([sweep(a), sweep(b)]) : [await sweep(a), await sweep(b)];
      expect(counts[0]! + counts[1]!).toBeGreaterThanOrEqual(1);
      expect(await rowsOf(old)).toEqual(GONE);
      expect((await rowsOf(kept)).transcriptions).toBe(1);
      const audit = await a.listAudit(carol.accountId, 10);
      expect(audit.filter((e) => e.action === 'retention.delete' && e.subjectId === old)).toHaveLength(1);
    } finally {
      await a.close();
      await b.close();
    }
  }, 120_000);
});
