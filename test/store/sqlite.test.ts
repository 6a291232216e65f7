import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';
import { LATEST_SCHEMA_VERSION } from '../../src/store/migrations.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { CreateSessionInput, SessionRecord, Store } from '../../src/store/store.js';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SQLITE_MODULE = pathToFileURL(path.join(REPO_ROOT, 'src/store/sqlite.ts')).href;
const T0 = '2025-01-01T00:00:00.000Z';

const sha = (s: string): Buffer => crypto.createHash('sha256').update(s).digest();

let dir: string;
let dbPath: string;
const opened: Store[] = [];

async function openAt(p = dbPath): Promise<SqliteStore> {
  const store = new SqliteStore({ path: p });
  await store.open();
  opened.push(store);
  return store;
}

async function addAccount(store: Store, id: string, characters = 0n): Promise<void> {
  await store.createAccount({
    id,
    name: `name of ${id}`,
    characters,
    accessKey: { id: `sk_${id}`, secretHash: sha(`sk-secret-${id}`) },
    apiToken: { id: `tok_${id}`, secretHash: sha(`tok-secret-${id}`) },
    createdAt: T0,
  });
}

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

function ledger(p = dbPath): Array<{ delta: bigint; balance_after: bigint; reason: string; session_id: string | null }> {
  const db = new Database(p, { readonly: true });
  try {
    db.defaultSafeIntegers(true);
    return db.prepare('SELECT delta, balance_after, reason, session_id FROM characters_ledger ORDER BY id').all() as never;
  } finally {
    db.close();
  }
}

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-store-'));
  dbPath = path.join(dir, 'scribed.db');
});

afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('SqliteStore: opening and migrations', () => {
  it('applies migrations once, records the version, and is idempotent on reopen', async () => {
    const a = await openAt();
    await addAccount(a, 'acc_1', 5n);
    await a.close();
    const b = await openAt();
    expect(await b.getAccount('acc_1')).not.toBeNull();
    await b.close();

    const db = new Database(dbPath, { readonly: true });
    const versions = db.prepare('SELECT version FROM schema_migrations ORDER BY version').all() as Array<{ version: number }>;
    const pragmas = { journal: db.pragma('journal_mode', { simple: true }) };
    db.close();
    expect(versions.map((v) => v.version)).toEqual(Array.from({ length: LATEST_SCHEMA_VERSION }, (_, i) => i + 1));
    expect(pragmas.journal).toBe('wal');
  });

  it('refuses a database with a newer schema than the code knows', async () => {
    const a = await openAt();
    await a.close();
    const db = new Database(dbPath);
    db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(LATEST_SCHEMA_VERSION + 1, T0);
    db.close();
    const b = new SqliteStore({ path: dbPath });
    await expect(b.open()).rejects.toThrow(/newer than this build/);
    expect(b.isOpen()).toBe(false);
  });

  it('openStore creates the data directory owner-only and opens scribed.db', async () => {
    const dataDir = path.join(dir, 'nested', 'data');
    const store = await openStore(dataDir);
    opened.push(store);
    expect(store.isOpen()).toBe(true);
    expect(fs.statSync(dataDir).mode & 0o777).toBe(0o700);
    expect(fs.existsSync(path.join(dataDir, 'scribed.db'))).toBe(true);
    expect(fs.statSync(path.join(dataDir, 'scribed.db')).mode & 0o077).toBe(0);
    await store.close();
    expect(store.isOpen()).toBe(false);
  });
});

describe('SqliteStore: accounts and Characters', () => {
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
    const rows = ledger();
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
    const before = ledger();
    expect(await s.debitCharacters('acc_1', 11n, 'realtime_audio', session.id, session.id)).toBeNull();
    expect((await s.getAccount('acc_1'))?.characters).toBe(10n);
    expect(ledger()).toEqual(before);
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
    expect(ledger().at(-1)).toMatchObject({ delta: -5n, session_id: session.id });
    // Another account's session cannot be charged; nothing is debited either.
    await expect(s.debitCharacters('acc_2', 1n, 'realtime_audio', null, session.id)).rejects.toThrow(/NOT_FOUND/);
    expect((await s.getAccount('acc_2'))?.characters).toBe(100n);
  });
});

describe('SqliteStore: real-time sessions', () => {
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
    expect(t).toMatchObject({ kind: 'realtime', sessionId: 'rts_a', status: 'RECORDING', sampleRateHz: 16000, title: 'title a', audioSamples: 0n });
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

  it('hides another account\'s session and transcription', async () => {
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

describe('SqliteStore: tickets', () => {
  async function withTicket(expiresAt = '2025-01-01T00:01:00.000Z'): Promise<SqliteStore> {
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

describe('SqliteStore: segments', () => {
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

describe('SqliteStore: persistence and several connections', () => {
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
    expect(await b.getSession('rts_a', 'acc_1')).toMatchObject({ epoch: 2, epochBases: [0n, 123n], capturedSamples: 123n, nextSegmentIndex: 1 });
    expect((await b.listSegments('stt_a')).map((x) => x.text)).toEqual(['hi']);
  });

  it('a second SqliteStore on the same file (the CLI) sees the first one\'s writes, and the reverse', async () => {
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

// ---------------------------------------------------------------- two real processes

const CHILD_SCRIPT = `
import { createHash } from 'node:crypto';
import { createInterface } from 'node:readline';
const { SqliteStore } = await import(process.env.SQLITE_MODULE);
const [mode, dbPath, count] = process.argv.slice(2);
const store = new SqliteStore({ path: dbPath });
await store.open();
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
  const script = path.join(dir, 'racer.mts');
  fs.writeFileSync(script, CHILD_SCRIPT);
  const children = [0, 1].map(() =>
    spawn(process.execPath, ['--import', 'tsx', script, mode, dbPath, String(count)], {
      cwd: REPO_ROOT,
      env: { ...process.env, SQLITE_MODULE },
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

describe('SqliteStore: two processes racing on one file', () => {
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
    const db = new Database(dbPath, { readonly: true });
    const n = db.prepare('SELECT COUNT(*) AS n FROM rt_sessions').get() as { n: number };
    const t = db.prepare('SELECT COUNT(*) AS n FROM transcriptions').get() as { n: number };
    db.close();
    expect(n.n).toBe(count);
    expect(t.n).toBe(count);
  });
});
