// What one live session's parts share: who the session is, what it is bound to (socket,
// recognizer, spool, fence) and where it stands (state, capture cursor, open segment). The
// coordinator (live-session.ts) makes it and owns it; each part (intake, recognition,
// finals, deferral, fan-out, fenced writes, decoder hold, replay) reads and moves the fields
// of its own responsibility, and only on the session's queue or recognition feed.
import type { Logger } from 'pino';
import { ScribedError } from '../core/errors.js';
import { INPUT_ENCODINGS, type InputEncoding } from '../core/audio/encodings.js';
import type { LevelMeter } from '../core/background-speech.js';
import { beginEpoch as nextEpoch, type CaptureCursor } from '../core/capture-cursor.js';
import { LevelTrackBuilder } from '../core/analytics/levels.js';
import type { Engine, RecognitionStream } from '../engine/types.js';
import type { SessionFence, SessionRecord, SessionState, Store } from '../store/store.js';
import type { Metrics } from '../obs/metrics.js';
import type { ServerEvent } from '../core/protocol.js';
import { serving, type LiveState } from '../core/session-state.js';
import type { SessionSpool } from './audio-spool.js';
import type { Segmentation } from './segmentation.js';
import type { RecognizerQueue } from './recognizer-queue.js';
import type { SessionDebits } from './debit-batcher.js';

/** What the session needs of a socket; the WebSocket adapter provides it. */
export interface SessionSocket {
  send(event: ServerEvent): void;
  close(code: number, reason: string): void;
  /** The client speaks scribed's own protocol and can resume on another node (a `reconnect`
   * event means something to it); absent for the facades' sockets. */
  canResume?: boolean;
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
  onClosed?: (session: { readonly id: string }) => void;
  /** Deferred recognition (src/core/recognition-backlog.ts): sessions admitted while every
   * recognizer is busy wait here. Absent: a busy node refuses with ENGINE_BUSY. */
  deferral?: RecognizerQueue;
  /** Durable acknowledgements: accepted audio is spooled before it is acknowledged
   * (audio-spool.ts in files, database-spool.ts in the shared store). Without it, acks are
   * sent once the audio is placed. */
  spool?: { open(sessionId: string, fence: () => SessionFence | null, capturedSamples: bigint): SessionSpool };
  /** This node's id: the owner a session's writes are fenced by (docs/scaling.md). */
  node?: string;
  /** How long an ownership lease lasts without renewal. */
  leaseMs?: number;
  /** The store is shared with other nodes: a session whose held decoder is released is given
   * up (its state lives in the store), and another node may adopt it. */
  shared?: boolean;
  /** Sees every event the session fans out, after its sockets did (live rules:
   * rule-alerts.ts); `emit` sends one more event the same way. */
  observeEvent?: (session: SessionContext, event: ServerEvent, emit: (event: ServerEvent) => void) => void;
  /** Phrase spotting (phrase-spotting.ts): opens the session's spotter on its first audio;
   * absent, nothing is spotted. */
  spotting?: { open(session: SessionContext, emit: (event: ServerEvent) => void): SessionSpotterPart };
  /** Opens the recorder of a session asking for `recordAudio` (absent: nothing is recorded). */
  recorders?: { open(session: { transcriptionId: string; accountId: string; rate: number; log: Logger }): SessionRecorder };
  /** The node's group debit (debit-batcher.ts): sessions' debits for their audio in one
   * transaction a window. Absent: each debit is its own transaction (store.debitCharacters). */
  debits?: SessionDebits;
}

/** The recorder of a session with `recordAudio` (src/recording/live-recorder.ts): given the
 * audio as it is placed (or replayed after a takeover) and the session's events. */
export interface SessionRecorder {
  audio(at: bigint, samples: Int16Array): void;
  event(event: ServerEvent): void;
  /** A persisted final with its redacted spans (session samples), before the spool lets go of
   * its audio: cuts and stores the piece up to its end (a later `final` event of the same
   * segment then finds nothing left to cut). */
  final(segment: {
    startSample: bigint;
    endSample: bigint;
    redactions: ReadonlyArray<{ startSample: unknown; endSample: unknown }>;
  }): Promise<void>;
}

/** A session's phrase spotter (phrase-spotting.ts): given the audio as it is taken; closed
 * when the session ends here (`keep`: its detections stored with the leg). */
export interface SessionSpotterPart {
  audio(at: bigint, samples: Int16Array): void;
  close(keep: boolean): Promise<void>;
}

export interface OpenSegment {
  index: number;
  startSample: bigint;
  samples: number;
  lastPartial: string;
  /** suppressBackgroundSpeech: levels of the audio the recognizer heard for this segment. */
  meter: LevelMeter | null;
}

export class SessionContext {
  readonly id: string;
  readonly accountId: string;
  readonly transcriptionId: string;
  readonly encoding: InputEncoding;
  readonly options: Record<string, unknown>;
  readonly log: Logger;
  readonly spool: SessionSpool | null;
  /** Where the session stands (src/core/session-state.ts): its stored state and its phase
   * here (serving, closing, left), as the coordinator's apply() entered it. */
  private live: LiveState;
  // Every field below is private: a part changes one only through the method named for what
  // happened, and each method has one caller, the field's owner (docs/architecture.md, "Who
  // owns what"). Everyone else reads the getter.
  /** Where capture stands; moved by the intake (audio placed) and by a resume (new epoch). */
  private position: CaptureCursor;
  /** Characters debited so far (billing runs ahead of the cursor, src/core/billing.ts). */
  private debited: bigint;
  private segmentIndex: number;
  /** Whether the session takes audio now (sent as `accepting` events). */
  private open = true;
  /** Leaving this node (LiveSession.movedOn, ahead of its queued end): no more audio is taken
   * and the commands still queued are dropped. */
  private goingAway = false;
  /** The client sent `close` on its socket: the close is carried out here, where the client
   * waits for `closed` (a draining node does not ask it to move: src/server/drain.ts). */
  private closeAsked = false;
  /** The stream socket attached now; moved only through attachSocket and releaseSocket. */
  private attached: SessionSocket | null = null;
  /** The session's recognizer, and where its segments begin and end (made with it); bound and
   * unbound by the decoder hold alone. */
  private recognizer: { stream: RecognitionStream; segmentation: Segmentation } | null = null;
  /** The segment the recognizer is hearing now. */
  private openSegment_: OpenSegment | null = null;
  /** What this node holds while it serves the session (set by the registry's claim); every
   * write for the session names it and fails once the session moved on. */
  private held: SessionFence | null = null;
  /** Where the spool's audio starts (audio before it is in persisted segments or was silence
   * the detector dropped). */
  private keptFrom = 0n;
  /** The recognizer's channel adaptation after the last final (RecognitionStream.channelState),
   * spooled with it and given to any later decoder of this session, so a segment decoded on a
   * new decoder (after a restart, or a released hold) hears the channel as the old one would. */
  private channel: number[] | null = null;
  /** recordAudio: the session's recorder (null without the option or a recorder). */
  readonly recorder: SessionRecorder | null;
  /** The leg's loudness per second, measured as its audio is taken (docs/analytics.md);
   * stored when the session closes or this node stops serving it. */
  private loudness: LevelTrackBuilder | null = null;
  /** Phrase spotting: undefined until the first audio opens it, null without it. */
  private spotterPart: SessionSpotterPart | null | undefined = undefined;

  constructor(
    record: SessionRecord,
    readonly deps: LiveSessionDeps,
  ) {
    this.id = record.id;
    this.accountId = record.accountId;
    this.transcriptionId = record.transcriptionId;
    this.options = record.options;
    const enc = INPUT_ENCODINGS[record.options.inputEncoding as keyof typeof INPUT_ENCODINGS];
    if (!enc) throw new ScribedError('INTERNAL', `session ${record.id} has unknown encoding`);
    this.encoding = enc;
    this.live = serving(record.state);
    this.position = {
      epoch: record.epoch,
      epochReceived: Number(record.capturedSamples - (record.epochBases[record.epochBases.length - 1] ?? 0n)),
      capturedSamples: record.capturedSamples,
      epochBases: record.epochBases,
    };
    this.debited = record.charactersCharged;
    this.segmentIndex = record.nextSegmentIndex;
    this.log = deps.log.child({ sessionId: record.id, transcriptionId: record.transcriptionId });
    this.recorder =
      record.options.recordAudio === true && deps.recorders
        ? deps.recorders.open({ transcriptionId: this.transcriptionId, accountId: this.accountId, rate: this.rate, log: this.log })
        : null;
    this.spool = deps.spool?.open(record.id, () => this.fence, record.capturedSamples) ?? null;
  }

  /** Where the machine has the session. */
  get liveState(): LiveState {
    return this.live;
  }

  /** The coordinator's apply() only: the state the machine decided. */
  enter(next: LiveState): void {
    this.live = next;
  }

  /** The stored state: the session's now, or the last it had before it left this node
   * (moved tells that it left). */
  get state(): SessionState {
    return this.live.stored;
  }

  /** The session left this node (moved on to another node or a newer epoch, handed over, or
   * given up): nothing more is written. */
  get moved(): boolean {
    return this.live.phase === 'left';
  }

  /** The client's close waits behind deferred recognition: no more audio, commits or resumes. */
  get closing(): boolean {
    return this.live.phase === 'closing';
  }

  get socket(): SessionSocket | null {
    return this.attached;
  }

  attachSocket(socket: SessionSocket): void {
    this.attached = socket;
  }

  /** The socket lets go of the session (commands still queued from it are dropped); answers
   * it, so the caller can close it with the reason that fits. */
  releaseSocket(): SessionSocket | null {
    const socket = this.attached;
    this.attached = null;
    return socket;
  }

  // ------------------------------------------------------------ capture: the intake, a resume

  get cursor(): CaptureCursor {
    return this.position;
  }

  /** The intake placed a frame: the cursor moves past it. */
  advance(next: CaptureCursor): void {
    this.position = next;
  }

  /** A resume opened `epoch` in the store (epochs.ts): the cursor and the fence follow it. */
  enterEpoch(epoch: number): void {
    this.position = nextEpoch(this.position);
    if (epoch !== this.position.epoch) throw new ScribedError('INTERNAL', 'store and cursor disagree on the epoch');
    if (this.held) this.held = { ...this.held, epoch };
  }

  get charged(): bigint {
    return this.debited;
  }

  /** The intake debited `characters` more for the audio it takes. */
  charge(characters: bigint): void {
    this.debited += characters;
  }

  get fence(): SessionFence | null {
    return this.held;
  }

  /** The registry claimed the session for this node at `epoch`. */
  ownedAt(epoch: number): void {
    if (this.deps.node) this.held = { sessionId: this.id, epoch, node: this.deps.node };
  }

  get levels(): LevelTrackBuilder | null {
    return this.loudness;
  }

  /** The session's phrase spotter: undefined before its first audio, null without one. */
  get spotter(): SessionSpotterPart | null | undefined {
    return this.spotterPart;
  }

  /** The intake's audio: the spotter, opened by `open` on the first call only (null when no
   * rule of the account asks to spot, or no decoder was free). */
  openSpotter(open: () => SessionSpotterPart | null): SessionSpotterPart | null {
    if (this.spotterPart === undefined) this.spotterPart = open();
    return this.spotterPart;
  }

  /** The intake took `samples` at `at`: measured for the leg's loudness track. */
  measureLevels(at: bigint, samples: Int16Array): void {
    (this.loudness ??= new LevelTrackBuilder(this.rate)).add(at, samples);
  }

  // ------------------------------------------------------------ whether audio is taken

  get leaving(): boolean {
    return this.goingAway;
  }

  /** LiveSession.movedOn, at once: the session takes no more audio here. */
  startLeaving(): void {
    this.goingAway = true;
    this.open = false;
  }

  get closeRequested(): boolean {
    return this.closeAsked;
  }

  /** LiveSession.close, as the client's close arrives. */
  noteCloseRequested(): void {
    this.closeAsked = true;
  }

  get accepting(): boolean {
    return this.open;
  }

  /** No more audio (out of Characters, a close waiting, the backlog bound, the end). */
  stopAccepting(): void {
    this.open = false;
  }

  /** Audio taken again when the account can pay for it and the node's backlog does not hold
   * the session (`heldByBacklog`); answers the new value. */
  async reopen(heldByBacklog: boolean): Promise<boolean> {
    this.open = !heldByBacklog && (await this.canAccept());
    return this.open;
  }

  // ------------------------------------------------------------ recognizer and segments

  get stream(): RecognitionStream | null {
    return this.recognizer?.stream ?? null;
  }

  get segmentation(): Segmentation | null {
    return this.recognizer?.segmentation ?? null;
  }

  /** The decoder hold opened a recognizer for the session. */
  bindRecognizer(stream: RecognitionStream, segmentation: Segmentation): void {
    this.recognizer = { stream, segmentation };
  }

  /** The decoder hold let the recognizer go (released or lost): answers it. */
  unbindRecognizer(): RecognitionStream | null {
    const stream = this.stream;
    this.recognizer = null;
    return stream;
  }

  get segment(): OpenSegment | null {
    return this.openSegment_;
  }

  get nextSegmentIndex(): number {
    return this.segmentIndex;
  }

  /** A segment opens (recognition) or is restored from the spool (replay). */
  beginSegment(startSample: bigint, meter: LevelMeter | null, restored?: { index: number; samples: number }): OpenSegment {
    const index = restored ? restored.index : this.segmentIndex++;
    if (restored) this.segmentIndex = Math.max(this.segmentIndex, index + 1);
    this.openSegment_ = { index, startSample, samples: restored?.samples ?? 0, lastPartial: '', meter };
    return this.openSegment_;
  }

  /** The detector decides again where restored audio's segments lie: the first it opens takes
   * `index`, the index of the segment open when the audio was spooled (replay). */
  restartSegmentsAt(index: number): void {
    this.segmentIndex = index;
  }

  /** `seg` ended (its final requested) or was lost with its recognizer; nothing when another
   * segment is open by now. */
  endSegment(seg: OpenSegment): void {
    if (this.openSegment_ === seg) this.openSegment_ = null;
  }

  // ------------------------------------------------------------ spool and channel state

  get spoolKeptFrom(): bigint {
    return this.keptFrom;
  }

  get channelState(): number[] | null {
    return this.channel;
  }

  /** The spool keeps its audio from `from` on, with the channel state. */
  trimSpool(from: bigint): void {
    this.spool?.keepFrom(from, this.channel);
    this.keptFrom = from;
  }

  /** The spool keeps no audio, only the channel state. */
  emptySpool(): void {
    this.spool?.clear(this.channel);
    this.keptFrom = this.position.capturedSamples;
  }

  /** Restored audio: the spool holds it from `from` (nothing trimmed). */
  spoolHoldsFrom(from: bigint): void {
    this.keptFrom = from;
  }

  /** A final's channel state (finals.ts); a decoder that cannot say leaves the previous one. */
  noteChannelState(state: number[] | null | undefined): void {
    if (state !== undefined && state !== null) this.channel = state;
  }

  /** After a restart: the channel state spooled with the last final, for the next decoder. */
  restoreChannelState(state: number[]): void {
    if (this.recognizer === null && this.channel === null) this.channel = state;
  }

  get rate(): number {
    return this.encoding.sampleRateHz;
  }

  /** Whether the account pays for more audio: Characters charged ahead of the cursor, or a
   * balance left to debit. */
  async canAccept(): Promise<boolean> {
    const prepaidSamples = this.charged * BigInt(this.rate) - this.cursor.capturedSamples;
    if (prepaidSamples > 0n) return true;
    const account = await this.store.getAccount(this.accountId);
    return (account?.characters ?? 0n) > 0n;
  }

  get metrics(): Metrics {
    return this.deps.metrics;
  }

  get store(): Store {
    return this.deps.store;
  }
}
