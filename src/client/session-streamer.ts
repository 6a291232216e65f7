// SessionStreamer: streams captured audio to a scribed server over the socket protocol
// (docs/protocol.md) and survives socket loss and server restarts without losing or
// duplicating a sample (docs/ingest.md).
//
// - The session is created with an Idempotency-Key derived from a stable stream id, so a
//   restarted client re-attaches to its session instead of opening a second one.
// - Audio not yet acknowledged stays in a bounded ring buffer (ring-buffer.ts). After a loss
//   the client resumes with its capture cursor and re-sends, in the new epoch, exactly what the
//   server does not hold (capture-accounting.ts).
// - Reconnects back off exponentially with jitter (backoff.ts).
// - The access key travels in the `accessKey` header only, never in a URL.
import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import WebSocket from 'ws';
import { encodeAudioFrame } from '../core/frame.js';
import { INPUT_ENCODINGS, type InputEncodingName } from '../core/audio/encodings.js';
import { AudioRing } from './ring-buffer.js';
import { CaptureAccount, wireSamples } from './capture-accounting.js';
import { backoffDelay, DEFAULT_BACKOFF, type BackoffPolicy } from './backoff.js';
import type { ClientMetrics } from './metrics.js';
import type { TranscriptJson } from '../core/transcript.js';
import { API_BASE, parseServerEvent, segmentIndex, type ServerEvent } from '../core/protocol.js';

const API = API_BASE;

export interface SessionStreamerOptions {
  /** Server base, http(s)://host:port. */
  url: string;
  accessKey: string;
  encoding: InputEncodingName;
  /** Stable id of this stream (a call id, an RTP SSRC + source, a file name): the session's
   * Idempotency-Key is derived from it. */
  streamId: string;
  title?: string;
  /** Session options beside inputEncoding (segmentCommitMode, vocabularyHints, ...). */
  sessionOptions?: Record<string, unknown>;
  /** The call this session is a leg of, and its speaker there (both or neither): sent in the
   * create body, so they are part of its idempotency (a re-attach names the same call). */
  call?: { callId: string; speaker: string };
  /** Bound of the unacknowledged-audio ring, in samples. */
  bufferSamples: number;
  logger: Logger;
  metrics?: ClientMetrics;
  /** What write() does when the ring is full: 'block' waits for acknowledgements (files and
   * pipes, which can wait); 'drop-oldest' drops the oldest unacknowledged audio, counted and
   * logged as overflow (live capture, which cannot). Default 'block'. */
  onFull?: 'block' | 'drop-oldest';
  /** Largest frame, ms of audio (default 100). */
  frameMs?: number;
  /** Most audio sent but not yet acknowledged, ms (default 2000). */
  windowMs?: number;
  backoff?: BackoffPolicy;
  /** While the server says accepting: false (no Characters), how often to ask again by
   * resuming, ms (default 15000). */
  acceptingRetryMs?: number;
  /** How long start() keeps trying to create the session while the server cannot be reached
   * (a wrong --url, a server not started), ms (default 30000); then it fails with UNREACHABLE.
   * Once the session exists, reconnects go on without a bound (a server restart). */
  connectTimeoutMs?: number;
  /** How long the stream waits for the account to get Characters again, ms (default 60000);
   * then it fails with INSUFFICIENT_CHARACTERS, naming the fix. */
  noCreditTimeoutMs?: number;
}

/** The command an operator runs to give an account Characters (docs/operations.md). */
const CREDIT_FIX = 'an operator adds Characters with `scribed accounts credit --account ACCOUNT_ID --characters N`';

export interface WordTime {
  word: string;
  startMs: number;
  endMs: number;
  confidence: number | null;
}

/** A final segment, session-wide times (the shape of a segment in the JSON transcript). */
export interface FinalSegment {
  segmentId: string;
  text: string;
  trigger?: string;
  startSample: string;
  endSample: string;
  startMs: number;
  endMs: number;
  words: WordTime[];
}

export interface PartialSegment {
  segmentId: string;
  text: string;
  startMs: number;
  endMs: number;
}

export interface StreamSummary {
  sessionId: string;
  transcriptionId: string;
  /** Session-wide capture cursor at the end (audio of an earlier run of a re-attached
   * client included). */
  capturedSamples: number;
  /** Samples this run captured from its input. */
  capturedThisRun: number;
  acknowledgedSamples: number;
  /** The server's capturedSamples in its `closed` event (null if the close was confirmed by
   * a later SESSION_CLOSED instead). */
  serverCapturedSamples: number | null;
  overflowSamples: number;
  /** Samples this client sent that the server reported filling with silence (`gap`). */
  gapSamples: number;
  reconnects: number;
  resumes: number;
  segments: number;
  /** The complete transcript from the server when it could be fetched, else the finals
   * this client received. */
  finals: FinalSegment[];
}

/** A failure the streamer cannot retry its way out of. */
export class StreamFatalError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'StreamFatalError';
  }
}

/** Transient: the server is unreachable or answered with a retryable status. */
class RetryableError extends Error {}

/** 16-64 printable ASCII characters (the server's rule), stable for a stream id. */
export function idempotencyKeyFor(streamId: string): string {
  return `stream-${createHash('sha256').update(streamId, 'utf8').digest('hex').slice(0, 40)}`;
}

/** What a fetch() rejection means, described without its message: a TypeError with a
 * `cause` is a network failure (refused, reset, DNS, TLS) and worth retrying, as is a timeout;
 * any other error means the request itself could not be built (an access key that is not a
 * valid header value, say), which no retry can mend. */
export function describeFetchError(err: unknown): { network: boolean; reason: string } {
  const e = (err ?? {}) as { name?: unknown; cause?: unknown };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return { network: true, reason: 'no answer in time' };
  if (err instanceof TypeError && e.cause !== undefined && e.cause !== null) {
    const cause = e.cause as { code?: unknown; message?: unknown; errors?: unknown };
    const inner = Array.isArray(cause.errors) ? (cause.errors[0] as { code?: unknown } | undefined) : undefined;
    const code = typeof cause.code === 'string' ? cause.code : typeof inner?.code === 'string' ? inner.code : typeof cause.message === 'string' ? cause.message.slice(0, 120) : 'unknown';
    return { network: true, reason: `network error (${code})` };
  }
  const name = typeof e.name === 'string' ? e.name : 'Error';
  return { network: false, reason: `the request could not be built (${name}); check that the access key is printable ASCII without spaces` };
}

/** An error's message if this module wrote it, else only its name: foreign messages (fetch,
 * ws, http) can quote header values. */
function safeMessage(err: unknown): string {
  if (err instanceof RetryableError || err instanceof StreamFatalError) return err.message;
  const e = err as { name?: unknown; code?: unknown } | null;
  return `${typeof e?.name === 'string' ? e.name : 'Error'}${typeof e?.code === 'string' ? ` ${e.code}` : ''}`;
}

interface Waiter {
  resolve: () => void;
  reject: (err: Error) => void;
}

export class SessionStreamer extends EventEmitter {
  private readonly opts: SessionStreamerOptions;
  private log: Logger;
  private readonly rate: number;
  private readonly bps: 1 | 2;
  private readonly ring: AudioRing;
  private readonly acct = new CaptureAccount();
  private readonly frameSamples: number;
  private readonly windowSamples: number;

  private sessionId = '';
  private transcriptionId = '';
  private needResume = false;
  private ws: WebSocket | null = null;
  private ready = false;
  private accepting = true;
  private maxPayloadBytes = 131072;
  private attempt = 0;
  private loop: Promise<void> | null = null;
  private stopped = false;
  private starting = false;
  /** Aborts HTTP requests in flight when the stream is aborted. */
  private readonly requests = new AbortController();
  private ending = false;
  private closeConfirmed = false;
  private serverClosed: { capturedSamples: number; segments: number } | null = null;
  private fatal: Error | null = null;
  private carry: Buffer | null = null;
  private capturedThisRun = 0;
  private overflowSamples = 0;
  /** Positions below this were dropped by overflow and sent as silence. */
  private silentBelow = 0;
  private gapSamples = 0;
  private lastOverflowLog = 0;
  private reconnects = 0;
  private resumes = 0;
  private readonly finals = new Map<string, FinalSegment>();
  private spaceWaiters: Waiter[] = [];
  private drainWaiters: Waiter[] = [];
  private closedWaiters: Waiter[] = [];
  private wake: (() => void) | null = null;
  private acceptingTimer: NodeJS.Timeout | null = null;
  /** When the server last went from accepting to not, for want of Characters; null while
   * it accepts. */
  private noCreditSince: number | null = null;
  private bufferedGauge = 0;
  /** This stream is counted in the shared `streams` gauge: end() and abort() can both run
   * (a caller aborts after a failed end), and abort() can come before start(), so the gauge
   * is released once, and only if it was taken. */
  private countedInGauge = false;

  constructor(opts: SessionStreamerOptions) {
    super();
    const enc = INPUT_ENCODINGS[opts.encoding];
    if (!enc) throw new RangeError(`unknown encoding ${opts.encoding}`);
    if (!/^https?:\/\//.test(opts.url)) throw new RangeError('url must be http(s)://host:port');
    this.opts = { onFull: 'block', frameMs: 100, windowMs: 2000, backoff: DEFAULT_BACKOFF, acceptingRetryMs: 15_000, connectTimeoutMs: 30_000, noCreditTimeoutMs: 60_000, ...opts };
    this.rate = enc.sampleRateHz;
    this.bps = enc.bytesPerSample;
    this.frameSamples = Math.max(1, Math.round((this.opts.frameMs! * this.rate) / 1000));
    this.windowSamples = Math.max(this.frameSamples, Math.round((this.opts.windowMs! * this.rate) / 1000));
    this.ring = new AudioRing(this.bps, opts.bufferSamples, 0, opts.encoding === 'mulaw_8000' ? 0xff : 0);
    this.log = opts.logger.child({ streamId: opts.streamId });
  }

  get id(): string {
    return this.sessionId;
  }

  // ------------------------------------------------------------------ public API

  /** Create (or re-attach to) the session and start the connection loop. Retries while the
   * server is unreachable; rejects on a refusal (bad key, conflict, closed session). */
  async start(): Promise<{ sessionId: string }> {
    if (this.loop || this.starting) throw new Error('start() was already called');
    this.starting = true;
    const giveUpAt = Date.now() + this.opts.connectTimeoutMs!;
    for (let attempt = 0; ; attempt++) {
      if (this.stopped) throw abortedError();
      try {
        await this.create();
        break;
      } catch (err) {
        if (this.stopped) throw abortedError();
        if (!(err instanceof RetryableError)) throw err;
        const delay = backoffDelay(attempt, this.opts.backoff);
        if (Date.now() + delay > giveUpAt) {
          throw new StreamFatalError(
            'UNREACHABLE',
            `could not create the session at ${this.opts.url} within ${Math.round(this.opts.connectTimeoutMs! / 1000)} s (${safeMessage(err)}): is scribed serve running there? Check --url`,
          );
        }
        this.log.warn({ err: safeMessage(err), delayMs: delay }, 'creating the session failed; retrying');
        await this.pause(delay);
      }
    }
    // Aborted while the create was answered: the session exists but is left as it is (a
    // restarted client with the same stream id re-attaches to it).
    if (this.stopped) throw abortedError();
    this.opts.metrics?.streams.inc();
    this.countedInGauge = true;
    this.loop = this.connectionLoop();
    return { sessionId: this.sessionId };
  }

  /** Buffer captured audio (`encoding` bytes). Resolves once buffered; with onFull 'block'
   * it waits while the ring is full (the server is not acknowledging). */
  async write(chunk: Buffer): Promise<void> {
    if (this.fatal) throw this.fatal;
    if (this.ending) throw new Error('write() after end()');
    let data = chunk;
    if (this.carry) {
      data = Buffer.concat([this.carry, chunk]);
      this.carry = null;
    }
    const rem = data.length % this.bps;
    if (rem !== 0) {
      // A 16-bit sample split across two reads of a pipe: keep its first byte.
      this.carry = Buffer.from(data.subarray(data.length - rem));
      data = data.subarray(0, data.length - rem);
    }
    let off = 0;
    while (off < data.length) {
      let room = this.ring.free;
      if (this.opts.onFull === 'block') {
        while (room === 0) {
          await this.waitFor(this.spaceWaiters);
          room = this.ring.free;
        }
      } else {
        room = this.ring.capacity;
      }
      const piece = data.subarray(off, off + room * this.bps);
      off += piece.length;
      const samples = piece.length / this.bps;
      const dropped = this.ring.push(piece);
      this.acct.capture(samples);
      this.capturedThisRun += samples;
      this.opts.metrics?.capturedSeconds.inc(samples / this.rate);
      if (dropped > 0) this.noteOverflow(dropped);
      this.updateBuffered();
    }
    this.pump();
  }

  /** Flush everything, close the session, wait for `closed`; returns the summary. */
  async end(): Promise<StreamSummary> {
    if (!this.loop) throw new Error('end() before start()');
    if (this.carry) {
      this.log.warn({ bytes: this.carry.length }, 'input ended inside a sample; the partial sample is dropped');
      this.carry = null;
    }
    this.ending = true;
    this.pump();
    try {
      if (!this.closeConfirmed) await this.waitFor(this.closedWaiters);
    } finally {
      this.stopped = true;
      this.wake?.();
      this.clearAcceptingTimer();
      await this.loop.catch(() => undefined);
      this.releaseGauges();
    }
    const finals = await this.fetchTranscript().catch((err: Error) => {
      this.log.warn({ err: err.message }, 'could not fetch the server transcript; summary has the finals received');
      return [...this.finals.values()].sort((a, b) => segIndex(a.segmentId) - segIndex(b.segmentId));
    });
    return {
      sessionId: this.sessionId,
      transcriptionId: this.transcriptionId,
      capturedSamples: this.acct.captured,
      capturedThisRun: this.capturedThisRun,
      acknowledgedSamples: this.acct.acknowledged,
      serverCapturedSamples: this.serverClosed?.capturedSamples ?? null,
      overflowSamples: this.overflowSamples,
      gapSamples: this.gapSamples,
      reconnects: this.reconnects,
      resumes: this.resumes,
      segments: this.serverClosed?.segments ?? finals.length,
      finals,
    };
  }

  /** Stop without closing the session (it stays PAUSED on the server and can be resumed by
   * a restarted client with the same stream id). Unacknowledged audio is lost to this run. */
  async abort(): Promise<void> {
    this.stopped = true;
    this.ending = true;
    this.requests.abort();
    this.clearAcceptingTimer();
    this.ws?.terminate();
    this.wake?.();
    const err = new Error('stream aborted');
    for (const list of [this.spaceWaiters, this.drainWaiters, this.closedWaiters]) for (const w of list.splice(0)) w.reject(err);
    await this.loop?.catch(() => undefined);
    this.releaseGauges();
  }

  /** Counters so far (for progress logs and tests). */
  stats() {
    return {
      sessionId: this.sessionId,
      captured: this.acct.captured,
      acknowledged: this.acct.acknowledged,
      sent: this.acct.sendPos,
      buffered: this.ring.length,
      overflowSamples: this.overflowSamples,
      gapSamples: this.gapSamples,
      reconnects: this.reconnects,
      resumes: this.resumes,
      connected: this.ready,
    };
  }

  /** Break the current socket as a network fault would (tests, operators' drills). */
  cutSocket(): void {
    this.ws?.terminate();
  }

  // ------------------------------------------------------------------ HTTP

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return { accessKey: this.opts.accessKey, 'content-type': 'application/json', ...extra };
  }

  private async request<T = SessionAnswer>(method: string, path: string, body: unknown, extra: Record<string, string> = {}): Promise<{ status: number; json: ApiBody<T>; headers: Headers }> {
    let res: Response;
    try {
      res = await fetch(`${this.opts.url}${path}`, {
        method,
        headers: this.headers(extra),
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        // A resume waits for the server to restore the session's open segment after a restart.
        signal: AbortSignal.any([AbortSignal.timeout(60_000), this.requests.signal]),
      });
    } catch (err) {
      const failure = describeFetchError(err);
      // Only the description goes into messages and logs: the error's own message can quote
      // a header value (the access key).
      if (failure.network) throw new RetryableError(`${method} ${path}: ${failure.reason}`);
      throw new StreamFatalError('VALIDATION_FAILED', `${method} ${path}: ${failure.reason}`);
    }
    const json = readBody<T>(await res.text());
    if (res.status >= 500 || res.status === 429) throw new RetryableError(`${method} ${path}: HTTP ${res.status} ${json?.message ?? ''}`);
    return { status: res.status, json, headers: res.headers };
  }

  private async create(): Promise<void> {
    const body: Record<string, unknown> = { options: { ...(this.opts.sessionOptions ?? {}), inputEncoding: this.opts.encoding } };
    if (this.opts.title !== undefined) body.title = this.opts.title;
    if (this.opts.call) {
      body.callId = this.opts.call.callId;
      body.speaker = this.opts.call.speaker;
    }
    const { status, json, headers } = await this.request('POST', `${API}/stt/realtime/sessions`, body, { 'Idempotency-Key': idempotencyKeyFor(this.opts.streamId) });
    if (status !== 200) throw new StreamFatalError(codeOf(json), `creating the session failed: HTTP ${status} ${json?.message ?? ''}`, status);
    const data = answerData(json, 'creating the session');
    this.sessionId = data.sessionId;
    this.transcriptionId = data.transcriptionId;
    this.log = this.log.child({ sessionId: this.sessionId });
    if (data.status !== 'RECORDING' && data.status !== 'PAUSED') {
      throw new StreamFatalError('SESSION_CLOSED', `stream id ${this.opts.streamId} belongs to session ${this.sessionId}, which is closed (${data.status}); use a new stream id`);
    }
    if (headers.get('idempotent-replayed') === 'true' || wireSamples(data.capturedSamples) > 0 || data.status === 'PAUSED' || data.epoch > 1) {
      // A restarted client. The session's stored count can lag what its live socket holds
      // (progress is saved about once a second), so the resume's answer is the truth: it
      // retires any socket of the earlier run and gives the count to continue after.
      const { status: rs, json: rj } = await this.request('POST', `${API}/stt/realtime/sessions/${this.sessionId}/resume`, {});
      if (rs !== 200) throw new StreamFatalError(codeOf(rj), `re-attaching failed: HTTP ${rs} ${rj?.message ?? ''}`, rs);
      const resumed = answerData(rj, 're-attaching');
      const held = wireSamples(resumed.capturedSamples);
      this.acct.reattach(held);
      this.ring.reset(held);
      this.resumes += 1;
      this.opts.metrics?.resumes.inc();
      this.log.info({ capturedSamples: held, epoch: resumed.epoch }, 're-attached to an existing session');
    } else {
      this.log.info('session created');
    }
  }

  private async resume(): Promise<void> {
    const { status, json } = await this.request('POST', `${API}/stt/realtime/sessions/${this.sessionId}/resume`, { capturedSamples: String(this.acct.captured) });
    if (status === 409 && codeOf(json) === 'SESSION_CLOSED' && this.ending) {
      // Our close went through; its `closed` event was lost with the socket.
      this.confirmClosed(null);
      return;
    }
    if (status !== 200) throw new StreamFatalError(codeOf(json), `resume failed: HTTP ${status} ${json?.message ?? ''}`, status);
    this.resumes += 1;
    this.opts.metrics?.resumes.inc();
    this.needResume = false;
    const data = answerData(json, 'resume');
    this.log.info({ epoch: data.epoch, serverCaptured: data.capturedSamples, missingSamples: data.missingSamples }, 'session resumed');
  }

  private async fetchTranscript(): Promise<FinalSegment[]> {
    const { status, json } = await this.request<never>('GET', `${API}/stt/transcriptions/${this.transcriptionId}/transcript?format=json`, undefined);
    if (status !== 200 || !Array.isArray((json as Partial<TranscriptJson>).segments)) throw new Error(`HTTP ${status}`);
    const triggers = new Map([...this.finals.values()].map((f) => [f.segmentId, f.trigger]));
    return (json as TranscriptJson).segments.map((s) => ({
      segmentId: s.id,
      text: s.text,
      ...(triggers.get(s.id) ? { trigger: triggers.get(s.id) } : {}),
      startSample: s.startSample,
      endSample: s.endSample,
      startMs: s.startMs,
      endMs: s.endMs,
      words: s.words,
    }));
  }

  // ------------------------------------------------------------------ connection loop

  private async connectionLoop(): Promise<void> {
    // A fatal failure (e.g. no Characters within the bound) ends the loop: no more resumes.
    while (!this.stopped && !this.closeConfirmed && !this.fatal) {
      let failed = false;
      try {
        if (this.needResume) await this.resume();
        // abort() during the resume: no new socket (it would flush and close the session,
        // since abort() also stops writes by marking the stream as ending).
        if (this.stopped || this.closeConfirmed) break;
        await this.runSocket();
      } catch (err) {
        if (err instanceof StreamFatalError) {
          this.failFatal(err);
          return;
        }
        failed = true;
        this.log.warn({ err: safeMessage(err) }, 'connection attempt failed');
      }
      if (this.stopped || this.closeConfirmed || this.fatal) break;
      this.needResume = true;
      this.reconnects += 1;
      this.opts.metrics?.reconnects.inc();
      const delay = backoffDelay(this.attempt, this.opts.backoff);
      this.attempt += 1;
      this.log.info({ delayMs: delay, attempt: this.attempt, failed }, 'reconnecting');
      await this.pause(delay);
    }
  }

  /** Wait `ms`, or less if abort() or end() wakes the stream. */
  private async pause(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
    this.wake = null;
  }

  /** One socket's life: resolves when it closes. */
  private runSocket(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const wsUrl = `${this.opts.url.replace(/^http/, 'ws')}${API}/stt/realtime/sessions/${this.sessionId}/stream`;
      let ws: WebSocket;
      try {
        ws = new WebSocket(wsUrl, { headers: { accessKey: this.opts.accessKey }, handshakeTimeout: 10_000 });
      } catch (err) {
        // The upgrade request could not be built (an invalid header value): no retry helps.
        reject(new StreamFatalError('VALIDATION_FAILED', `the socket request could not be built (${safeMessage(err)}); check that the access key is printable ASCII without spaces`));
        return;
      }
      this.ws = ws;
      let settled = false;
      const done = (err?: Error) => {
        if (settled) return;
        settled = true;
        if (this.ws === ws) this.ws = null;
        this.ready = false;
        this.acct.rewind();
        if (err) reject(err);
        else resolve();
      };
      ws.on('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => {
          const json = readBody(body);
          const code = codeOf(json);
          const status = res.statusCode ?? 0;
          if (code === 'SESSION_CLOSED' && this.ending) {
            this.confirmClosed(null);
            done();
          } else if (status === 401 || status === 404 || code === 'SESSION_CLOSED') {
            done(new StreamFatalError(code, `socket refused: HTTP ${status} ${json?.message ?? ''}`, status));
          } else {
            // RESUME_REQUIRED, SESSION_BUSY, 5xx: resume and try again.
            done(new RetryableError(`socket refused: HTTP ${status} ${json?.message ?? ''}`));
          }
          ws.terminate();
        });
      });
      ws.on('message', (data, isBinary) => {
        if (isBinary) return;
        const parsed = parseServerEvent(data.toString());
        if (!parsed.ok) {
          // An event type this client does not know is a newer server's: ignored. A known
          // type without its fields is the server's fault, logged and skipped.
          if (parsed.kind === 'invalid') this.log.warn({ reason: parsed.reason }, 'server sent an event this client cannot read');
          return;
        }
        try {
          this.onEvent(ws, parsed.event);
        } catch (err) {
          this.log.error({ err }, 'handling a server event failed');
          ws.terminate();
        }
      });
      ws.on('error', (err) => {
        this.log.debug({ err: err.message }, 'socket error');
      });
      ws.on('close', (code, reason) => {
        this.log.info({ code, reason: reason.toString() }, 'socket closed');
        done();
      });
    });
  }

  private onEvent(ws: WebSocket, e: ServerEvent): void {
    switch (e.type) {
      case 'ready': {
        const added = this.acct.onReady(e.epoch, e.sampleOffset, wireSamples(e.capturedSamples));
        this.ring.release(this.acct.acknowledged);
        if (added > 0) this.opts.metrics?.acknowledgedSeconds.inc(added / this.rate);
        this.updateBuffered();
        this.accepting = e.accepting !== false;
        if (this.accepting) this.noCreditSince = null;
        if (typeof e.maxFramePayloadBytes === 'number') this.maxPayloadBytes = e.maxFramePayloadBytes;
        this.ready = true;
        this.attempt = 0;
        this.log.info({ epoch: e.epoch, capturedSamples: e.capturedSamples, resend: this.acct.unacknowledged }, 'stream ready');
        if (!this.accepting) this.scheduleAcceptingRetry();
        this.releaseWaiters();
        this.pump();
        return;
      }
      case 'ack': {
        if (e.epoch !== this.acct.epoch) return;
        const added = this.acct.onAck(wireSamples(e.capturedSamples));
        if (added > 0) {
          this.ring.release(this.acct.acknowledged);
          this.opts.metrics?.acknowledgedSeconds.inc(added / this.rate);
          this.updateBuffered();
        }
        this.releaseWaiters();
        this.pump();
        return;
      }
      case 'partial':
        this.emit('partial', { segmentId: e.segmentId, text: e.text, startMs: e.start.ms, endMs: e.end.ms } satisfies PartialSegment);
        return;
      case 'final': {
        const seg: FinalSegment = {
          segmentId: e.segmentId,
          text: e.text,
          trigger: e.trigger,
          startSample: e.start.sample,
          endSample: e.end.sample,
          startMs: e.start.ms,
          endMs: e.end.ms,
          words: (e.words ?? []).map((w) => ({ word: w.word, startMs: w.start.ms, endMs: w.end.ms, confidence: w.confidence })),
        };
        const known = this.finals.has(seg.segmentId);
        this.finals.set(seg.segmentId, seg);
        if (!known) {
          this.opts.metrics?.finals.inc();
          this.emit('final', seg);
        }
        return;
      }
      case 'accepting':
        this.accepting = e.accepting !== false;
        if (this.accepting) this.noCreditSince = null;
        this.log.warn({ accepting: this.accepting, reason: e.reason }, 'server changed accepting');
        if (!this.accepting) {
          this.acct.rewind();
          // Only Characters need someone to act; a shutdown ends the socket, and a node's
          // recognition backlog says accepting: true once it drains.
          if (e.reason === 'INSUFFICIENT_CHARACTERS' || e.reason === undefined) this.scheduleAcceptingRetry();
        } else this.pump();
        return;
      case 'notice':
        this.log.info({ code: e.code, message: e.message }, 'server notice');
        this.emit('notice', { code: e.code, message: e.message });
        return;
      case 'gap': {
        // This client never leaves holes: a gap means the server lost frames it was sent
        // (refused or dropped after a failure) and went on with a later one.
        const lost = this.acct.realAudioInGap({ epoch: e.epoch, sampleOffset: e.sampleOffset, samples: e.samples }, this.silentBelow);
        if (!lost) {
          this.log.warn({ samples: e.samples, sampleOffset: e.sampleOffset, epoch: e.epoch }, 'server filled a gap with silence (no audio of this client in it)');
          return;
        }
        const samples = lost.to - lost.from;
        this.gapSamples += samples;
        this.opts.metrics?.gapSamples.inc(samples);
        this.log.error(
          { fromSample: lost.from, toSample: lost.to, samples, epoch: e.epoch, sampleOffset: e.sampleOffset, gapSamplesTotal: this.gapSamples },
          'the server filled audio this client sent with silence; reconnecting to resume',
        );
        // Frames after the lost ones may be refused or taken; a resume says exactly what the
        // server holds and the re-send goes on from there (nothing is sent twice).
        this.dropSocket(ws);
        return;
      }
      case 'error':
        this.log.warn({ code: e.code, message: e.message, fatal: e.fatal }, 'server error event');
        if (['NOT_ACCEPTING', 'INSUFFICIENT_CHARACTERS', 'STALE_EPOCH', 'GAP_TOO_LARGE'].includes(e.code)) this.acct.rewind();
        else if (e.fatal !== true) {
          // A frame the server failed to take for another reason (storage, recognizer, a
          // malformed frame): frames already in flight after it would land past a hole and be
          // filled with silence. Resume instead: its count says where to re-send from.
          this.log.error({ code: e.code }, 'the server did not take a frame; reconnecting to resume');
          this.dropSocket(ws);
        }
        if (this.listenerCount('error') > 0) this.emit('error', new StreamFatalError(e.code, e.message));
        return;
      case 'closed':
        this.confirmClosed({ capturedSamples: wireSamples(e.capturedSamples), segments: e.segments });
        ws.close(1000);
        return;
      default:
        return; // pong, committed, future events
    }
  }

  /** Send what the window allows; once everything is acknowledged during end(), close. */
  private pump(): void {
    const ws = this.ws;
    // Once stopped (aborted, or ended) nothing more is sent, above all no `close`.
    if (this.stopped || !ws || !this.ready || ws.readyState !== WebSocket.OPEN) return;
    if (this.accepting) {
      const maxFrame = Math.min(this.frameSamples, Math.floor(this.maxPayloadBytes / this.bps));
      for (;;) {
        const plan = this.acct.nextFrame(maxFrame, this.windowSamples);
        if (!plan) break;
        const read = this.ring.read(plan.from, plan.samples);
        if (read.samples === 0) break;
        const frame = { ...plan, samples: read.samples };
        ws.send(encodeAudioFrame({ epoch: frame.epoch, sampleOffset: frame.sampleOffset, payload: read.bytes }));
        this.acct.markSent(frame);
        this.opts.metrics?.sentSeconds.inc(read.samples / this.rate);
      }
    }
    if (this.ending && this.acct.unacknowledged === 0 && !this.closeSent.has(ws)) {
      this.closeSent.add(ws);
      ws.send(JSON.stringify({ type: 'close' }));
      this.log.info({ capturedSamples: this.acct.captured }, 'all audio acknowledged; closing the session');
    }
  }

  private readonly closeSent = new WeakSet<WebSocket>();

  /** Give up this socket: nothing more is sent on it, and the connection loop resumes (once,
   * whether the server also closes it, with 1011 say, or not). */
  private dropSocket(ws: WebSocket): void {
    if (this.ws === ws) this.ready = false;
    ws.terminate();
  }

  private confirmClosed(closed: { capturedSamples: number; segments: number } | null): void {
    if (closed) this.serverClosed = closed;
    this.closeConfirmed = true;
    for (const w of this.closedWaiters.splice(0)) w.resolve();
  }

  private failFatal(err: Error): void {
    this.fatal = err;
    this.log.error({ err: err.message }, 'stream failed');
    for (const list of [this.spaceWaiters, this.drainWaiters, this.closedWaiters]) for (const w of list.splice(0)) w.reject(err);
    if (this.listenerCount('error') > 0) this.emit('error', err);
  }

  /** The server stopped accepting for want of Characters: ask again by resuming every
   * acceptingRetryMs, and give up once noCreditTimeoutMs has passed without Characters. */
  private scheduleAcceptingRetry(): void {
    if (this.acceptingTimer) return;
    this.noCreditSince ??= Date.now();
    const left = this.noCreditSince + this.opts.noCreditTimeoutMs! - Date.now();
    if (left <= 0) {
      this.failFatal(
        new StreamFatalError('INSUFFICIENT_CHARACTERS', `the account has no Characters left and got none within ${Math.round(this.opts.noCreditTimeoutMs! / 1000)} s; ${CREDIT_FIX}, then run again with the same --stream-id to continue the session`),
      );
      this.ws?.close(1000);
      return;
    }
    this.acceptingTimer = setTimeout(() => {
      this.acceptingTimer = null;
      if (this.accepting) return;
      if (this.noCreditSince !== null && Date.now() - this.noCreditSince >= this.opts.noCreditTimeoutMs!) {
        this.scheduleAcceptingRetry();
        return;
      }
      // Closing without `close` pauses the session; the loop resumes, and the resume (and
      // the next ready) say whether the account can pay again.
      if (!this.accepting) this.ws?.close(1000);
    }, Math.min(this.opts.acceptingRetryMs!, left));
    this.acceptingTimer.unref();
  }

  private clearAcceptingTimer(): void {
    if (this.acceptingTimer) clearTimeout(this.acceptingTimer);
    this.acceptingTimer = null;
  }

  private waitFor(list: Waiter[]): Promise<void> {
    if (this.fatal) return Promise.reject(this.fatal);
    return new Promise<void>((resolve, reject) => list.push({ resolve, reject }));
  }

  private releaseWaiters(): void {
    if (this.ring.free > 0) for (const w of this.spaceWaiters.splice(0)) w.resolve();
  }

  private noteOverflow(dropped: number): void {
    this.overflowSamples += dropped;
    this.silentBelow = Math.max(this.silentBelow, this.ring.start);
    this.opts.metrics?.overflows.inc();
    this.opts.metrics?.overflowSeconds.inc(dropped / this.rate);
    const now = Date.now();
    if (now - this.lastOverflowLog >= 5000) {
      this.lastOverflowLog = now;
      this.log.warn(
        { droppedSamples: dropped, overflowSamplesTotal: this.overflowSamples, bufferSamples: this.ring.capacity },
        'ring buffer full: oldest unacknowledged audio dropped (it is sent as silence to keep the timeline)',
      );
    }
  }

  private releaseGauges(): void {
    if (this.countedInGauge) this.opts.metrics?.streams.dec();
    this.countedInGauge = false;
    this.setBufferedGauge(0);
  }

  private updateBuffered(): void {
    this.setBufferedGauge(this.acct.unacknowledged / this.rate);
  }

  private setBufferedGauge(seconds: number): void {
    // The gauge is shared by every stream of the process: move it by this stream's change.
    this.opts.metrics?.bufferedSeconds.inc(seconds - this.bufferedGauge);
    this.bufferedGauge = seconds;
  }
}

/** An HTTP answer as this client reads it: the spec's envelope (`message` begins with the
 * error code), or a body that is not JSON kept as its message. */
interface ApiBody<T> {
  message?: string;
  data?: T;
}

/** The `data` of a session's create and resume answers: the fields this client reads. */
interface SessionAnswer {
  sessionId: string;
  transcriptionId: string;
  status: string;
  epoch: number;
  capturedSamples: string | number;
  missingSamples?: string | number;
}

function readBody<T>(text: string): ApiBody<T> {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as ApiBody<T>;
  } catch {
    // not JSON: kept as the message below
  }
  return { message: text };
}

function answerData<T>(json: ApiBody<T>, what: string): T {
  if (typeof json.data !== 'object' || json.data === null) throw new StreamFatalError('UNKNOWN', `${what}: the server's answer has no data`);
  return json.data;
}

function codeOf(json: ApiBody<unknown>): string {
  const m = typeof json.message === 'string' ? /^([A-Z_]+)/.exec(json.message) : null;
  return m ? m[1]! : 'UNKNOWN';
}

/** Sort key of a segment id; an id that is not one sorts last. */
function segIndex(id: string): number {
  return segmentIndex(id) ?? Number.MAX_SAFE_INTEGER;
}

function abortedError(): StreamFatalError {
  return new StreamFatalError('ABORTED', 'the stream was aborted before it started');
}
