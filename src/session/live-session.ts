// A live real-time session: the adapter that joins one session's socket, its capture
// cursor, its recognizer stream and the store. All work for a session runs through one
// promise queue, so frames, control messages, resume and shutdown never interleave.
//
// Pure decisions live in src/core (frame codec, cursor arithmetic, state machine, billing);
// this class only sequences them and performs the I/O they call for.
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { ScribedError, toScribedError } from '../core/errors.js';
import { wsError } from '../core/envelope.js';
import { decodeAudioFrame, parseControlMessage } from '../core/frame.js';
import { decodeToPcm16, INPUT_ENCODINGS, type InputEncoding } from '../core/audio/encodings.js';
import { beginEpoch, placeFrame, timePoint, type CaptureCursor } from '../core/capture-cursor.js';
import { transition, type SessionEvent } from '../core/session-state.js';
import { chargeNeeded } from '../core/billing.js';
import type { AcceptResult, Engine, FinalResult, RecognitionStream } from '../engine/types.js';
import type { SegmentRecord, SegmentWord, SessionFence, SessionRecord, SessionState, Store, TranscriptionStatus } from '../store/store.js';
import type { Metrics } from '../obs/metrics.js';
import { shapeFinal } from '../text/final-text.js';
import { LevelMeter, primaryWords } from '../core/background-speech.js';
import { vadSettings } from '../vad/settings.js';
import { VAD_RATE, VAD_WINDOW_SAMPLES } from '../vad/window.js';
import type { SessionSpool } from './audio-spool.js';
import { wordsOnTimeline } from '../core/word-span.js';
import { finalEvent } from '../core/final-event.js';
import { sessionNotices } from '../core/session-notices.js';
import { ManualSegmentation, VadSegmentation, type SegmentAction, type Segmentation } from './segmentation.js';
import { SessionBacklog } from '../core/recognition-backlog.js';
import type { DeferredSession, RecognizerQueue } from './recognizer-queue.js';
import { CLOSE_CODES, segmentId, serverEvent, type FinalTrigger, type ServerEvent, type WatchingEvent } from '../core/protocol.js';

/** What the session needs of a socket; the WebSocket adapter provides it. */
export interface SessionSocket {
  send(event: ServerEvent): void;
  close(code: number, reason: string): void;
}

export interface LiveSessionDeps {
  store: Store;
  engine: Engine;
  metrics: Metrics;
  log: Logger;
  maxSegmentSeconds: number;
  maxGapSeconds: number;
  maxFramePayloadBytes: number;
  pausedDecoderHoldMs: number;
  /** Batched decoding (StreamRequest.decodeBatchMs); absent or 0: every frame at once. */
  decodeBatchMs?: number;
  /** Called when every decoder is in use: frees one held by a paused session, if any.
   * Resolves true when a decoder went back to the pool. */
  reclaimDecoder?: () => Promise<boolean>;
  /** Called once the session is closed and persisted (the registry stops keeping it). */
  onClosed?: (session: LiveSession) => void;
  /** Deferred recognition (src/core/recognition-backlog.ts): sessions admitted while every
   * recognizer is busy wait here. Absent: a busy node refuses with ENGINE_BUSY. */
  deferral?: RecognizerQueue;
  /** Durable acknowledgements: accepted audio is spooled before it is acknowledged
   * (audio-spool.ts in files, database-spool.ts in the shared store). Without it, acks are
   * sent once the recognizer has the audio. */
  spool?: { open(sessionId: string, fence: () => SessionFence | null, capturedSamples: bigint): SessionSpool };
  /** This node's id: the owner a session's writes are fenced by (docs/scaling.md). */
  node?: string;
  /** How long an ownership lease lasts without renewal. */
  leaseMs?: number;
  /** The store is shared with other nodes: a session whose held decoder is released is given
   * up (its state lives in the store), and another node may adopt it. */
  shared?: boolean;
}

interface OpenSegment {
  index: number;
  startSample: bigint;
  samples: number;
  lastPartial: string;
  /** suppressBackgroundSpeech: levels of the audio the recognizer heard for this segment. */
  meter: LevelMeter | null;
}

/** vad mode: silence dropped from the spool once this much of it has gathered. */
const SPOOL_COMPACT_SECONDS = 5;

/** Catching up, a deferred session feeds its backlog in turns of this much audio, so frames
 * arriving meanwhile (and other sessions' work) are not held up behind a long backlog. */
const CATCH_UP_TURN_SECONDS = 2;

/** A session held by the node's backlog bound accepts audio again once the backlog is below
 * this share of the bound (not at the first free second, which would flap). */
const BACKLOG_RESUME_SHARE = 0.75;

export class LiveSession implements DeferredSession {
  readonly id: string;
  readonly accountId: string;
  readonly transcriptionId: string;
  readonly encoding: InputEncoding;
  readonly options: Record<string, unknown>;
  state: SessionState;
  cursor: CaptureCursor;
  accepting = true;
  private socket: SessionSocket | null = null;
  /** Read-only sockets that watch the session (src/server/ws/watch.ts): sent every event the
   * stream socket gets but acks, pongs and errors, which are about that socket alone. */
  private readonly watchers = new Set<SessionSocket>();
  private stream: RecognitionStream | null = null;
  /** Where segments begin and end (manual or vad); made with each decoder. */
  private segmentation: Segmentation | null = null;
  private segment: OpenSegment | null = null;
  private nextSegmentIndex: number;
  private charged: bigint;
  private queue: Promise<unknown> = Promise.resolve();
  private holdTimer: NodeJS.Timeout | null = null;
  private lastSavedAt = 0;
  /** suppressBackgroundSpeech: the primary speaker's level so far (dBFS). */
  private primaryDb = -100;
  private readonly log: Logger;
  private readonly spool: SessionSpool | null;
  /** What this node holds while it serves the session (set by the registry's claim); every
   * write for the session names it and fails once the session moved on. */
  private fence: SessionFence | null = null;
  /** The session moved to another node (or a newer epoch): nothing more is written. */
  private moved = false;
  /** Audio recovered from the spool after a restart (from `startSample`, frame by frame as it
   * first arrived), fed to the next decoder: the open segment in manual mode; in vad mode
   * everything after the last final, judged by the detector again. */
  private replay: { startSample: bigint; frames: Int16Array[] } | null = null;
  /** vad mode: where the spool's audio starts (silence before it was dropped, see
   * compactSpool). */
  private spoolKeptFrom = 0n;
  /** The recognizer's channel adaptation after the last final (RecognitionStream.channelState),
   * spooled with it and given to any later decoder of this session, so a segment decoded on a
   * new decoder (after a restart, or a released hold) hears the channel as the old one would. */
  private channelState: number[] | null = null;
  /** Finals asked of the decoder and not yet persisted and sent, chained in order
   * (requestFinal), and how many. */
  private finals: Promise<void> = Promise.resolve();
  private finalsPending = 0;
  /** The latest partial of the next segment, held while a final before it is pending. */
  private heldPartial: { seg: OpenSegment; partial: Pick<AcceptResult, 'partial' | 'partialSamples'> } | null = null;
  /** Deferred recognition: audio, commits and the close waiting for a recognizer, in order;
   * null while the session's recognition keeps up (the usual case). */
  private backlog: SessionBacklog | null = null;
  /** When the session started waiting for a recognizer (ms), for the wait metric. */
  private deferredSince = 0;
  /** The node's backlog bound stopped this session's audio (accepting: false). */
  private heldByBacklog = false;
  /** The client's close waits in the backlog: no more audio or commits are taken. */
  private closing = false;

  constructor(
    record: SessionRecord,
    private readonly deps: LiveSessionDeps,
  ) {
    this.id = record.id;
    this.accountId = record.accountId;
    this.transcriptionId = record.transcriptionId;
    this.options = record.options;
    const enc = INPUT_ENCODINGS[record.options.inputEncoding as keyof typeof INPUT_ENCODINGS];
    if (!enc) throw new ScribedError('INTERNAL', `session ${record.id} has unknown encoding`);
    this.encoding = enc;
    this.state = record.state;
    this.cursor = {
      epoch: record.epoch,
      epochReceived: Number(record.capturedSamples - (record.epochBases[record.epochBases.length - 1] ?? 0n)),
      capturedSamples: record.capturedSamples,
      epochBases: record.epochBases,
    };
    this.charged = record.charactersCharged;
    this.nextSegmentIndex = record.nextSegmentIndex;
    this.log = deps.log.child({ sessionId: record.id, transcriptionId: record.transcriptionId });
    this.spool = deps.spool?.open(record.id, () => this.fence, record.capturedSamples) ?? null;
  }

  get rate(): number {
    return this.encoding.sampleRateHz;
  }

  get hasSocket(): boolean {
    return this.socket !== null;
  }

  /** The registry claimed the session for this node at `epoch`. */
  ownedAt(epoch: number): void {
    if (this.deps.node) this.fence = { sessionId: this.id, epoch, node: this.deps.node };
  }

  get ownership(): SessionFence | null {
    return this.moved ? null : this.fence;
  }

  get hasMoved(): boolean {
    return this.moved;
  }

  /** The session is no longer this node's (a resume elsewhere, another node adopted it, or a
   * write found the fence gone): stop at once without finalizing (the new owner replays the
   * open segment from the spool), close the socket with 4000 so the client resumes. */
  movedOn(reason: string): Promise<void> {
    return this.run(() => this.dropMoved(reason));
  }

  /** The shared spool could not store acknowledged audio: the session is given up without
   * acknowledging it (INTERNAL, close 1011); its state in the store is what the next resume,
   * on any node, goes on from. */
  private spoolFailed(err: unknown): Promise<void> {
    return this.run(async () => {
      if (this.moved) return;
      this.log.error({ err }, 'spool commit failed; giving the session up without acknowledging');
      const fence = this.fence;
      const wasRecording = this.state === 'RECORDING';
      await this.dropMoved('spool commit failed', 'INTERNAL');
      // Best effort, the store may be what failed: paused and free for any node to claim.
      if (fence && wasRecording) await this.deps.store.setFencedSessionState(fence, 'PAUSED', 'PAUSED').catch(() => false);
      if (fence) await this.deps.store.releaseSession(fence).catch(() => undefined);
    });
  }

  private async dropMoved(reason: string, code: 'SESSION_MOVED' | 'INTERNAL' = 'SESSION_MOVED'): Promise<void> {
    if (this.moved) return;
    this.moved = true;
    this.cancelHold();
    this.accepting = false;
    const socket = this.socket;
    this.socket = null;
    if (socket) {
      socket.send(wsError(new ScribedError(code)));
      socket.close(code === 'INTERNAL' ? CLOSE_CODES.internal : CLOSE_CODES.superseded, code);
    }
    // Watchers reconnect and find the node that serves the session now.
    this.closeWatchers(CLOSE_CODES.superseded, 'SESSION_MOVED', wsError(new ScribedError('SESSION_MOVED'), true));
    this.spool?.close();
    this.endDeferral();
    await this.releaseStream().catch(() => undefined);
    this.log.info({ reason, epoch: this.fence?.epoch }, 'session left this node: dropped without finalizing');
    this.deps.onClosed?.(this);
  }

  /** A write for this session through its fence; a fenced-off write drops the session and
   * fails with SESSION_MOVED. */
  private async fenced(write: (fence: SessionFence) => Promise<boolean>): Promise<void> {
    if (this.moved) throw new ScribedError('SESSION_MOVED');
    const fence = this.fence;
    if (!fence) throw new ScribedError('INTERNAL', `session ${this.id} is written before this node claimed it`);
    if (await write(fence)) return;
    await this.dropMoved('fenced write');
    throw new ScribedError('SESSION_MOVED');
  }

  private setState(state: SessionState, status: TranscriptionStatus): Promise<void> {
    return this.fenced((f) => this.deps.store.setFencedSessionState(f, state, status));
  }

  private appendFinal(segment: SegmentRecord): Promise<void> {
    return this.fenced((f) => this.deps.store.appendFencedSegment(f, segment));
  }

  /** Run one unit of work after everything queued before it. */
  private run<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private apply(event: SessionEvent): void {
    const result = transition(this.state, event);
    this.state = result.state;
  }

  private emit(event: ServerEvent): void {
    this.socket?.send(event);
    if (event.type === 'pong' || event.type === 'error') return;
    for (const w of this.watchers) w.send(event);
  }

  // ---------------------------------------------------------------- watchers

  /** Add a watcher: it is sent the `watching` snapshot at once, then the session's events as
   * they happen (synchronously, so no event falls between the snapshot and the first one).
   * Whether a stream socket is attached does not matter; no decoder is taken. */
  watch(watcher: SessionSocket, limit: number): void {
    if (this.moved) throw new ScribedError('SESSION_MOVED');
    if (this.state === 'CLOSED') throw new ScribedError('SESSION_CLOSED');
    if (this.watchers.size >= limit) throw new ScribedError('WATCHER_LIMIT', `session ${this.id} already has ${limit} watchers, its limit`);
    this.watchers.add(watcher);
    watcher.send(this.watchingEvent());
  }

  unwatch(watcher: SessionSocket): void {
    this.watchers.delete(watcher);
  }

  get watcherCount(): number {
    return this.watchers.size;
  }

  private watchingEvent(): WatchingEvent {
    return serverEvent.watching({
      sessionId: this.id,
      transcriptionId: this.transcriptionId,
      state: this.state,
      streaming: this.socket !== null,
      epoch: this.cursor.epoch,
      capturedSamples: this.cursor.capturedSamples.toString(),
      inputEncoding: this.encoding.name,
      sampleRateHz: this.rate,
      accepting: this.accepting,
      openSegmentId: this.segment ? segmentId(this.segment.index) : null,
      segments: this.nextSegmentIndex,
    });
  }

  /** The session ends here (closed, moved on, server stopping): its watchers are let go. */
  private closeWatchers(code: number, reason: string, last?: ServerEvent): void {
    const watchers = [...this.watchers];
    this.watchers.clear();
    for (const w of watchers) {
      if (last) w.send(last);
      w.close(code, reason);
    }
  }

  private emitError(err: unknown): void {
    const e = toScribedError(err);
    this.deps.metrics.frameErrors.inc({ code: e.code });
    if (e.code === 'INTERNAL') this.log.error({ err: e.cause ?? e }, 'session error');
    this.emit(wsError(e));
  }

  // ---------------------------------------------------------------- socket lifecycle

  /** Attach a socket: admission control happens here (a decoder must be free). */
  attach(socket: SessionSocket): Promise<void> {
    return this.run(async () => {
      this.apply({ type: 'socketAttached' });
      if (this.socket) throw new ScribedError('SESSION_BUSY');
      this.cancelHold();
      if (!this.stream && !this.backlog) await this.openOrDefer();
      if (this.stream && !this.backlog && !(await this.feedReplay())) {
        throw new ScribedError('ENGINE_FAILED', 'the recognizer failed while restoring the open segment; resume to retry');
      }
      this.socket = socket;
      this.accepting = !this.heldByBacklog && (await this.canAccept());
      this.emit(serverEvent.ready({
        sessionId: this.id,
        transcriptionId: this.transcriptionId,
        epoch: this.cursor.epoch,
        sampleOffset: this.cursor.epochReceived,
        capturedSamples: this.cursor.capturedSamples.toString(),
        inputEncoding: this.encoding.name,
        sampleRateHz: this.rate,
        accepting: this.accepting,
        maxFramePayloadBytes: this.deps.maxFramePayloadBytes,
        openSegmentId: this.segment ? segmentId(this.segment.index) : null,
      }));
      for (const notice of this.notices()) this.emit(serverEvent.notice(notice));
      if (this.backlog) this.emit(serverEvent.notice(this.deferredNotice()));
      if (!this.accepting) this.emit(serverEvent.accepting({ accepting: false, reason: this.heldByBacklog ? 'RECOGNITION_BACKLOG' : 'INSUFFICIENT_CHARACTERS' }));
      this.log.info({ epoch: this.cursor.epoch, capturedSamples: this.cursor.capturedSamples.toString(), deferred: this.backlog !== null }, 'socket attached');
    });
  }

  /** The socket went away. Without a prior close this pauses the session. */
  detach(socket: SessionSocket): Promise<void> {
    return this.run(async () => {
      if (this.socket !== socket) return;
      this.socket = null;
      await this.pauseWithoutSocket();
    });
  }

  private async pauseWithoutSocket(): Promise<void> {
    if (this.state !== 'RECORDING') return;
    this.apply({ type: 'socketLost' });
    await this.setState('PAUSED', 'PAUSED');
    await this.saveProgress(true);
    this.log.info({ capturedSamples: this.cursor.capturedSamples.toString() }, 'socket lost: session paused');
    // The stream socket's going sends it nothing; watchers are told the session paused.
    for (const w of this.watchers) w.send(this.watchingEvent());
    // A session catching up keeps its recognizer until its backlog is done (then holds it).
    if (this.stream && !this.backlog) this.startHold();
  }

  /** A paused session keeps its decoder (and its open utterance) for a while so a quick
   * resume continues the same segment; after that the segment is finalized and the
   * decoder goes back to the pool. */
  private startHold(): void {
    this.cancelHold();
    this.holdTimer = setTimeout(() => {
      this.holdTimer = null;
      void this.run(async () => {
        if (this.socket || this.state === 'CLOSED' || this.backlog) return;
        await this.finalize('pause');
        await this.releaseStream();
        // Nothing captured so far is decoded again (a new decoder starts at the cursor), and
        // a client may never come back: keep only the channel state, and no open descriptor.
        this.spool?.keepFrom(this.cursor.capturedSamples, this.channelState);
        this.spoolKeptFrom = this.cursor.capturedSamples;
        this.spool?.release();
        if (this.deps.shared) await this.giveUp();
      }).catch((err) => this.log.error({ err }, 'releasing paused decoder failed'));
    }, this.deps.pausedDecoderHoldMs);
    this.holdTimer.unref();
  }

  /** Shared store, nothing held in memory any more: the session's state is all in the store,
   * so the node lets it go (any node claims it at the next socket). */
  private async giveUp(): Promise<void> {
    if (this.moved || !this.fence) return;
    await this.spool?.whenDurable();
    await this.deps.store.releaseSession(this.fence);
    this.moved = true;
    this.closeWatchers(CLOSE_CODES.superseded, 'SESSION_MOVED', wsError(new ScribedError('SESSION_MOVED', 'the paused session was released to any node; watch it again once a stream socket attaches'), true));
    this.spool?.close();
    this.log.info('idle session released to any node');
    this.deps.onClosed?.(this);
  }

  /** A decoder for this session. When all are taken, a paused session's held decoder is
   * worth less than a live socket: take that one back before refusing with ENGINE_BUSY. */
  private async openStream(): Promise<RecognitionStream> {
    const vad = this.options.segmentCommitMode === 'vad' ? vadSettings(this.options, this.deps.maxSegmentSeconds) : null;
    const heartbeat = this.options.heartbeatIntervalMs;
    const request = {
      inputRate: this.rate,
      profile: this.encoding.profile,
      vad: vad ? { threshold: vad.threshold } : null,
      heartbeatIntervalMs: typeof heartbeat === 'number' ? heartbeat : null,
      vocabularyHints: Array.isArray(this.options.vocabularyHints) ? (this.options.vocabularyHints as string[]) : [],
      decodeBatchMs: this.deps.decodeBatchMs ?? 0,
    };
    let stream: RecognitionStream;
    try {
      stream = await this.deps.engine.open(request);
    } catch (err) {
      if (!(err instanceof ScribedError && err.code === 'ENGINE_BUSY') || !this.deps.reclaimDecoder) throw err;
      if (!(await this.deps.reclaimDecoder())) throw err;
      stream = await this.deps.engine.open(request);
    }
    // Best effort: a decoder that refuses it starts from the initial state, as before (a dead
    // one fails the next call).
    if (this.channelState !== null) {
      await stream.setChannelState(this.channelState).catch((err: unknown) => this.log.warn({ err }, 'could not set the channel state on the new decoder'));
    }
    this.segmentation = vad
      ? new VadSegmentation(vad.segmenter, (VAD_WINDOW_SAMPLES * this.rate) / VAD_RATE, this.cursor.capturedSamples)
      : new ManualSegmentation(this.deps.maxSegmentSeconds * this.rate);
    // Batched decoding reports partials as they are decoded, between frames.
    stream.onPartial((p) => {
      if (this.stream === stream && this.segment) this.emitPartial(this.segment, p);
    });
    // A worker that crashes or stops answering its heartbeat fails the session at once, even
    // while no audio is in flight (otherwise only the next frame would notice).
    stream.onLost((err) => {
      void this.run(async () => {
        if (this.stream === stream) await this.recognizerLost(err, true);
      }).catch((e) => this.log.error({ err: e }, 'handling a lost recognizer failed'));
    });
    return stream;
  }

  /** True while a recognizer is open for this session (a socket attaching needs no new one). */
  get holdsDecoder(): boolean {
    return this.stream !== null;
  }

  /** True while the session's recognition runs behind its audio (deferred recognition). */
  get isDeferred(): boolean {
    return this.backlog !== null;
  }

  /** True while this session is paused and still holds a decoder (see startHold). */
  get holdsIdleDecoder(): boolean {
    return this.socket === null && this.stream !== null && this.backlog === null;
  }

  /** Give a held decoder back to the pool now, finalizing the open segment first. */
  releaseHeldDecoder(): Promise<boolean> {
    return this.run(async () => {
      if (!this.holdsIdleDecoder) return false;
      this.cancelHold();
      if (this.state !== 'CLOSED') await this.finalize('pause');
      await this.releaseStream();
      this.log.info('held decoder reclaimed for another session');
      return true;
    });
  }

  private cancelHold(): void {
    if (this.holdTimer) clearTimeout(this.holdTimer);
    this.holdTimer = null;
  }

  private async releaseStream(): Promise<void> {
    const stream = this.stream;
    this.stream = null;
    this.segmentation = null;
    await stream?.release();
    // A session waiting for a recognizer may take this one.
    if (stream) this.deps.deferral?.decoderFreed();
  }

  private notices(): Array<{ code: string; message: string }> {
    return sessionNotices(this.options, this.stream?.vocabulary ?? null);
  }

  // ---------------------------------------------------------------- deferred recognition

  /** A recognizer for an attaching socket, or, when every one is busy and the node's backlog
   * has room, deferred recognition: the socket is served and its audio waits (issue 13). */
  private async openOrDefer(): Promise<void> {
    const queue = this.deps.deferral;
    // Sessions that waited first get the next free recognizer; this one queues behind them.
    if (queue?.hasWaiters() && queue.budget.hasRoom()) return this.defer();
    try {
      this.stream = await this.openStream();
    } catch (err) {
      if (!(err instanceof ScribedError && err.code === 'ENGINE_BUSY') || !queue?.budget.hasRoom()) throw err;
      this.defer();
    }
  }

  private defer(): void {
    const queue = this.deps.deferral!;
    this.backlog = new SessionBacklog(this.rate);
    this.deferredSince = Date.now();
    this.deps.metrics.recognitionDeferred.inc();
    this.log.info({ waiting: queue.waitingCount, backlogSeconds: Number(queue.budget.seconds.toFixed(1)) }, 'every recognizer busy: recognition deferred');
    queue.wait(this);
  }

  private deferredNotice(): { code: string; message: string } {
    return {
      code: 'RECOGNITION_DEFERRED',
      message: 'every recognizer of this node is busy: audio is stored and acknowledged as usual, and transcribed (with its true times) as soon as one frees',
    };
  }

  /** The node's backlog is at its bound: this session takes no more audio until it drains
   * (accepting: false, RECOGNITION_BACKLOG; the client keeps the audio buffered). */
  private holdForBacklog(): never {
    if (!this.heldByBacklog) {
      this.heldByBacklog = true;
      this.accepting = false;
      this.log.warn({ backlogSeconds: Number(this.deps.deferral!.budget.seconds.toFixed(1)) }, 'deferred backlog bound reached: not accepting');
      this.emit(serverEvent.accepting({ accepting: false, reason: 'RECOGNITION_BACKLOG' }));
    }
    throw new ScribedError('NOT_ACCEPTING', 'the node\'s recognizers are behind and its backlog is at its bound; wait for an accepting event');
  }

  /** Called by the queue while the backlog is below its bound. */
  backlogHasRoom(): void {
    if (!this.heldByBacklog) return;
    void this.run(() => this.acceptAgainAfterBacklog(false)).catch((err) => this.log.warn({ err }, 'could not accept audio again'));
  }

  private async acceptAgainAfterBacklog(force: boolean): Promise<void> {
    const budget = this.deps.deferral?.budget;
    if (!this.heldByBacklog || !budget) return;
    if (!force && budget.seconds > budget.boundSeconds * BACKLOG_RESUME_SHARE) return;
    this.heldByBacklog = false;
    if (this.closing || this.state !== 'RECORDING' || !this.socket) return;
    this.accepting = await this.canAccept();
    this.emit(serverEvent.accepting(this.accepting ? { accepting: true } : { accepting: false, reason: 'INSUFFICIENT_CHARACTERS' }));
  }

  /** The client's close: at once, or, while deferred, after the audio before it. */
  private async requestClose(): Promise<void> {
    if (!this.backlog) return this.closeSession();
    if (this.closing) throw new ScribedError('SESSION_CLOSED', 'the session is already closing');
    this.closing = true;
    this.accepting = false;
    this.backlog.push({ kind: 'close' });
    this.log.info({ backlogSeconds: Number(this.backlog.seconds.toFixed(1)) }, 'close waits for the deferred recognition to catch up');
  }

  /** POST .../sessions/{id}/close: the session ends without a socket (an attached one is sent
   * `closed`, as for its own close). Audio held and not recognized yet (restored from the spool)
   * is recognized first: now when a recognizer is free, else when one frees (deferred). True
   * once closed; false while the close waits for deferred recognition. */
  closeFromRequest(): Promise<boolean> {
    return this.run(async () => {
      if (this.state === 'CLOSED') return true;
      if (this.closing) return false;
      if (!this.stream && !this.backlog && this.replay) await this.openOrDefer();
      if (this.stream && !this.backlog && !(await this.feedReplay())) {
        throw new ScribedError('ENGINE_FAILED', 'the recognizer failed on the session\'s held audio; close again to retry');
      }
      await this.requestClose();
      // Closed now, unless the close waits in a deferred backlog.
      return !this.closing;
    });
  }

  /** The queue offers a recognizer: take it and start catching up. */
  tryCatchUp(): Promise<'started' | 'busy' | 'gone'> {
    return this.run(async () => {
      if (!this.backlog || this.moved || this.state === 'CLOSED') return 'gone';
      if (!this.stream) {
        try {
          this.stream = await this.openStream();
        } catch (err) {
          // Busy, or an engine that failed to start a decoder: asked again on the next turn.
          if (!(err instanceof ScribedError && err.code === 'ENGINE_BUSY')) this.log.warn({ err }, 'could not open a recognizer for the deferred session');
          return 'busy';
        }
      }
      const waited = (Date.now() - this.deferredSince) / 1000;
      this.deps.metrics.recognitionWait.observe(waited);
      this.log.info({ waitedSeconds: Number(waited.toFixed(2)), backlogSeconds: Number(this.backlog.seconds.toFixed(1)) }, 'recognizer free: catching up');
      // Audio recovered from the spool after a restart comes before the backlog.
      if (!(await this.feedReplay())) return 'gone';
      this.scheduleCatchUp();
      return 'started';
    });
  }

  private scheduleCatchUp(): void {
    void this.run(() => this.catchUpTurn()).catch((err) => this.log.error({ err }, 'catching up failed'));
  }

  /** One turn of catching up: about CATCH_UP_TURN_SECONDS of the backlog, with the commits
   * and close among it, then the session's queue runs what arrived meanwhile. */
  private async catchUpTurn(): Promise<void> {
    const backlog = this.backlog;
    const stream = this.stream;
    if (!backlog || !stream || this.moved) return;
    const items = backlog.take(CATCH_UP_TURN_SECONDS);
    // Frame by frame, as they were counted in.
    for (const item of items) if (item.kind === 'audio') this.deps.deferral!.budget.remove(item.samples.length / this.rate);
    for (const item of items) {
      if (item.kind === 'audio') {
        this.deps.metrics.recognitionLag.observe((Date.now() - item.arrivedAtMs) / 1000);
        // A lost recognizer has dropped the backlog and told the client (recognizerLost).
        if (!(await this.recognize(stream, item.samples, item.at))) return;
        this.compactSpool();
      } else if (item.kind === 'commit') {
        const { done } = await this.endSegment('commit');
        void done.then(
          (id) => this.emit(serverEvent.committed({ segmentId: id, capturedSamples: item.capturedSamples })),
          (err: unknown) => this.emitError(err),
        );
      } else {
        this.endDeferral();
        await this.closeSession();
        return;
      }
    }
    if (!backlog.empty) return this.scheduleCatchUp();
    this.endDeferral();
    this.log.info('deferred recognition caught up');
    this.emit(serverEvent.notice({ code: 'RECOGNITION_CAUGHT_UP', message: 'recognition has caught up with the audio; results follow it live again' }));
    await this.acceptAgainAfterBacklog(true);
    if (!this.socket && this.state !== 'CLOSED') this.startHold();
  }

  /** The session no longer waits: the queue forgets it and the node's budget gets back what
   * was still waiting (returned, in seconds). */
  private endDeferral(): number {
    const backlog = this.backlog;
    if (!backlog) return 0;
    this.backlog = null;
    if (this.state !== 'CLOSED') this.closing = false;
    const dropped = backlog.clear();
    this.deps.deferral?.budget.remove(dropped);
    this.deps.deferral?.done(this);
    return dropped;
  }

  // ---------------------------------------------------------------- incoming frames

  // Frames are only acted on while their socket is the attached one: frames that raced a
  // failed attach, a resume or a close are dropped.
  onBinary(socket: SessionSocket, data: Uint8Array): Promise<void> {
    return this.run(async () => {
      if (this.socket === socket) await this.handleAudio(data);
    }).catch((err) => this.emitError(err));
  }

  onText(socket: SessionSocket, text: string): Promise<void> {
    return this.run(async () => {
      if (this.socket !== socket) return;
      const msg = parseControlMessage(text);
      switch (msg.type) {
        case 'ping':
          this.emit(serverEvent.pong(msg.id === undefined ? {} : { id: msg.id }));
          return;
        case 'commit':
          await this.commit();
          return;
        case 'close':
          await this.requestClose();
          return;
      }
    }).catch((err) => this.emitError(err));
  }

  private async handleAudio(data: Uint8Array): Promise<void> {
    const m = this.deps.metrics;
    if (this.state !== 'RECORDING' || this.closing) throw new ScribedError('SESSION_CLOSED');
    const frame = decodeAudioFrame(data, this.encoding.name, this.deps.maxFramePayloadBytes);
    m.audioBytes.inc({ encoding: this.encoding.name }, frame.payload.byteLength);
    if (!this.accepting) throw new ScribedError('NOT_ACCEPTING', 'the session is not accepting audio; wait for an accepting event');

    const maxGap = Math.round(this.deps.maxGapSeconds * this.rate);
    const placed = placeFrame(this.cursor, { epoch: frame.epoch, sampleOffset: frame.sampleOffset, samples: frame.samples }, maxGap);
    if (placed.duplicateSamples > 0) m.duplicateSamples.inc(placed.duplicateSamples);
    const added = placed.gapSamples + placed.acceptCount;
    if (added === 0) {
      this.sendAckWhenDurable(placed.duplicateSamples);
      return;
    }
    if (this.backlog && !this.deps.deferral!.budget.fits(added / this.rate)) this.holdForBacklog();

    // Billing before acceptance: audio the account cannot pay for is not taken (and so
    // not acknowledged); the client keeps it buffered.
    const need = chargeNeeded(this.charged, placed.next.capturedSamples, this.rate);
    if (need > 0n) {
      const balance = await this.deps.store.debitCharacters(this.accountId, need, 'realtime_audio', this.id, this.id);
      if (balance === null) {
        this.accepting = false;
        this.emit(serverEvent.accepting({ accepting: false, reason: 'INSUFFICIENT_CHARACTERS' }));
        throw new ScribedError('INSUFFICIENT_CHARACTERS', 'the account has no Characters left; audio from this frame on was not accepted');
      }
      this.charged += need;
      m.charactersDebited.inc(Number(need));
    }

    const pcm = decodeToPcm16(this.encoding.name, frame.payload);
    const samples = new Int16Array(added);
    samples.set(pcm.subarray(placed.acceptFrom, placed.acceptFrom + placed.acceptCount), placed.gapSamples);

    const stream = this.stream;
    if (!stream && !this.backlog) throw new ScribedError('ENGINE_FAILED', 'no recognizer attached to this session');
    // Spooled before the recognizer sees it; a recognizer failure after this empties the
    // spool (recognizerLost). A spool that cannot be written (a full disk) refuses the frame
    // and closes the socket: frames the client already sent behind it would otherwise land
    // after a hole the server fills with silence.
    try {
      this.spool?.append(this.cursor.capturedSamples, samples);
    } catch (err) {
      this.emitError(new ScribedError('INTERNAL', 'the audio could not be stored; resume and send it again', { cause: err }));
      await this.loseSocket('INTERNAL');
      return;
    }
    if (this.backlog || !stream) {
      // Deferred: stored and acknowledged now, recognized when a recognizer frees.
      this.backlog!.push({ kind: 'audio', at: this.cursor.capturedSamples, samples, arrivedAtMs: Date.now() });
      this.deps.deferral!.budget.add(added / this.rate);
      this.advance(placed, added);
      await this.saveProgress(false);
      return;
    }
    // The frame is taken only once the recognizer has it (or the detector dropped it as
    // silence between segments).
    if (!(await this.recognize(stream, samples, this.cursor.capturedSamples))) return;
    this.advance(placed, added);
    this.compactSpool();
    await this.saveProgress(false);
  }

  /** Silence the server filled before this frame, reported before the cursor moves past it. */
  private reportGap(placed: ReturnType<typeof placeFrame>): void {
    if (placed.gapSamples === 0) return;
    this.deps.metrics.gapSamples.inc(placed.gapSamples);
    this.emit(serverEvent.gap({
      epoch: this.cursor.epoch,
      sampleOffset: this.cursor.epochReceived,
      samples: placed.gapSamples,
      capturedSamples: (this.cursor.capturedSamples + BigInt(placed.gapSamples)).toString(),
    }));
  }

  /** The frame is taken: report a gap, move the cursor, acknowledge. */
  private advance(placed: ReturnType<typeof placeFrame>, added: number): void {
    const m = this.deps.metrics;
    this.reportGap(placed);
    this.cursor = placed.next;
    m.audioSeconds.inc({ encoding: this.encoding.name }, added / this.rate);
    this.sendAckWhenDurable(placed.duplicateSamples);
  }

  /** The segmentation judges audio taken at session sample `at`, then its actions are carried
   * out in order. False when the recognizer was lost on the way: the session has then told
   * the client (ENGINE_FAILED) and let its socket go, and the audio is not acknowledged. */
  private async recognize(stream: RecognitionStream, samples: Int16Array, at: bigint): Promise<boolean> {
    const segmentation = this.segmentation;
    if (!segmentation) throw new ScribedError('ENGINE_FAILED', 'no recognizer attached to this session');
    let actions: SegmentAction[];
    try {
      actions = await segmentation.judge(stream, samples, at, this.segment?.samples ?? null);
    } catch (err) {
      await this.recognizerLost(err, true);
      return false;
    }
    if (!(await this.applySegmentActions(stream, actions))) {
      await this.loseSocket();
      return false;
    }
    return true;
  }

  /** Carry out segment actions; false when the recognizer was lost meanwhile. */
  private async applySegmentActions(stream: RecognitionStream, actions: SegmentAction[]): Promise<boolean> {
    for (const a of actions) {
      if (this.stream !== stream) return false;
      if (a.type === 'open') {
        this.segment = this.newSegment(a.startSample);
      } else if (a.type === 'feed') {
        const seg = this.segment;
        if (!seg) continue;
        let result: AcceptResult;
        try {
          result = await stream.accept(a.samples);
        } catch (err) {
          await this.recognizerLost(err, false);
          return false;
        }
        seg.samples += a.samples.length;
        seg.meter?.push(a.samples);
        this.observeEngineRtf(result);
        this.emitPartial(seg, result);
      } else if (this.segment) {
        this.unawaited(await this.requestFinal(a.trigger));
      }
    }
    return this.stream === stream;
  }

  private newSegment(startSample: bigint): OpenSegment {
    return {
      index: this.nextSegmentIndex++,
      startSample,
      samples: 0,
      lastPartial: '',
      meter: this.options.suppressBackgroundSpeech === true ? new LevelMeter(this.rate) : null,
    };
  }

  /** A new partial of the open segment; it ends where the decoding reached, which with
   * batched decoding may be behind the audio accepted. */
  private emitPartial(seg: OpenSegment, result: Pick<AcceptResult, 'partial' | 'partialSamples'>): void {
    const partial = result.partial;
    if (!partial || partial === seg.lastPartial) return;
    // Events keep segment order: a partial of this segment waits for the finals before it.
    if (this.finalsPending > 0) {
      this.heldPartial = { seg, partial: result };
      return;
    }
    seg.lastPartial = partial;
    this.emit(serverEvent.partial({
      segmentId: segmentId(seg.index),
      text: partial,
      start: timePoint(this.cursor, seg.startSample, this.rate),
      end: timePoint(this.cursor, seg.startSample + BigInt(Math.min(result.partialSamples, seg.samples)), this.rate),
    }));
  }

  /** A final no caller waits for: its failure is reported on the socket. */
  private unawaited(final: { done: Promise<string | null> }): void {
    void final.done.catch((err: unknown) => this.emitError(err));
  }

  private observeEngineRtf(result: AcceptResult): void {
    if (result.decodedSamples > 0) this.deps.metrics.engineRtf.observe(result.cpuMs / ((result.decodedSamples / this.rate) * 1000));
  }

  /** The decoder behind this session died (worker crash). Its open segment's audio is
   * gone from recognition: the segment is dropped (logged with its extent) rather than
   * persisted with a made-up text. The client is told with ENGINE_FAILED; on the socket path
   * the socket closes with 1011 so the client resumes, and the next attach opens a new decoder. */
  private async recognizerLost(err: unknown, closeSocket: boolean, seg: OpenSegment | null = this.segment): Promise<void> {
    const dead = this.stream;
    this.stream = null;
    this.segmentation = null;
    void dead?.release().catch(() => undefined);
    this.segment = null;
    this.replay = null;
    const dropped = this.endDeferral();
    if (dropped > 0) this.log.error({ droppedBacklogSeconds: dropped }, 'recognizer lost while catching up: the deferred audio is dropped with the open segment');
    this.spool?.clear(this.channelState);
    this.log.error(
      { err, lostSegment: seg ? { index: seg.index, startSample: seg.startSample.toString(), samples: seg.samples } : null },
      'recognizer lost: open segment dropped',
    );
    this.emitError(new ScribedError('ENGINE_FAILED', 'the recognizer for this session failed; the open segment was lost. Resume to continue'));
    if (closeSocket) await this.loseSocket();
  }

  /** After a lost recognizer on the socket path: close with 1011 so the client resumes. */
  private async loseSocket(reason: 'ENGINE_FAILED' | 'INTERNAL' = 'ENGINE_FAILED'): Promise<void> {
    if (!this.socket) return;
    // Frames still queued from this socket are dropped: they were not acknowledged.
    const socket = this.socket;
    this.socket = null;
    socket.close(CLOSE_CODES.internal, reason);
    await this.pauseWithoutSocket();
  }

  /** The ack goes out once the spooled audio it covers is on disk (at once without a
   * spool). Acks keep their order: one sync covers every frame written before it. */
  private sendAckWhenDurable(duplicateSamples: number): void {
    const event = serverEvent.ack({
      epoch: this.cursor.epoch,
      sampleOffset: this.cursor.epochReceived,
      capturedSamples: this.cursor.capturedSamples.toString(),
      ...(duplicateSamples > 0 ? { duplicateSamples } : {}),
    });
    const socket = this.socket;
    const send = () => {
      if (this.socket !== socket || !socket) return;
      this.deps.metrics.acks.inc();
      socket.send(event);
    };
    if (!this.spool) return send();
    this.spool.whenDurable().then(send, (err: unknown) => {
      if (err instanceof ScribedError && err.code === 'SESSION_MOVED') {
        void this.movedOn('spool write fenced');
        return;
      }
      if (this.spool?.shared) {
        // Nothing of that commit is stored: the next resume (on any node) counts only what
        // the store holds, and the client sends the rest again.
        void this.spoolFailed(err);
        return;
      }
      // Not acknowledged, and the socket closes so the client notices. The audio was written
      // (the kernel has it) and the recognizer has it, so resume counts it as held: it is lost
      // only if the machine itself goes down before the kernel writes it back.
      this.log.error({ err }, 'spool sync failed; closing the socket without acknowledging');
      if (this.socket === socket) socket?.close(CLOSE_CODES.internal, 'INTERNAL');
    });
  }

  private async canAccept(): Promise<boolean> {
    const prepaidSamples = this.charged * BigInt(this.rate) - this.cursor.capturedSamples;
    if (prepaidSamples > 0n) return true;
    const account = await this.deps.store.getAccount(this.accountId);
    return (account?.characters ?? 0n) > 0n;
  }

  private async saveProgress(force: boolean): Promise<void> {
    const now = Date.now();
    if (!force && now - this.lastSavedAt < 1000) return;
    this.lastSavedAt = now;
    // A shared spool's appends are durable at commit: progress never runs ahead of it, so a
    // node that takes over after a crash asks the client for exactly what was not stored.
    const durable = this.spool?.durableEnd ?? null;
    const captured = durable !== null && durable < this.cursor.capturedSamples ? durable : this.cursor.capturedSamples;
    const progress = { capturedSamples: captured, charactersCharged: this.charged, nextSegmentIndex: this.nextSegmentIndex };
    await this.fenced((f) => this.deps.store.saveFencedProgress(f, progress));
  }

  // ---------------------------------------------------------------- segments

  /** The final and then `committed` follow when the segment is decoded; frames sent after
   * the commit are taken meanwhile. */
  private async commit(): Promise<void> {
    if (this.state !== 'RECORDING' || this.closing) throw new ScribedError('SESSION_CLOSED');
    const capturedSamples = this.cursor.capturedSamples.toString();
    if (this.backlog) {
      // After the audio before it is recognized; `committed` carries today's cursor.
      this.backlog.push({ kind: 'commit', capturedSamples });
      return;
    }
    const { done } = await this.endSegment('commit');
    void done.then(
      (id) => this.emit(serverEvent.committed({ segmentId: id, capturedSamples })),
      (err: unknown) => this.emitError(err),
    );
  }

  /** End the open segment: final result, persisted before it is sent. Returns its id. */
  private async finalize(trigger: FinalTrigger): Promise<string | null> {
    return (await this.endSegment(trigger)).done;
  }

  /** A segment ended from outside the segmentation (commit, close, pause, shutdown): audio it
   * holds unjudged goes into the segment first, so nothing received is left out of it. */
  private async endSegment(trigger: FinalTrigger): Promise<{ done: Promise<string | null> }> {
    const stream = this.stream;
    const tail = this.segmentation?.flush() ?? [];
    if (stream && tail.length > 0 && !(await this.applySegmentActions(stream, tail))) return { done: this.finals.then(() => null) };
    return this.requestFinal(trigger);
  }

  /** Ends the open segment on the decoder and resolves as soon as that is asked of it, with
   * `done`: the final, decoded, persisted and sent (its segment id; null when there was no
   * segment). Frames after this one go to the next segment at once, so a commit or a bound
   * never holds up the acknowledgements behind it (the decoder keeps the order); finals
   * complete one after another, in order. */
  private async requestFinal(trigger: FinalTrigger): Promise<{ done: Promise<string | null> }> {
    const none = { done: this.finals.then(() => null) };
    const seg = this.segment;
    if (!seg) return none;
    this.segment = null;
    const stream = this.stream;
    if (!stream) return none;
    const t0 = performance.now();
    const finishing = stream.finish();
    this.finalsPending += 1;
    const done = this.finals.then(() => this.completeFinal(trigger, seg, stream, finishing, t0));
    this.finals = done.then(
      () => this.finalSettled(),
      () => this.finalSettled(),
    );
    return { done };
  }

  private finalSettled(): void {
    this.finalsPending -= 1;
    const held = this.heldPartial;
    this.heldPartial = null;
    if (held && this.finalsPending === 0 && held.seg === this.segment) this.emitPartial(held.seg, held.partial);
  }

  private async completeFinal(trigger: FinalTrigger, seg: OpenSegment, stream: RecognitionStream, finishing: Promise<FinalResult>, t0: number): Promise<string | null> {
    let result: FinalResult;
    try {
      result = await finishing;
    } catch (err) {
      if (this.stream === stream) await this.recognizerLost(err, false, seg);
      else this.log.warn({ lostSegment: { index: seg.index, startSample: seg.startSample.toString(), samples: seg.samples } }, 'open segment lost with its recognizer');
      return null;
    }
    this.deps.metrics.recognitionLatency.observe((performance.now() - t0) / 1000);
    // Read with the final, between utterances (later audio may already be queued behind it).
    // A decoder that cannot say leaves the previous state in place.
    if (result.channelState !== undefined && result.channelState !== null) this.channelState = result.channelState;
    let suppressedWords = 0;
    if (seg.meter) {
      const kept = primaryWords(result.words, seg.meter, this.primaryDb);
      this.primaryDb = kept.primaryDb;
      suppressedWords = kept.dropped;
      if (kept.dropped > 0) result = { text: kept.keep.map((w) => w.word).join(' '), words: kept.keep };
    }
    this.deps.metrics.segments.inc({ trigger });
    const endSample = seg.startSample + BigInt(seg.samples);
    // includeAlignment false: no word (or character) times are sent or kept.
    const aligned = this.options.includeAlignment !== false;
    // Clamped into the segment: an engine may time a last word in its padding.
    const words: SegmentWord[] = aligned && seg.samples > 0 ? wordsOnTimeline(result.words, seg.startSample, seg.samples) : [];
    const shaped = shapeFinal(result.text, words, this.options); // text options: src/text/final-text.ts
    // A final is persisted only over stored audio: a node that takes over after a crash
    // replays from the spool exactly what no segment covers.
    if (this.spool?.shared) await this.spool.whenDurable();
    await this.appendFinal({
      transcriptionId: this.transcriptionId,
      index: seg.index,
      startSample: seg.startSample,
      endSample,
      text: shaped.text,
      words: shaped.words,
      ...(Object.keys(shaped.annotations).length > 0 ? { annotations: { ...shaped.annotations } } : {}),
      createdAt: new Date().toISOString(),
    });
    await this.saveProgress(true);
    // Everything spooled up to the segment's end is in persisted segments; audio after it (vad
    // mode: the rest of the frame the commit fell in) stays, and so does the channel state.
    this.spool?.keepFrom(endSample, this.channelState);
    this.spoolKeptFrom = endSample;
    const id = segmentId(seg.index);
    this.emit(finalEvent(this.cursor, this.rate, { segmentId: id, trigger, startSample: seg.startSample, endSample, shaped, suppressedWords, aligned }));
    this.log.debug({ segmentId: id, trigger, words: words.length }, 'final segment');
    return id;
  }

  private async closeSession(): Promise<void> {
    this.apply({ type: 'close' });
    this.cancelHold();
    await this.finalize('close');
    await this.releaseStream();
    await this.setState('CLOSED', 'PROCESSING');
    await this.saveProgress(true);
    await this.deps.store.setTranscriptionStatus(this.transcriptionId, 'COMPLETED', this.cursor.capturedSamples);
    this.spool?.remove();
    this.emit(serverEvent.closed({ status: 'COMPLETED', capturedSamples: this.cursor.capturedSamples.toString(), segments: this.nextSegmentIndex }));
    const socket = this.socket;
    this.socket = null;
    socket?.close(CLOSE_CODES.normal, 'session closed');
    this.closeWatchers(CLOSE_CODES.normal, 'session closed');
    this.log.info({ capturedSamples: this.cursor.capturedSamples.toString(), segments: this.nextSegmentIndex }, 'session closed');
    this.deps.onClosed?.(this);
  }

  // ---------------------------------------------------------------- HTTP-driven actions

  /** Resume: validate the client's cursor, open a new epoch, detach any old socket. */
  resume(clientCaptured: bigint | undefined): Promise<{ epoch: number; capturedSamples: bigint; accepting: boolean }> {
    return this.run(async () => {
      if (this.state === 'CLOSED') throw new ScribedError('SESSION_CLOSED');
      if (this.closing) throw new ScribedError('SESSION_CLOSED', 'the session is closing: its close waits for the deferred recognition to catch up');
      if (clientCaptured !== undefined && clientCaptured < this.cursor.capturedSamples) {
        throw new ScribedError(
          'CAPTURE_CURSOR_MISMATCH',
          `capturedSamples ${clientCaptured} is below the ${this.cursor.capturedSamples} samples the server already holds`,
          { details: { serverCapturedSamples: this.cursor.capturedSamples.toString() } },
        );
      }
      if (this.moved) throw new ScribedError('SESSION_MOVED');
      this.apply({ type: 'resume' });
      const old = this.socket;
      this.socket = null;
      old?.close(CLOSE_CODES.superseded, 'superseded by resume');
      // Everything acknowledged is stored before the new epoch starts at it.
      await this.spool?.whenDurable();
      const record = await this.deps.store.resumeSession(this.id, this.accountId, {
        clientCaptured,
        heldSamples: this.cursor.capturedSamples,
        keepFor: this.fence ?? undefined,
        leaseMs: this.deps.leaseMs ?? 0,
        now: new Date(),
      });
      if (!record) throw new ScribedError('NOT_FOUND', `session ${this.id} does not exist`);
      this.cursor = beginEpoch(this.cursor);
      if (record.epoch !== this.cursor.epoch) throw new ScribedError('INTERNAL', 'store and cursor disagree on the epoch');
      if (this.fence) this.fence = { ...this.fence, epoch: record.epoch };
      this.accepting = !this.heldByBacklog && (await this.canAccept());
      this.deps.metrics.resumes.inc();
      this.log.info({ epoch: this.cursor.epoch, clientCaptured: clientCaptured?.toString() }, 'session resumed');
      return { epoch: this.cursor.epoch, capturedSamples: this.cursor.capturedSamples, accepting: this.accepting };
    });
  }

  /** Server stopping: stop accepting, finalize and persist, tell the client to resume later. */
  shutdown(): Promise<void> {
    return this.run(async () => {
      this.cancelHold();
      this.accepting = false;
      if (this.state === 'CLOSED') return;
      // Deferred audio not recognized yet stays in the spool: the next start replays it.
      this.endDeferral();
      await this.finalize('shutdown');
      await this.releaseStream();
      if (this.moved) return;
      if (this.state === 'RECORDING') {
        this.apply({ type: 'shutdown' });
        await this.setState('PAUSED', 'PAUSED');
      }
      await this.saveProgress(true);
      await this.spool?.whenDurable();
      // Another node may take the session at once (the client resumes through the balancer).
      if (this.fence) await this.deps.store.releaseSession(this.fence);
      this.emit(serverEvent.accepting({ accepting: false, reason: 'SERVER_SHUTDOWN' }));
      const socket = this.socket;
      this.socket = null;
      socket?.close(CLOSE_CODES.serviceRestart, 'service restarting; resume later');
      this.closeWatchers(CLOSE_CODES.serviceRestart, 'service restarting; watch again later');
    });
  }

  /** After a restart: the open segment's audio, read back from the spool, becomes this
   * session's open segment again and is decoded now if a decoder is free (else at the next
   * attach). The decoder is then held like a paused session's, so a client that resumes
   * continues the same segment; otherwise the hold's end finalizes it (trigger `pause`). */
  restoreOpenSegment(startSample: bigint, frames: Int16Array[], index = this.nextSegmentIndex): Promise<void> {
    return this.run(async () => {
      if (this.state === 'CLOSED' || this.segment) return;
      const samples = frames.reduce((n, f) => n + f.length, 0);
      if (this.options.segmentCommitMode === 'vad') {
        // The detector decides again where segments lie in the recovered audio; the first
        // one it opens takes the index of the segment that was open at the crash.
        this.nextSegmentIndex = index;
        this.spoolKeptFrom = startSample;
      } else {
        // The stored next index may already count this segment (progress saves include it).
        this.nextSegmentIndex = Math.max(this.nextSegmentIndex, index + 1);
        const meter = this.options.suppressBackgroundSpeech === true ? new LevelMeter(this.rate) : null;
        for (const f of frames) meter?.push(f);
        this.segment = { index, startSample, samples, lastPartial: '', meter };
      }
      this.replay = { startSample, frames };
      try {
        this.stream ??= await this.openStream();
      } catch (err) {
        this.log.warn({ err: toScribedError(err).code }, 'no decoder free to restore the open segment now; it is decoded when a socket attaches');
        return;
      }
      if (await this.feedReplay()) {
        this.log.info({ startSample: startSample.toString(), samples }, 'open segment restored from the spool');
        if (this.segment && this.segment.samples >= this.deps.maxSegmentSeconds * this.rate) await this.finalize('bound');
        if (!this.socket) this.startHold();
      }
    });
  }

  /** After a restart: the channel state spooled with the last final (see `channelState`);
   * the next decoder this session opens starts from it. */
  restoreChannelState(state: number[]): void {
    if (this.stream === null && this.channelState === null) this.channelState = state;
  }

  /** Feed recovered audio to the decoder. False when the recognizer failed on it. */
  private async feedReplay(): Promise<boolean> {
    const replay = this.replay;
    const stream = this.stream;
    const segmentation = this.segmentation;
    if (!replay || !stream || !segmentation) return true;
    this.replay = null;
    // The recovered audio is judged frame by frame as it was live: in vad mode by a fresh
    // detector from where the spool starts (the old detector's state died with the old
    // process); in manual mode from the restored segment's start, so a spool holding more
    // than a segment's bound (acknowledgements do not wait for decoding, so a crash can leave
    // a bound's final undecoded) is cut where the live session cut it.
    segmentation.restartAt(replay.startSample);
    const restored = this.segment;
    if (restored) {
      restored.samples = 0;
      restored.meter = restored.meter ? new LevelMeter(this.rate) : null;
    }
    let at = replay.startSample;
    for (const frame of replay.frames) {
      if (!(await this.recognize(stream, frame, at))) return false;
      at += BigInt(frame.length);
    }
    return true;
  }

  /** Between segments, the spool keeps only the audio the segmentation may still need (vad
   * mode: what the detector holds), so a long silence does not grow it (rewritten every few
   * seconds of dropped audio). */
  private compactSpool(): void {
    const from = this.segment ? null : this.segmentation?.neededFrom();
    if (from === null || from === undefined || !this.spool) return;
    if (from - this.spoolKeptFrom < BigInt(SPOOL_COMPACT_SECONDS * this.rate)) return;
    try {
      this.spool.keepFrom(from, this.channelState);
      this.spoolKeptFrom = from;
    } catch (err) {
      // The spool only stays larger than it needs to be; the next frame tries again.
      this.log.warn({ err }, 'could not compact the spool');
    }
  }

  /** Drop the decoder without finalizing (engine failure paths). */
  async dispose(): Promise<void> {
    this.cancelHold();
    await this.releaseStream().catch(() => undefined);
  }
}
