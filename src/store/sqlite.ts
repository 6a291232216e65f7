// The embedded Store: one SQLite file in the data directory, opened with better-sqlite3.
//
// Concurrency model. Two kinds of process write the same file: the server, and the
// operator CLI (`scribed accounts create|credit`) while the server runs. SQLite serialises
// writers with file locks; WAL lets readers run beside the one writer. Every method that
// writes runs as ONE `BEGIN IMMEDIATE` transaction: the write lock is taken before the
// first read, so read-check-write sequences (ticket consumption, debits, idempotent
// create) cannot interleave with another process's, and a deferred transaction can never
// fail half-way with SQLITE_BUSY when it tries to upgrade from reader to writer. Waiting
// for the lock is bounded by busy_timeout. Methods that only read run one SELECT (its own
// implicit, consistent read transaction).
//
// Integers. The connection runs with safeIntegers on: every INTEGER arrives as bigint, so
// 64-bit balances and sample counts never pass through a double. Small counters (epoch,
// segment index, sample rate) are converted with Number() at the edge. Balance arithmetic
// is done in JS inside the write transaction, because SQLite silently turns an overflowing
// integer sum into a REAL; values are range-checked against signed 64 bits first.
import crypto from 'node:crypto';
import fs from 'node:fs';
import Database from 'better-sqlite3';
import { ScribedError } from '../core/errors.js';
import { LATEST_SCHEMA_VERSION, MIGRATIONS } from './migrations.js';
import type { SqlAccess } from './sqlite-access.js';
import * as interp from './sqlite-interpretation.js';
import * as music from './sqlite-music.js';
import * as voices from './sqlite-voices.js';
import * as userGroups from './sqlite-user-groups.js';
import * as designs from './sqlite-voice-designs.js';
import type {
  Account,
  BatchJobRecord,
  BatchJobState,
  CreateBatchJobInput,
  CreateBatchJobOutcome,
  CreateSessionInput,
  HistoryPosition,
  CreateSessionOutcome,
  CredentialKind,
  CredentialRecord,
  NewAccount,
  SegmentRecord,
  SegmentWord,
  SessionProgress,
  SessionRecord,
  SessionState,
  Store,
  TicketConsumeOutcome,
  TicketRecord,
  TranscriptionRecord,
  TranscriptionStatus,
  InterpretationProjectRecord,
  InterpretationRetryInput,
  InterpretationRetryOutcome,
  InterpretationTargetRecord,
  InterpretationTargetState,
  NewInterpretationProject,
  RetryPlan,
  RetryPlanOutcome,
  MusicOutcome,
  MusicProjectRecord,
  MusicProjectStatus,
  MusicQuote,
  NewRecording,
  NewVoice,
  VoiceRecord,
  UserGroupFields,
  UserGroupRecord,
  VoiceDesignRecord,
} from './store.js';

export interface SqliteStoreOptions {
  /** Database file, normally `<dataDir>/scribed.db`. */
  path: string;
  /** How long a statement waits for another connection's lock before SQLITE_BUSY. */
  busyTimeoutMs?: number;
}

const INT64_MAX = (1n << 63n) - 1n;
const DEFAULT_BUSY_TIMEOUT_MS = 10_000;

// ---------------------------------------------------------------- row shapes (safeIntegers)

interface AccountRow {
  id: string;
  name: string;
  characters: bigint;
  created_at: string;
}

interface CredentialRow {
  id: string;
  account_id: string;
  kind: CredentialKind;
  secret_hash: Buffer;
}

interface SessionRow {
  id: string;
  account_id: string;
  transcription_id: string;
  title: string;
  language_hint: string | null;
  options_json: string;
  state: SessionState;
  epoch: bigint;
  epoch_bases: string;
  captured_samples: bigint;
  characters_charged: bigint;
  next_segment_index: bigint;
  created_at: string;
  updated_at: string;
}

interface TranscriptionRow {
  id: string;
  account_id: string;
  kind: 'realtime' | 'batch';
  session_id: string | null;
  title: string;
  status: TranscriptionStatus;
  language_hint: string | null;
  sample_rate_hz: bigint;
  audio_samples: bigint;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
}

interface SegmentRow {
  transcription_id: string;
  idx: bigint;
  start_sample: bigint;
  end_sample: bigint;
  text: string;
  words_json: string;
  annotations_json: string | null;
  created_at: string;
}

interface BatchJobRow {
  transcription_id: string;
  account_id: string;
  options_json: string;
  notices_json: string;
  audio_file: string;
  state: BatchJobState;
  characters_charged: bigint;
  error: string | null;
  idempotency_key: string | null;
  request_hash: string | null;
  source_json: string | null;
  channel_state_json: string | null;
  created_at: string;
  updated_at: string;
}

interface TicketRow {
  id: string;
  secret_hash: Buffer;
  account_id: string;
  session_id: string;
  expires_at: string;
  used_at: string | null;
}

interface IdempotencyRow {
  request_hash: string;
  session_id: string;
}

// ---------------------------------------------------------------- conversions

function toAccount(r: AccountRow): Account {
  return { id: r.id, name: r.name, characters: r.characters, createdAt: r.created_at };
}

function toSession(r: SessionRow): SessionRecord {
  const bases = JSON.parse(r.epoch_bases) as string[];
  return {
    id: r.id,
    accountId: r.account_id,
    transcriptionId: r.transcription_id,
    title: r.title,
    languageHint: r.language_hint,
    options: JSON.parse(r.options_json) as Record<string, unknown>,
    state: r.state,
    epoch: Number(r.epoch),
    epochBases: bases.map((b) => BigInt(b)),
    capturedSamples: r.captured_samples,
    charactersCharged: r.characters_charged,
    nextSegmentIndex: Number(r.next_segment_index),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

function toTranscription(r: TranscriptionRow): TranscriptionRecord {
  return {
    id: r.id,
    accountId: r.account_id,
    kind: r.kind,
    sessionId: r.session_id,
    title: r.title,
    status: r.status,
    languageHint: r.language_hint,
    sampleRateHz: Number(r.sample_rate_hz),
    audioSamples: r.audio_samples,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    completedAt: r.completed_at,
  };
}

function toSegment(r: SegmentRow): SegmentRecord {
  return {
    transcriptionId: r.transcription_id,
    index: Number(r.idx),
    startSample: r.start_sample,
    endSample: r.end_sample,
    text: r.text,
    words: JSON.parse(r.words_json) as SegmentWord[],
    ...(r.annotations_json === null ? {} : { annotations: JSON.parse(r.annotations_json) as Record<string, unknown> }),
    createdAt: r.created_at,
  };
}

function toBatchJob(r: BatchJobRow): BatchJobRecord {
  return {
    transcriptionId: r.transcription_id,
    accountId: r.account_id,
    options: JSON.parse(r.options_json) as Record<string, unknown>,
    notices: JSON.parse(r.notices_json) as Array<{ code: string; message: string }>,
    audioFile: r.audio_file,
    state: r.state,
    charactersCharged: r.characters_charged,
    error: r.error,
    source: r.source_json === null ? null : (JSON.parse(r.source_json) as Record<string, unknown>),
    channelState: r.channel_state_json === null ? null : (JSON.parse(r.channel_state_json) as number[]),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

function toTicket(r: TicketRow): TicketRecord {
  return {
    id: r.id,
    accountId: r.account_id,
    sessionId: r.session_id,
    secretHash: r.secret_hash,
    expiresAt: r.expires_at,
    usedAt: r.used_at,
  };
}

/** A non-negative value that fits a signed 64-bit INTEGER column. */
function int64(value: bigint, what: string): bigint {
  if (typeof value !== 'bigint' || value < 0n || value > INT64_MAX) {
    throw new RangeError(`${what} must be a bigint in [0, 2^63-1], got ${String(value)}`);
  }
  return value;
}

function isConstraintError(err: unknown): boolean {
  return err instanceof Database.SqliteError && err.code.startsWith('SQLITE_CONSTRAINT');
}

function nowIso(): string {
  return new Date().toISOString();
}

// ---------------------------------------------------------------- the store

export class SqliteStore implements Store {
  readonly path: string;
  private readonly busyTimeoutMs: number;
  private db: Database.Database | null = null;
  private readonly statements = new Map<string, Database.Statement>();

  constructor(opts: SqliteStoreOptions) {
    this.path = opts.path;
    this.busyTimeoutMs = opts.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
  }

  async open(): Promise<void> {
    if (this.db) return;
    // Create the file owner-only before SQLite does: SQLite gives the -wal and -shm files
    // the permissions of the database file, and credential hashes live here.
    try {
      fs.closeSync(fs.openSync(this.path, 'wx', 0o600));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const db = new Database(this.path, { timeout: this.busyTimeoutMs });
    try {
      db.defaultSafeIntegers(true);
      db.pragma(`busy_timeout = ${this.busyTimeoutMs}`);
      const mode = String(db.pragma('journal_mode = WAL', { simple: true })).toLowerCase();
      if (mode !== 'wal') throw new Error(`could not switch ${this.path} to WAL journal mode (got ${mode})`);
      // FULL, not NORMAL. Either way WAL keeps the file consistent: a crash can never leave
      // part of a transaction behind. The difference is durability: under NORMAL a
      // transaction committed just before a power loss may be rolled back, and here that
      // means a debit or a consumed ticket silently undone after the server already acted
      // on it, or an operator credit reported as done and then lost. FULL fsyncs the WAL
      // at every commit; our write rate (a progress save per second per session, one
      // debit per billed frame) is far below what that costs.
      db.pragma('synchronous = FULL');
      db.pragma('foreign_keys = ON');
      this.db = db;
      this.migrate();
    } catch (err) {
      this.db = null;
      this.statements.clear();
      db.close();
      throw err;
    }
  }

  async close(): Promise<void> {
    const db = this.db;
    if (!db) return;
    this.db = null;
    this.statements.clear();
    try {
      db.pragma('optimize');
    } catch {
      // best effort: another process may hold the lock; closing matters more
    }
    db.close();
  }

  isOpen(): boolean {
    return this.db?.open === true;
  }

  // ---------------------------------------------------------------- plumbing

  private conn(): Database.Database {
    if (!this.db) throw new Error('store is not open');
    return this.db;
  }

  private stmt(sql: string): Database.Statement {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.conn().prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  /** Run `fn` as one BEGIN IMMEDIATE transaction: committed if it returns, rolled back if it throws. */
  private write<T>(fn: () => T): T {
    return this.conn().transaction(fn).immediate();
  }

  private migrate(): void {
    const db = this.conn();
    const current = (): number => {
      const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get();
      if (!table) return 0;
      const row = db.prepare('SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations').get() as { v: bigint };
      return Number(row.v);
    };
    const refuseNewer = (v: number): void => {
      if (v > LATEST_SCHEMA_VERSION) {
        throw new Error(
          `database ${this.path} has schema version ${v}, newer than this build knows (${LATEST_SCHEMA_VERSION}); refusing to open it with older code`,
        );
      }
    };

    const seen = current();
    refuseNewer(seen);
    if (seen === LATEST_SCHEMA_VERSION) return;

    const ordered = [...MIGRATIONS].sort((a, b) => a.version - b.version);
    // One transaction per migration. The version is re-read under the write lock, so two
    // processes opening a fresh file at once apply each migration exactly once.
    for (;;) {
      const applied = db
        .transaction(() => {
          db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)');
          const v = current();
          refuseNewer(v);
          const next = ordered.find((m) => m.version > v);
          if (!next) return false;
          db.exec(next.sql);
          db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(next.version, nowIso());
          return true;
        })
        .immediate();
      if (!applied) return;
    }
  }

  private readSession(sessionId: string): SessionRow | undefined {
    return this.stmt('SELECT * FROM rt_sessions WHERE id = ?').get(sessionId) as SessionRow | undefined;
  }

  private mustReadSession(sessionId: string): SessionRow {
    const row = this.readSession(sessionId);
    if (!row) throw new ScribedError('NOT_FOUND', `session ${sessionId} does not exist`);
    return row;
  }

  private insertLedger(accountId: string, delta: bigint, balanceAfter: bigint, reason: string, ref: string | null, sessionId: string | null): void {
    this.stmt(
      `INSERT INTO characters_ledger (account_id, delta, balance_after, reason, ref, session_id, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    ).run(accountId, delta, balanceAfter, reason, ref, sessionId, nowIso());
  }

  private readBalance(accountId: string): bigint {
    const row = this.stmt('SELECT characters FROM accounts WHERE id = ?').get(accountId) as { characters: bigint } | undefined;
    if (!row) throw new ScribedError('NOT_FOUND', `account ${accountId} does not exist`);
    return row.characters;
  }

  // ---------------------------------------------------------------- accounts and credentials

  async createAccount(input: NewAccount): Promise<Account> {
    const characters = int64(input.characters, 'characters');
    return this.write(() => {
      this.stmt('INSERT INTO accounts (id, name, characters, created_at) VALUES (?, ?, ?, ?)').run(
        input.id,
        input.name,
        characters,
        input.createdAt,
      );
      const cred = this.stmt('INSERT INTO credentials (id, account_id, kind, secret_hash, created_at) VALUES (?, ?, ?, ?, ?)');
      cred.run(input.accessKey.id, input.id, 'access_key', input.accessKey.secretHash, input.createdAt);
      cred.run(input.apiToken.id, input.id, 'api_token', input.apiToken.secretHash, input.createdAt);
      // The opening balance goes through the ledger too, so the ledger always sums to it.
      if (characters > 0n) this.insertLedger(input.id, characters, characters, 'account_created', null, null);
      return { id: input.id, name: input.name, characters, createdAt: input.createdAt };
    });
  }

  async getAccount(accountId: string): Promise<Account | null> {
    const row = this.stmt('SELECT * FROM accounts WHERE id = ?').get(accountId) as AccountRow | undefined;
    return row ? toAccount(row) : null;
  }

  async findCredential(kind: CredentialKind, id: string): Promise<CredentialRecord | null> {
    const row = this.stmt('SELECT id, account_id, kind, secret_hash FROM credentials WHERE id = ? AND kind = ?').get(id, kind) as
      | CredentialRow
      | undefined;
    return row ? { id: row.id, accountId: row.account_id, kind: row.kind, secretHash: row.secret_hash } : null;
  }

  async creditCharacters(accountId: string, amount: bigint, reason: string, ref: string | null): Promise<bigint> {
    int64(amount, 'amount');
    return this.write(() => {
      const balance = this.readBalance(accountId);
      if (amount === 0n) return balance;
      const next = balance + amount;
      if (next > INT64_MAX) throw new RangeError(`crediting ${amount} would overflow account ${accountId}'s balance`);
      this.stmt('UPDATE accounts SET characters = ? WHERE id = ?').run(next, accountId);
      this.insertLedger(accountId, amount, next, reason, ref, null);
      return next;
    });
  }

  async debitCharacters(accountId: string, amount: bigint, reason: string, ref: string | null, sessionId?: string): Promise<bigint | null> {
    int64(amount, 'amount');
    return this.write(() => {
      const balance = this.readBalance(accountId);
      if (amount === 0n) return balance;
      if (balance < amount) return null;
      if (sessionId !== undefined) {
        const row = this.stmt('SELECT characters_charged FROM rt_sessions WHERE id = ? AND account_id = ?').get(sessionId, accountId) as
          | { characters_charged: bigint }
          | undefined;
        if (!row) throw new ScribedError('NOT_FOUND', `session ${sessionId} does not exist for account ${accountId}`);
        const charged = row.characters_charged + amount;
        if (charged > INT64_MAX) throw new RangeError(`session ${sessionId} charactersCharged would overflow`);
        this.stmt('UPDATE rt_sessions SET characters_charged = ?, updated_at = ? WHERE id = ?').run(charged, nowIso(), sessionId);
      }
      const next = balance - amount;
      this.stmt('UPDATE accounts SET characters = ? WHERE id = ?').run(next, accountId);
      this.insertLedger(accountId, -amount, next, reason, ref, sessionId ?? null);
      return next;
    });
  }

  // ---------------------------------------------------------------- real-time sessions

  async createSession(input: CreateSessionInput): Promise<CreateSessionOutcome> {
    const s = input.session;
    if (s.accountId !== input.accountId) {
      throw new Error(`createSession: session.accountId ${s.accountId} differs from accountId ${input.accountId}`);
    }
    const attempt = (): CreateSessionOutcome =>
      this.write(() => {
        const existing = this.stmt('SELECT request_hash, session_id FROM idempotency_keys WHERE account_id = ? AND key = ?').get(
          input.accountId,
          input.idempotencyKey,
        ) as IdempotencyRow | undefined;
        if (existing) {
          if (existing.request_hash !== input.requestHash) return { kind: 'conflict' };
          return { kind: 'replayed', session: toSession(this.mustReadSession(existing.session_id)) };
        }
        this.stmt(
          `INSERT INTO transcriptions (id, account_id, kind, session_id, title, status, language_hint, sample_rate_hz,
                                       audio_samples, created_at, updated_at, completed_at)
           VALUES (?, ?, 'realtime', ?, ?, 'RECORDING', ?, ?, 0, ?, ?, NULL)`,
        ).run(s.transcriptionId, input.accountId, s.id, s.title, s.languageHint, input.sampleRateHz, s.createdAt, s.createdAt);
        this.stmt(
          `INSERT INTO rt_sessions (id, account_id, transcription_id, title, language_hint, options_json, state, epoch,
                                    epoch_bases, captured_samples, characters_charged, next_segment_index, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, 'RECORDING', 1, '["0"]', 0, 0, 0, ?, ?)`,
        ).run(s.id, input.accountId, s.transcriptionId, s.title, s.languageHint, JSON.stringify(s.options), s.createdAt, s.createdAt);
        this.stmt('INSERT INTO idempotency_keys (account_id, key, request_hash, session_id, created_at) VALUES (?, ?, ?, ?, ?)').run(
          input.accountId,
          input.idempotencyKey,
          input.requestHash,
          s.id,
          s.createdAt,
        );
        return { kind: 'created', session: toSession(this.mustReadSession(s.id)) };
      });
    try {
      return attempt();
    } catch (err) {
      // BEGIN IMMEDIATE already serialises writers across processes, so a duplicate should
      // see the first one's record. Should a constraint still fire (e.g. a duplicate that
      // slipped in some other way), the transaction was rolled back whole: re-read and
      // answer replayed/conflict if the key now exists, otherwise it was a genuine error.
      if (!isConstraintError(err)) throw err;
      const again = this.stmt('SELECT 1 FROM idempotency_keys WHERE account_id = ? AND key = ?').get(input.accountId, input.idempotencyKey);
      if (!again) throw err;
      return attempt();
    }
  }

  async getSession(sessionId: string, accountId: string): Promise<SessionRecord | null> {
    const row = this.stmt('SELECT * FROM rt_sessions WHERE id = ? AND account_id = ?').get(sessionId, accountId) as SessionRow | undefined;
    return row ? toSession(row) : null;
  }

  async listSessionsByState(state: SessionState): Promise<SessionRecord[]> {
    const rows = this.stmt('SELECT * FROM rt_sessions WHERE state = ? ORDER BY created_at, id').all(state) as SessionRow[];
    return rows.map(toSession);
  }

  async setSessionState(sessionId: string, state: SessionState, transcriptionStatus: TranscriptionStatus): Promise<void> {
    this.write(() => {
      const row = this.mustReadSession(sessionId);
      const now = nowIso();
      this.stmt('UPDATE rt_sessions SET state = ?, updated_at = ? WHERE id = ?').run(state, now, sessionId);
      this.updateTranscriptionStatus(row.transcription_id, transcriptionStatus, undefined, now);
    });
  }

  async beginEpoch(sessionId: string): Promise<SessionRecord> {
    return this.write(() => {
      const row = this.mustReadSession(sessionId);
      const bases = JSON.parse(row.epoch_bases) as string[];
      bases.push(row.captured_samples.toString());
      this.stmt('UPDATE rt_sessions SET epoch = epoch + 1, epoch_bases = ?, updated_at = ? WHERE id = ?').run(
        JSON.stringify(bases),
        nowIso(),
        sessionId,
      );
      return toSession(this.mustReadSession(sessionId));
    });
  }

  async saveProgress(sessionId: string, progress: SessionProgress): Promise<void> {
    const captured = int64(progress.capturedSamples, 'capturedSamples');
    const charged = progress.charactersCharged === undefined ? null : int64(progress.charactersCharged, 'charactersCharged');
    const nextIndex = progress.nextSegmentIndex ?? null;
    if (nextIndex !== null && (!Number.isSafeInteger(nextIndex) || nextIndex < 0)) {
      throw new RangeError(`nextSegmentIndex must be a non-negative integer, got ${nextIndex}`);
    }
    this.write(() => {
      // MAX everywhere: a late or reordered write can never move a cursor backwards.
      const info = this.stmt(
        `UPDATE rt_sessions
            SET captured_samples   = MAX(captured_samples, ?),
                characters_charged = MAX(characters_charged, COALESCE(?, characters_charged)),
                next_segment_index = MAX(next_segment_index, COALESCE(?, next_segment_index)),
                updated_at         = ?
          WHERE id = ?`,
      ).run(captured, charged, nextIndex, nowIso(), sessionId);
      if (info.changes === 0) throw new ScribedError('NOT_FOUND', `session ${sessionId} does not exist`);
    });
  }

  // ---------------------------------------------------------------- tickets

  async insertTicket(ticket: TicketRecord): Promise<void> {
    this.write(() => {
      this.stmt('INSERT INTO tickets (id, secret_hash, account_id, session_id, expires_at, used_at) VALUES (?, ?, ?, ?, ?, ?)').run(
        ticket.id,
        ticket.secretHash,
        ticket.accountId,
        ticket.sessionId,
        ticket.expiresAt,
        ticket.usedAt,
      );
    });
  }

  async consumeTicket(ticketId: string, secretHash: Buffer, now: Date): Promise<TicketConsumeOutcome> {
    return this.write((): TicketConsumeOutcome => {
      const row = this.stmt('SELECT * FROM tickets WHERE id = ?').get(ticketId) as TicketRow | undefined;
      if (!row) return { ok: false, reason: 'unknown' };
      const stored = row.secret_hash;
      if (stored.length !== secretHash.length || !crypto.timingSafeEqual(stored, secretHash)) return { ok: false, reason: 'forged' };
      if (row.used_at !== null) return { ok: false, reason: 'used' };
      const expires = Date.parse(row.expires_at);
      if (!Number.isFinite(expires) || expires <= now.getTime()) return { ok: false, reason: 'expired' };
      const usedAt = now.toISOString();
      // The used_at IS NULL guard is redundant under the write lock, and kept on purpose.
      const info = this.stmt('UPDATE tickets SET used_at = ? WHERE id = ? AND used_at IS NULL').run(usedAt, ticketId);
      if (info.changes !== 1) return { ok: false, reason: 'used' };
      return { ok: true, ticket: toTicket({ ...row, used_at: usedAt }) };
    });
  }

  // ---------------------------------------------------------------- History and transcripts

  async getTranscription(transcriptionId: string, accountId: string): Promise<TranscriptionRecord | null> {
    const row = this.stmt('SELECT * FROM transcriptions WHERE id = ? AND account_id = ?').get(transcriptionId, accountId) as
      | TranscriptionRow
      | undefined;
    return row ? toTranscription(row) : null;
  }

  async setTranscriptionStatus(transcriptionId: string, status: TranscriptionStatus, audioSamples?: bigint): Promise<void> {
    const samples = audioSamples === undefined ? undefined : int64(audioSamples, 'audioSamples');
    this.write(() => this.updateTranscriptionStatus(transcriptionId, status, samples, nowIso()));
  }

  /** Inside a write transaction. completed_at is stamped the first time status becomes COMPLETED. */
  private updateTranscriptionStatus(transcriptionId: string, status: TranscriptionStatus, audioSamples: bigint | undefined, now: string): void {
    const info = this.stmt(
      `UPDATE transcriptions
          SET status        = ?,
              audio_samples = MAX(audio_samples, COALESCE(?, audio_samples)),
              completed_at  = CASE WHEN ? = 'COMPLETED' THEN COALESCE(completed_at, ?) ELSE completed_at END,
              updated_at    = ?
        WHERE id = ?`,
    ).run(status, audioSamples ?? null, status, now, now, transcriptionId);
    if (info.changes === 0) throw new ScribedError('NOT_FOUND', `transcription ${transcriptionId} does not exist`);
  }

  async appendSegment(segment: SegmentRecord): Promise<void> {
    const insert = this.segmentInsert(segment);
    this.write(insert);
  }

  async appendBatchSegment(segment: SegmentRecord, channelState: number[] | null): Promise<void> {
    const insert = this.segmentInsert(segment);
    if (channelState !== null && !channelState.every(Number.isFinite)) throw new RangeError('channel state must be finite numbers');
    this.write(() => {
      insert();
      if (channelState === null) return;
      const info = this.stmt('UPDATE batch_jobs SET channel_state_json = ?, updated_at = ? WHERE transcription_id = ?').run(
        JSON.stringify(channelState),
        nowIso(),
        segment.transcriptionId,
      );
      if (info.changes === 0) throw new ScribedError('NOT_FOUND', `batch job ${segment.transcriptionId} does not exist`);
    });
  }

  /** The checked insert of appendSegment, to run inside a write transaction. */
  private segmentInsert(segment: SegmentRecord): () => void {
    if (!Number.isSafeInteger(segment.index) || segment.index < 0) throw new RangeError(`segment index must be a non-negative integer`);
    const start = int64(segment.startSample, 'startSample');
    const end = int64(segment.endSample, 'endSample');
    return () => {
      // First write wins: the stored final is the one already sent to the client, so a
      // re-sent final with the same index is dropped rather than allowed to rewrite it.
      // ON CONFLICT DO NOTHING (unlike INSERT OR IGNORE) only swallows the key clash, not
      // CHECK or NOT NULL violations.
      this.stmt(
        `INSERT INTO segments (transcription_id, idx, start_sample, end_sample, text, words_json, annotations_json, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (transcription_id, idx) DO NOTHING`,
      ).run(
        segment.transcriptionId,
        segment.index,
        start,
        end,
        segment.text,
        JSON.stringify(segment.words),
        segment.annotations === undefined ? null : JSON.stringify(segment.annotations),
        segment.createdAt,
      );
    };
  }

  async listSegments(transcriptionId: string): Promise<SegmentRecord[]> {
    const rows = this.stmt('SELECT * FROM segments WHERE transcription_id = ? ORDER BY idx').all(transcriptionId) as SegmentRow[];
    return rows.map(toSegment);
  }
  // ---------------------------------------------------------------- issue 4 areas (sqlite-*.ts)

  private get sql(): SqlAccess {
    return {
      stmt: (q) => this.stmt(q),
      write: (fn) => this.write(fn),
      readBalance: (accountId) => this.readBalance(accountId),
      ledger: (accountId, delta, after, reason, ref) => this.insertLedger(accountId, delta, after, reason, ref, null),
    };
  }

  async createInterpretationProject(input: NewInterpretationProject): Promise<InterpretationProjectRecord | null> {
    return interp.createInterpretationProject(this.sql, input);
  }

  async getInterpretationProject(projectId: string, accountId: string): Promise<InterpretationProjectRecord | null> {
    return interp.getInterpretationProject(this.sql, projectId, accountId);
  }

  async issueRetryPlan(
    projectId: string,
    targetId: string,
    accountId: string,
    now: Date,
    plan: (target: InterpretationTargetRecord) => RetryPlan,
    reusable: (plan: RetryPlan) => boolean,
  ): Promise<RetryPlanOutcome> {
    return interp.issueRetryPlan(this.sql, projectId, targetId, accountId, now, plan, reusable);
  }

  async retryInterpretationTarget(input: InterpretationRetryInput): Promise<InterpretationRetryOutcome> {
    return interp.retryInterpretationTarget(this.sql, input);
  }

  async transitionInterpretationTarget(targetId: string, to: 'PROCESSING' | 'COMPLETED' | 'FAILED_RELEASED', now: Date): Promise<InterpretationTargetRecord> {
    return interp.transitionInterpretationTarget(this.sql, targetId, to, now);
  }
  async createMusicProject(input: { id: string; accountId: string; brief: Record<string, unknown>; createdAt: string }): Promise<MusicProjectRecord> {
    return music.createMusicProject(this.sql, input);
  }

  async getMusicProject(projectId: string, accountId: string): Promise<MusicProjectRecord | null> {
    return music.getMusicProject(this.sql, projectId, accountId);
  }

  async replaceMusicBrief(projectId: string, accountId: string, brief: Record<string, unknown>, now: Date): Promise<MusicOutcome> {
    return music.replaceMusicBrief(this.sql, projectId, accountId, brief, now);
  }

  async createMusicQuote(projectId: string, accountId: string, quote: (p: MusicProjectRecord) => MusicQuote, now: Date): Promise<MusicOutcome> {
    return music.createMusicQuote(this.sql, projectId, accountId, quote, now);
  }

  async startMusicGeneration(
    projectId: string,
    accountId: string,
    quoteId: string,
    now: Date,
    generation: (q: MusicQuote) => Record<string, unknown>,
  ): Promise<MusicOutcome> {
    return music.startMusicGeneration(this.sql, projectId, accountId, quoteId, now, generation);
  }

  async completeArrangement(projectId: string, arrangementVersion: number, plan: Record<string, unknown>, now: Date): Promise<boolean> {
    return music.completeArrangement(this.sql, projectId, arrangementVersion, plan, now);
  }

  async failArrangement(projectId: string, arrangementVersion: number, now: Date): Promise<boolean> {
    return music.failArrangement(this.sql, projectId, arrangementVersion, now);
  }

  async listMusicProjectsByStatus(status: MusicProjectStatus): Promise<MusicProjectRecord[]> {
    return music.listMusicProjectsByStatus(this.sql, status);
  }
  async createVoice(input: NewVoice): Promise<{ kind: 'created' | 'exists'; voice: VoiceRecord }> {
    return voices.createVoice(this.sql, input);
  }

  async getVoice(voiceId: string, accountId: string): Promise<VoiceRecord | null> {
    return voices.getVoice(this.sql, voiceId, accountId);
  }

  async listVoices(accountId: string): Promise<VoiceRecord[]> {
    return voices.listVoices(this.sql, accountId);
  }

  async addVoiceRecordings(
    voiceId: string,
    accountId: string,
    recordings: NewRecording[],
    maxFiles: number,
    now: Date,
  ): Promise<{ kind: 'ok'; voice: VoiceRecord; firstIndex: number } | { kind: 'not_found' } | { kind: 'limit'; current: number }> {
    return voices.addVoiceRecordings(this.sql, voiceId, accountId, recordings, maxFiles, now);
  }

  async dropVoiceRecordingsFrom(voiceId: string, firstIndex: number): Promise<string[]> {
    return voices.dropVoiceRecordingsFrom(this.sql, voiceId, firstIndex);
  }

  async deleteVoice(voiceId: string, accountId: string): Promise<string[] | null> {
    return voices.deleteVoice(this.sql, voiceId, accountId);
  }
  async upsertUserGroup(
    accountId: string,
    providedId: string,
    fields: UserGroupFields,
    update: boolean,
    newToken: () => { nonce: string; hash: Buffer },
    now: Date,
  ): Promise<{ group: UserGroupRecord; created: boolean }> {
    return userGroups.upsertUserGroup(this.sql, accountId, providedId, fields, update, newToken, now);
  }

  async deleteUserGroup(accountId: string, providedId: string, matches: (storedHash: Buffer) => boolean): Promise<'deleted' | 'not_found' | 'mismatch'> {
    return userGroups.deleteUserGroup(this.sql, accountId, providedId, matches);
  }
  async createVoiceDesign(
    input: Omit<VoiceDesignRecord, 'status' | 'previewSha256' | 'previewBytes' | 'error' | 'callback' | 'updatedAt'>,
  ): Promise<VoiceDesignRecord> {
    return designs.createVoiceDesign(this.sql, input);
  }

  async createVoiceDesignIfRoom(
    input: Omit<VoiceDesignRecord, 'status' | 'previewSha256' | 'previewBytes' | 'error' | 'callback' | 'updatedAt'>,
    maxPending: number,
  ): Promise<VoiceDesignRecord | null> {
    return designs.createVoiceDesignIfRoom(this.sql, input, maxPending);
  }

  async getVoiceDesign(designId: string, accountId: string | null): Promise<VoiceDesignRecord | null> {
    return designs.getVoiceDesign(this.sql, designId, accountId);
  }

  async finishVoiceDesign(
    designId: string,
    outcome: { previewSha256: string; previewBytes: number } | { error: string },
    now: Date,
  ): Promise<VoiceDesignRecord | null> {
    return designs.finishVoiceDesign(this.sql, designId, outcome, now);
  }

  async recordCallbackAttempt(designId: string, callback: VoiceDesignRecord['callback'], now: Date): Promise<void> {
    designs.recordCallbackAttempt(this.sql, designId, callback, now);
  }

  async failVoiceDesignPreview(designId: string, previewSha256: string, error: string, now: Date): Promise<VoiceDesignRecord | null> {
    return designs.failVoiceDesignPreview(this.sql, designId, previewSha256, error, now);
  }

  async listUnfinishedVoiceDesigns(): Promise<VoiceDesignRecord[]> {
    return designs.listUnfinishedVoiceDesigns(this.sql);
  }

  async listTranscriptions(accountId: string, limit: number, after?: HistoryPosition): Promise<TranscriptionRecord[]> {
    if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError(`limit must be a positive integer`);
    // Keyset pagination on (created_at, id), served by transcriptions_account_newest: rows
    // inserted while a client pages never shift or repeat the pages after its cursor.
    const rows = (
      after === undefined
        ? this.stmt('SELECT * FROM transcriptions WHERE account_id = ? ORDER BY created_at DESC, id DESC LIMIT ?').all(accountId, limit)
        : this.stmt(
            `SELECT * FROM transcriptions
              WHERE account_id = ? AND (created_at < ? OR (created_at = ? AND id < ?))
              ORDER BY created_at DESC, id DESC LIMIT ?`,
          ).all(accountId, after.createdAt, after.createdAt, after.id, limit)
    ) as TranscriptionRow[];
    return rows.map(toTranscription);
  }

  // ---------------------------------------------------------------- batch jobs

  async createBatchJob(input: CreateBatchJobInput): Promise<CreateBatchJobOutcome> {
    const j = input.job;
    const charge = int64(j.charactersCharged, 'charactersCharged');
    const samples = int64(input.audioSamples, 'audioSamples');
    const idem = input.idempotency;
    return this.write((): CreateBatchJobOutcome => {
      if (idem) {
        const earlier = this.batchJobByKey(j.accountId, idem.key);
        if (earlier) return earlier.request_hash === idem.requestHash ? { kind: 'replayed', job: toBatchJob(earlier) } : { kind: 'conflict' };
      }
      const balance = this.readBalance(j.accountId);
      if (balance < charge) return { kind: 'insufficient' };
      this.stmt(
        `INSERT INTO transcriptions (id, account_id, kind, session_id, title, status, language_hint, sample_rate_hz,
                                     audio_samples, created_at, updated_at, completed_at)
         VALUES (?, ?, 'batch', NULL, ?, 'PROCESSING', ?, ?, ?, ?, ?, NULL)`,
      ).run(j.transcriptionId, j.accountId, input.title, input.languageHint, input.sampleRateHz, samples, j.createdAt, j.createdAt);
      this.stmt(
        `INSERT INTO batch_jobs (transcription_id, account_id, options_json, notices_json, audio_file, state, characters_charged,
                                 error, idempotency_key, request_hash, source_json, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, 'QUEUED', ?, NULL, ?, ?, ?, ?, ?)`,
      ).run(
        j.transcriptionId,
        j.accountId,
        JSON.stringify(j.options),
        JSON.stringify(j.notices),
        j.audioFile,
        charge,
        idem?.key ?? null,
        idem?.requestHash ?? null,
        j.source === null ? null : JSON.stringify(j.source),
        j.createdAt,
        j.createdAt,
      );
      if (charge > 0n) {
        const next = balance - charge;
        this.stmt('UPDATE accounts SET characters = ? WHERE id = ?').run(next, j.accountId);
        this.insertLedger(j.accountId, -charge, next, 'batch_audio', j.transcriptionId, null);
      }
      return { kind: 'created', job: toBatchJob(this.stmt('SELECT * FROM batch_jobs WHERE transcription_id = ?').get(j.transcriptionId) as BatchJobRow) };
    });
  }

  async findBatchJobByIdempotencyKey(accountId: string, key: string): Promise<{ job: BatchJobRecord; requestHash: string } | null> {
    const row = this.batchJobByKey(accountId, key);
    return row ? { job: toBatchJob(row), requestHash: row.request_hash! } : null;
  }

  private batchJobByKey(accountId: string, key: string): BatchJobRow | undefined {
    return this.stmt('SELECT * FROM batch_jobs WHERE account_id = ? AND idempotency_key = ?').get(accountId, key) as BatchJobRow | undefined;
  }

  async getBatchJob(transcriptionId: string): Promise<BatchJobRecord | null> {
    const row = this.stmt('SELECT * FROM batch_jobs WHERE transcription_id = ?').get(transcriptionId) as BatchJobRow | undefined;
    return row ? toBatchJob(row) : null;
  }

  async listBatchJobs(states: BatchJobState[]): Promise<BatchJobRecord[]> {
    if (states.length === 0) return [];
    const rows = this.conn()
      .prepare(`SELECT * FROM batch_jobs WHERE state IN (${states.map(() => '?').join(', ')}) ORDER BY created_at, transcription_id`)
      .all(...states) as BatchJobRow[];
    return rows.map(toBatchJob);
  }

  async setBatchJobState(transcriptionId: string, state: BatchJobState, error?: string): Promise<void> {
    this.write(() => {
      const now = nowIso();
      const info = this.stmt('UPDATE batch_jobs SET state = ?, error = ?, updated_at = ? WHERE transcription_id = ?').run(
        state,
        error ?? null,
        now,
        transcriptionId,
      );
      if (info.changes === 0) throw new ScribedError('NOT_FOUND', `batch job ${transcriptionId} does not exist`);
      if (state === 'DONE') this.updateTranscriptionStatus(transcriptionId, 'COMPLETED', undefined, now);
      if (state === 'FAILED') this.updateTranscriptionStatus(transcriptionId, 'FAILED', undefined, now);
    });
  }

  async failBatchJob(transcriptionId: string, reason: string): Promise<boolean> {
    return this.write(() => {
      const now = nowIso();
      const info = this.stmt(
        "UPDATE batch_jobs SET state = 'FAILED', error = ?, updated_at = ? WHERE transcription_id = ? AND state IN ('QUEUED', 'RUNNING')",
      ).run(reason, now, transcriptionId);
      if (info.changes === 0) return false;
      this.updateTranscriptionStatus(transcriptionId, 'FAILED', undefined, now);
      const job = this.stmt('SELECT account_id, characters_charged FROM batch_jobs WHERE transcription_id = ?').get(transcriptionId) as {
        account_id: string;
        characters_charged: bigint;
      };
      if (job.characters_charged > 0n) {
        const next = this.readBalance(job.account_id) + job.characters_charged;
        if (next > INT64_MAX) throw new RangeError(`refunding ${job.characters_charged} would overflow account ${job.account_id}'s balance`);
        this.stmt('UPDATE accounts SET characters = ? WHERE id = ?').run(next, job.account_id);
        this.insertLedger(job.account_id, job.characters_charged, next, 'batch_refund', transcriptionId, null);
      }
      return true;
    });
  }
}





