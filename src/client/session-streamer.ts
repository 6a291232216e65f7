// SessionStreamer: streams captured audio to a scribed server over the socket protocol
// (docs/protocol.md) and survives socket loss and server restarts without losing or
// duplicating a sample (docs/ingest.md). It coordinates four parts:
//
// - session-http.ts: create (with an Idempotency-Key derived from a stable stream id, so a
//   restarted client re-attaches to its session instead of opening a second one), resume and
//   the transcript; the access key travels in the `accessKey` header only, never in a URL.
// - stream-connection.ts: one socket at a time, reconnects with backoff and jitter.
// - stream-events.ts: what each server event changes and what is done about it (pure).
// - send-window.ts: audio not yet acknowledged stays in a bounded ring; after a loss the client
//   resumes with its capture cursor and re-sends, in the new epoch, exactly what the server
//   does not hold (capture-accounting.ts).
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import WebSocket from 'ws';
import { INPUT_ENCODINGS, silenceByteOf } from '../core/audio/encodings.js';
import type { ServerEvent } from '../core/protocol.js';
import { withDefaults, type SessionStreamerOptions, type StreamSummary, type StreamerOptions } from './stream-options.js';
import { SessionHttpClient, StreamFatalError } from './session-http.js';
import { StreamConnection } from './stream-connection.js';
import { StreamEventState, type Decision } from './stream-events.js';
import { SendWindow } from './send-window.js';
import { CreditWait } from './credit-wait.js';
import { StreamGauges } from './stream-gauges.js';

export { StreamFatalError, describeFetchError, idempotencyKeyFor } from './session-http.js';
export type { FinalSegment, PartialSegment, WordTime } from './stream-events.js';
export type { SessionStreamerOptions, StreamSummary } from './stream-options.js';

export class SessionStreamer extends EventEmitter {
  private readonly opts: StreamerOptions;
  private log: Logger;
  private readonly rate: number;
  private readonly state: StreamEventState;
  private readonly window: SendWindow;
  private readonly http: SessionHttpClient;
  private readonly connection: StreamConnection;

  private sessionId = '';
  private transcriptionId = '';
  private ws: WebSocket | null = null;
  private readonly closeSent = new WeakSet<WebSocket>();
  private ready = false;
  private loop: Promise<void> | null = null;
  private starting = false;
  /** Aborted, or ended: nothing more is sent, above all no `close`. */
  private stopped = false;
  private ending = false;
  private closeConfirmed = false;
  private serverClosed: { capturedSamples: number; segments: number } | null = null;
  private fatal: Error | null = null;
  private closedWaiters: Array<{ resolve: () => void; reject: (err: Error) => void }> = [];
  private readonly creditWait: CreditWait;
  private readonly gauges: StreamGauges;
  /** When the last ack came (the ack gap of a move is measured from it). */
  private lastAckAt = Date.now();
  /** A move to another node in progress: since when, and the epoch it left. */
  private movedAt: { at: number; lastAckAt: number; epoch: number } | null = null;

  constructor(opts: SessionStreamerOptions) {
    super();
    const enc = INPUT_ENCODINGS[opts.encoding];
    if (!enc) throw new RangeError(`unknown encoding ${opts.encoding}`);
    if (!/^https?:\/\//.test(opts.url)) throw new RangeError('url must be http(s)://host:port');
    this.opts = withDefaults(opts);
    this.rate = enc.sampleRateHz;
    this.state = new StreamEventState(this.rate);
    const o = this.opts;
    this.window = new SendWindow(
      {
        bytesPerSample: enc.bytesPerSample,
        sampleRateHz: this.rate,
        bufferSamples: opts.bufferSamples,
        silenceByte: silenceByteOf(opts.encoding),
        frameMs: o.frameMs,
        windowMs: o.windowMs,
        onFull: o.onFull,
      },
      this.state.acct,
    );
    this.log = opts.logger.child({ streamId: opts.streamId });
    this.http = new SessionHttpClient(opts.url, opts.accessKey);
    this.gauges = new StreamGauges(opts.metrics, this.rate);
    this.creditWait = new CreditWait(
      this.state,
      { timeoutMs: o.noCreditTimeoutMs, retryMs: o.acceptingRetryMs },
      {
        giveUp: (err) => {
          this.failFatal(err);
          this.ws?.close(1000);
        },
        askAgain: () => this.ws?.close(1000),
      },
    );
    this.connection = new StreamConnection(
      { url: opts.url, accessKey: opts.accessKey, backoff: o.backoff },
      () => this.sessionId,
      () => this.log,
      {
        finished: () => this.stopped || this.closeConfirmed || this.fatal !== null,
        ending: () => this.ending,
        resume: () => this.resume(),
        opened: (ws) => (this.ws = ws),
        event: (ws, e) => this.onEvent(ws, e),
        ended: (ws) => {
          // A socket a move replaced ends after its successor took over: nothing changes.
          if (this.ws !== ws && this.ws !== null) return;
          this.ws = null;
          this.ready = false;
          this.state.acct.rewind();
        },
        closedByHandshake: () => this.confirmClosed(null),
        fatal: (err) => this.failFatal(err),
        reconnecting: () => this.gauges.reconnected(),
      },
    );
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
    await this.connection.establish(
      () => this.create(),
      () => this.stopped,
      abortedError,
      this.opts.connectTimeoutMs,
    );
    // Aborted while the create was answered: the session exists but is left as it is (a
    // restarted client with the same stream id re-attaches to it).
    if (this.stopped) throw abortedError();
    this.gauges.started();
    this.loop = this.connection.run();
    return { sessionId: this.sessionId };
  }

  /** Buffer captured audio (`encoding` bytes). Resolves once buffered; with onFull 'block'
   * it waits while the ring is full (the server is not acknowledging). */
  async write(chunk: Buffer): Promise<void> {
    if (this.fatal) throw this.fatal;
    if (this.ending) throw new Error('write() after end()');
    await this.window.write(chunk, (samples, dropped) => {
      this.gauges.captured(samples);
      if (dropped > 0) {
        this.state.silentBelow = Math.max(this.state.silentBelow, this.window.ring.start);
        this.gauges.overflowed(dropped, this.window.ring.capacity, this.log);
      }
      this.gauges.setBuffered(this.state.acct.unacknowledged);
    });
    this.pump();
  }

  /** Flush everything, close the session, wait for `closed`; returns the summary. */
  async end(): Promise<StreamSummary> {
    if (!this.loop) throw new Error('end() before start()');
    const partial = this.window.dropCarry();
    if (partial > 0) this.log.warn({ bytes: partial }, 'input ended inside a sample; the partial sample is dropped');
    this.ending = true;
    this.pump();
    try {
      if (!this.closeConfirmed) await this.waitClosed();
    } finally {
      this.stopped = true;
      this.connection.wakeUp();
      this.creditWait.clear();
      await this.loop.catch(() => undefined);
      this.gauges.release();
    }
    const finals = await this.http.transcript(this.transcriptionId, this.state.finals).catch((err: Error) => {
      this.log.warn({ err: err.message }, 'could not fetch the server transcript; summary has the finals received');
      return this.state.finalsInOrder();
    });
    const acct = this.state.acct;
    return {
      sessionId: this.sessionId,
      transcriptionId: this.transcriptionId,
      capturedSamples: acct.captured,
      capturedThisRun: this.gauges.capturedThisRun,
      acknowledgedSamples: acct.acknowledged,
      serverCapturedSamples: this.serverClosed?.capturedSamples ?? null,
      overflowSamples: this.gauges.overflowSamples,
      gapSamples: this.state.gapSamples,
      reconnects: this.gauges.reconnects,
      resumes: this.gauges.resumes,
      segments: this.serverClosed?.segments ?? finals.length,
      finals,
    };
  }

  /** Stop without closing the session (it stays PAUSED on the server and can be resumed by
   * a restarted client with the same stream id). Unacknowledged audio is lost to this run. */
  async abort(): Promise<void> {
    this.stopped = true;
    this.ending = true;
    this.http.abort();
    this.creditWait.clear();
    this.ws?.terminate();
    this.connection.wakeUp();
    this.rejectWaiters(new Error('stream aborted'));
    await this.loop?.catch(() => undefined);
    this.gauges.release();
  }

  /** Counters so far (for progress logs and tests). */
  stats() {
    const acct = this.state.acct;
    return {
      sessionId: this.sessionId,
      captured: acct.captured,
      acknowledged: acct.acknowledged,
      sent: acct.sendPos,
      buffered: this.window.ring.length,
      overflowSamples: this.gauges.overflowSamples,
      gapSamples: this.state.gapSamples,
      reconnects: this.gauges.reconnects,
      resumes: this.gauges.resumes,
      connected: this.ready,
    };
  }

  /** Break the current socket as a network fault would (tests, operators' drills). */
  cutSocket(): void {
    this.ws?.terminate();
  }

  // ------------------------------------------------------------------ session requests

  private async create(): Promise<void> {
    const o = this.opts;
    const created = await this.http.create({
      streamId: o.streamId,
      encoding: o.encoding,
      title: o.title,
      sessionOptions: o.sessionOptions,
      call: o.call,
    });
    this.sessionId = created.sessionId;
    this.transcriptionId = created.transcriptionId;
    this.log = this.log.child({ sessionId: this.sessionId });
    if (created.status !== 'RECORDING' && created.status !== 'PAUSED') {
      throw new StreamFatalError(
        'SESSION_CLOSED',
        `stream id ${o.streamId} belongs to session ${this.sessionId}, which is closed (${created.status}); use a new stream id`,
      );
    }
    if (!created.earlierRun) {
      this.log.info('session created');
      return;
    }
    // A restarted client. The session's stored count can lag what its live socket holds
    // (progress is saved about once a second), so the resume's answer is the truth: it
    // retires any socket of the earlier run and gives the count to continue after.
    const resumed = await this.http.resume(this.sessionId, undefined, 're-attaching');
    if (resumed.closed) return; // not asked for: a re-attach never takes SESSION_CLOSED as an answer
    this.window.reattach(resumed.capturedSamples);
    this.gauges.resumed();
    this.log.info({ capturedSamples: resumed.capturedSamples, epoch: resumed.epoch }, 're-attached to an existing session');
  }

  private async resume(): Promise<void> {
    const resumed = await this.http.resume(this.sessionId, this.state.acct.captured, 'resume', this.ending);
    if (resumed.closed) {
      // Our close went through; its `closed` event was lost with the socket.
      this.confirmClosed(null);
      return;
    }
    this.gauges.resumed();
    this.log.info(
      { epoch: resumed.epoch, serverCaptured: resumed.capturedSamples, missingSamples: resumed.missingSamples },
      'session resumed',
    );
  }

  // ------------------------------------------------------------------ server events

  private onEvent(ws: WebSocket, e: ServerEvent): void {
    // A socket a move replaced may still bring acks of its epoch (ignored once the new
    // epoch is ready) and results; its other news (accepting, errors, a second reconnect)
    // is about a socket no longer used.
    if (ws !== this.ws && e.type !== 'ack' && e.type !== 'final' && e.type !== 'partial') return;
    if (e.type === 'ack' && this.movedAt !== null) this.afterMove(e);
    for (const d of this.state.apply(e, Date.now())) this.carryOut(ws, d);
  }

  /** The first ack of the new epoch after a move: the gap since the last ack before it. */
  private afterMove(e: Extract<ServerEvent, { type: 'ack' }>): void {
    if (this.movedAt === null) return;
    if (e.epoch === this.movedAt.epoch) {
      this.movedAt.lastAckAt = Date.now();
      return;
    }
    const now = Date.now();
    this.log.info(
      { ackGapMs: now - this.movedAt.lastAckAt, moveMs: now - this.movedAt.at, epoch: e.epoch },
      'moved to another node: first ack there',
    );
    this.movedAt = null;
  }

  private carryOut(ws: WebSocket, d: Decision): void {
    const m = this.opts.metrics;
    switch (d.kind) {
      case 'acknowledged':
        this.lastAckAt = Date.now();
        this.window.released();
        if (d.samples > 0) m?.acknowledgedSeconds.inc(d.samples / this.rate);
        this.gauges.setBuffered(this.state.acct.unacknowledged);
        return;
      case 'ready':
        this.ready = true;
        this.connection.connected();
        return;
      case 'wait-for-credit':
        this.creditWait.schedule();
        return;
      case 'send':
        this.window.released();
        this.pump();
        return;
      case 'partial':
        this.emit('partial', d.segment);
        return;
      case 'final':
        m?.finals.inc();
        this.emit('final', d.segment);
        return;
      case 'notice':
        this.emit('notice', { code: d.code, message: d.message });
        return;
      case 'server-error':
        if (this.listenerCount('error') > 0) this.emit('error', new StreamFatalError(d.code, d.message));
        return;
      case 'lost':
        m?.gapSamples.inc(d.samples);
        return;
      case 'move':
        // A close already sent on this socket is being carried out there; nothing to move.
        if (ws !== this.ws || this.closeSent.has(ws) || this.stopped) return;
        // Nothing more is sent on it: the resume that starts the move fences it.
        this.ready = false;
        this.state.acct.rewind();
        this.movedAt = { at: Date.now(), lastAckAt: this.lastAckAt, epoch: this.state.acct.epoch };
        this.connection.handOver(ws);
        return;
      case 'drop-socket':
        // Nothing more is sent on it, and the connection loop resumes (once, whether the
        // server also closes it, with 1011 say, or not).
        if (this.ws === ws) this.ready = false;
        ws.terminate();
        return;
      case 'closed':
        this.confirmClosed({ capturedSamples: d.capturedSamples, segments: d.segments });
        ws.close(1000);
        return;
      case 'log':
        this.log[d.level](d.fields, d.msg);
        return;
    }
  }

  /** Send what the window allows; once everything is acknowledged during end(), close. */
  private pump(): void {
    const ws = this.ws;
    if (this.stopped || !ws || !this.ready || ws.readyState !== WebSocket.OPEN) return;
    if (this.state.accepting) {
      for (const frame of this.window.frames(this.state.maxPayloadBytes)) {
        ws.send(frame.bytes);
        this.opts.metrics?.sentSeconds.inc(frame.samples / this.rate);
      }
    }
    if (this.ending && this.state.acct.unacknowledged === 0 && !this.closeSent.has(ws)) {
      this.closeSent.add(ws);
      ws.send(JSON.stringify({ type: 'close' }));
      this.log.info({ capturedSamples: this.state.acct.captured }, 'all audio acknowledged; closing the session');
    }
  }

  // ------------------------------------------------------------------ ending and failing

  private waitClosed(): Promise<void> {
    if (this.fatal) return Promise.reject(this.fatal);
    return new Promise<void>((resolve, reject) => this.closedWaiters.push({ resolve, reject }));
  }

  private confirmClosed(closed: { capturedSamples: number; segments: number } | null): void {
    if (closed) this.serverClosed = closed;
    this.closeConfirmed = true;
    for (const w of this.closedWaiters.splice(0)) w.resolve();
  }

  private rejectWaiters(err: Error): void {
    this.window.fail(err);
    for (const w of this.closedWaiters.splice(0)) w.reject(err);
  }

  private failFatal(err: Error): void {
    this.fatal = err;
    this.log.error({ err: err.message }, 'stream failed');
    this.rejectWaiters(err);
    if (this.listenerCount('error') > 0) this.emit('error', err);
  }
}

function abortedError(): StreamFatalError {
  return new StreamFatalError('ABORTED', 'the stream was aborted before it started');
}
