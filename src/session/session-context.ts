// What one live session's parts share: who the session is, what it is bound to (socket,
// recognizer, spool, fence) and where it stands (state, capture cursor, open segment). The
// coordinator (live-session.ts) makes it and owns it; each part (intake, recognition,
// finals, deferral, fan-out, fenced writes, decoder hold, replay) reads and moves the fields
// of its own responsibility, and only on the session's queue or recognition feed.
import type { Logger } from 'pino';
import { ScribedError } from '../core/errors.js';
import { INPUT_ENCODINGS, type InputEncoding } from '../core/audio/encodings.js';
import type { CaptureCursor } from '../core/capture-cursor.js';
import type { LevelMeter } from '../core/background-speech.js';
import type { LevelTrackBuilder } from '../core/analytics/levels.js';
import type { Engine, RecognitionStream } from '../engine/types.js';
import type { SessionFence, SessionRecord, SessionState, Store } from '../store/store.js';
import type { Metrics } from '../obs/metrics.js';
import type { ServerEvent } from '../core/protocol.js';
import type { LiveState } from '../core/session-state.js';
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

/** Audio acknowledged and not decoded by a live recognizer (recovered from the spool after a
 * restart, or left undecoded by a recognizer that failed), from `startSample`, frame by frame
 * as it first arrived: fed to the session's next decoder. */
export interface PendingReplay {
  startSample: bigint;
  frames: Int16Array[];
}

export class SessionContext {
  readonly id: string;
  readonly accountId: string;
  readonly transcriptionId: string;
  readonly encoding: InputEncoding;
  readonly options: Record<string, unknown>;
  readonly log: Logger;
  readonly spool: SessionSpool | null;
  /** Where the session stands (src/core/session-state.ts), as the coordinator's apply()
   * entered it; LEFT once it left this node. */
  private current: LiveState;
  /** The stored state it last had here (what callers read once it left). */
  private lastStored: SessionState;
  cursor: CaptureCursor;
  /** Characters debited so far (billing runs ahead of the cursor, src/core/billing.ts). */
  charged: bigint;
  nextSegmentIndex: number;
  accepting = true;
  /** The stream socket attached now; moved only through attachSocket and releaseSocket. */
  private attached: SessionSocket | null = null;
  /** The session's recognizer, and where its segments begin and end (made with it). */
  stream: RecognitionStream | null = null;
  segmentation: Segmentation | null = null;
  segment: OpenSegment | null = null;
  /** What this node holds while it serves the session (set by the registry's claim); every
   * write for the session names it and fails once the session moved on. */
  fence: SessionFence | null = null;
  replay: PendingReplay | null = null;
  /** Where the spool's audio starts (audio before it is in persisted segments or was silence
   * the detector dropped). */
  spoolKeptFrom = 0n;
  /** The recognizer's channel adaptation after the last final (RecognitionStream.channelState),
   * spooled with it and given to any later decoder of this session, so a segment decoded on a
   * new decoder (after a restart, or a released hold) hears the channel as the old one would. */
  channelState: number[] | null = null;
  /** recordAudio: the session's recorder (null without the option or a recorder). */
  recorder: SessionRecorder | null = null;
  /** The leg's loudness per second, measured as its audio is taken (docs/analytics.md);
   * stored when the session closes or this node stops serving it. */
  levels: LevelTrackBuilder | null = null;
  /** Phrase spotting: undefined until the first audio opens it, null without it. */
  spotter: SessionSpotterPart | null | undefined = undefined;

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
    this.current = record.state;
    this.lastStored = record.state;
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

  /** Where the machine has the session: its stored state, or LEFT. */
  get liveState(): LiveState {
    return this.current;
  }

  /** The coordinator's apply() only: the state the machine decided. */
  enter(next: LiveState): void {
    this.current = next;
    if (next !== 'LEFT') this.lastStored = next;
  }

  /** The stored state: the session's now, or the last it had before it left this node
   * (moved tells that it left). */
  get state(): SessionState {
    return this.lastStored;
  }

  /** The session left this node (moved on to another node or a newer epoch, or was given up):
   * nothing more is written. */
  get moved(): boolean {
    return this.current === 'LEFT';
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
