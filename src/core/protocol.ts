// What the server and its clients must agree on, defined once: the API's base path, the
// stream socket's close codes, segment ids and the events the server sends (docs/protocol.md).
// The server builds every event with `serverEvent`; clients read them with `parseServerEvent`,
// so a field renamed on one side fails to compile on the other.
import type { TimePoint } from './capture-cursor.js';
import type { Entity } from './text-options.js';

export type { TimePoint };

/** Base path of the `/sound_clone/api/v1` family. */
export const API_BASE = '/sound_clone/api/v1';

/** WebSocket close codes of the stream socket (docs/protocol.md, "Close codes"). */
export const CLOSE_CODES = {
  normal: 1000,
  internal: 1011,
  serviceRestart: 1012,
  tryAgainLater: 1013,
  superseded: 4000,
  sessionClosed: 4001,
  /** A watcher that did not read its events fast enough was let go (docs/protocol.md,
   * "Watching a session"). */
  watcherTooSlow: 4002,
  /** A watch socket a desk session opened, closed because that session ended (logout,
   * expiry, `accounts desk-logout` or `revoke-key`): docs/desk.md. */
  deskSessionEnded: 4003,
} as const;

/** A segment's id: `seg_<index>`, the index counting from 0 per session. */
export function segmentId(index: number): string {
  return `seg_${index}`;
}

/** The index of a segment id; null for anything that is not one. */
export function segmentIndex(id: string): number | null {
  const m = /^seg_(0|[1-9]\d*)$/.exec(id);
  return m ? Number(m[1]) : null;
}

// ------------------------------------------------------------------ server events

export interface ReadyEvent {
  type: 'ready';
  sessionId: string;
  transcriptionId: string;
  epoch: number;
  sampleOffset: number;
  /** Session-wide samples held, decimal string (exact beyond 2^53). */
  capturedSamples: string;
  inputEncoding: string;
  sampleRateHz: number;
  accepting: boolean;
  maxFramePayloadBytes: number;
  openSegmentId: string | null;
}

export interface AckEvent {
  type: 'ack';
  epoch: number;
  sampleOffset: number;
  capturedSamples: string;
  /** Samples of the acknowledged frame that were already held (dropped as duplicates). */
  duplicateSamples?: number;
}

export interface PartialEvent {
  type: 'partial';
  segmentId: string;
  text: string;
  start: TimePoint;
  end: TimePoint;
}

export interface WordTiming {
  word: string;
  /** null when the recognizer gives no confidence for the word. */
  confidence: number | null;
  start: TimePoint;
  end: TimePoint;
}

export interface CharacterTiming {
  char: string;
  start: TimePoint;
  end: TimePoint;
}

export type FinalTrigger = 'commit' | 'close' | 'bound' | 'pause' | 'shutdown' | 'vad';

export interface FinalEvent {
  type: 'final';
  segmentId: string;
  text: string;
  trigger: FinalTrigger;
  start: TimePoint;
  end: TimePoint;
  /** The recognizer's text: with removeDisfluencies, and when readableText changed it. */
  rawText?: string;
  /** With entityCategories: entities found in `text`. */
  entities?: Entity[];
  /** suppressBackgroundSpeech: words left out as background speech. */
  suppressedWords?: number;
  /** Present when the recognizer gives word times. */
  words?: WordTiming[];
  /** Derived from the word times (src/core/alignment.ts), present with `words`. */
  characters?: CharacterTiming[];
}

export interface CommittedEvent {
  type: 'committed';
  segmentId: string | null;
  capturedSamples: string;
}

export interface GapEvent {
  type: 'gap';
  epoch: number;
  sampleOffset: number;
  samples: number;
  capturedSamples: string;
}

/** Why a session stopped accepting audio: the account's Characters ran out, the server is
 * stopping, or (deferred recognition) the node's backlog of audio waiting for a recognizer is
 * at its bound; the last one clears by itself with an `accepting: true` event. */
export type AcceptingReason = 'INSUFFICIENT_CHARACTERS' | 'SERVER_SHUTDOWN' | 'RECOGNITION_BACKLOG';

export interface AcceptingEvent {
  type: 'accepting';
  accepting: boolean;
  reason?: AcceptingReason;
}

export interface NoticeEvent {
  type: 'notice';
  code: string;
  message: string;
}

export interface ErrorEvent {
  type: 'error';
  code: string;
  message: string;
  /** true: the socket closes after this event. */
  fatal: boolean;
}

export interface PongEvent {
  type: 'pong';
  id?: string;
}

/** The first event on a watch socket, and again whenever the session pauses (its stream
 * socket went away): where the session stands, small whatever the call's length. Finals
 * before `openSegmentId` are in the transcript of `transcriptionId` (segment ids match). */
export interface WatchingEvent {
  type: 'watching';
  sessionId: string;
  transcriptionId: string;
  /** RECORDING or PAUSED (a closed session takes no watchers). */
  state: string;
  /** A stream socket (the one sending audio) is attached now. */
  streaming: boolean;
  epoch: number;
  capturedSamples: string;
  inputEncoding: string;
  sampleRateHz: number;
  accepting: boolean;
  openSegmentId: string | null;
  /** Segment ids used so far (seg_0 .. seg_{segments-1}); finals of the ones before
   * `openSegmentId` that are not pending are in the transcript already. */
  segments: number;
}

export interface ClosedEvent {
  type: 'closed';
  status: 'COMPLETED';
  capturedSamples: string;
  segments: number;
}

/** A live rule matched (docs/rules.md): sent on the session's socket and its watchers'. */
export interface AlertEvent {
  type: 'alert';
  alertId: string;
  ruleId: string;
  ruleName: string;
  /** phrases, pattern, entity, silence or talkOver */
  condition: string;
  /** The segment whose final (or partial) matched, or that ended the silence or talk-over. */
  segmentId: string;
  final: boolean;
  /** The segment's text as read, and where in it the rule matched (text conditions). */
  text: string;
  match: { text: string; start: number; end: number } | null;
  speaker: string | null;
  callId: string | null;
  /** Session-wide ms: the match's words, the silence, or the talk-over. */
  startMs: number;
  endMs: number;
  /** Talk-over: the leg talked over. */
  otherSpeaker?: string | null;
  /** "spotted": a phrase rule with spot found the phrase in the audio (keyphrase search), not
   * in the transcript; `text` and `match` are the phrase. Absent: read from the transcript. */
  source?: 'spotted';
}

/** The node is draining (it stops for a deploy): move the session to another node now,
 * make-before-break (resume, open the new socket, then let this one go). Sent at a segment
 * boundary, right after a final, so the move never cuts an utterance. Past `withinMs` the
 * node closes the socket as a stopping node does (close 1012, open segment finalized with
 * trigger `shutdown`). Clients that cannot resume ignore it (docs/protocol.md). */
export interface ReconnectEvent {
  type: 'reconnect';
  /** Why: `NODE_DRAINING` (the only one so far). */
  reason: string;
  /** Milliseconds from this event until the node closes the socket. */
  withinMs: number;
  /** The same instant as an ISO time (the server's clock). */
  deadline: string;
}

/** Every event the server sends on the stream socket. */
export type ServerEvent =
  | ReadyEvent
  | AckEvent
  | PartialEvent
  | FinalEvent
  | CommittedEvent
  | GapEvent
  | AcceptingEvent
  | NoticeEvent
  | ErrorEvent
  | PongEvent
  | WatchingEvent
  | ClosedEvent
  | AlertEvent
  | ReconnectEvent;

export type ServerEventType = ServerEvent['type'];

type Fields<T extends ServerEvent> = Omit<T, 'type'>;

/** The server's builders: one per event, so every event on the wire has its declared shape. */
export const serverEvent = {
  ready: (f: Fields<ReadyEvent>): ReadyEvent => ({ type: 'ready', ...f }),
  ack: (f: Fields<AckEvent>): AckEvent => ({ type: 'ack', ...f }),
  partial: (f: Fields<PartialEvent>): PartialEvent => ({ type: 'partial', ...f }),
  final: (f: Fields<FinalEvent>): FinalEvent => ({ type: 'final', ...f }),
  committed: (f: Fields<CommittedEvent>): CommittedEvent => ({ type: 'committed', ...f }),
  gap: (f: Fields<GapEvent>): GapEvent => ({ type: 'gap', ...f }),
  accepting: (f: Fields<AcceptingEvent>): AcceptingEvent => ({ type: 'accepting', ...f }),
  notice: (f: Fields<NoticeEvent>): NoticeEvent => ({ type: 'notice', ...f }),
  error: (f: Fields<ErrorEvent>): ErrorEvent => ({ type: 'error', ...f }),
  pong: (f: Fields<PongEvent>): PongEvent => ({ type: 'pong', ...f }),
  watching: (f: Fields<WatchingEvent>): WatchingEvent => ({ type: 'watching', ...f }),
  closed: (f: Fields<ClosedEvent>): ClosedEvent => ({ type: 'closed', ...f }),
  alert: (f: Fields<AlertEvent>): AlertEvent => ({ type: 'alert', ...f }),
  reconnect: (f: Fields<ReconnectEvent>): ReconnectEvent => ({ type: 'reconnect', ...f }),
} as const;

// What a client checks before it trusts an event: the fields it relies on, by kind. Optional
// fields and fields a newer server adds pass through unchecked.
type Kind = 'string' | 'number' | 'boolean' | 'time' | 'string?' | 'string|null';

const REQUIRED: { [K in ServerEventType]: Record<string, Kind> } = {
  ready: {
    sessionId: 'string',
    transcriptionId: 'string',
    epoch: 'number',
    sampleOffset: 'number',
    capturedSamples: 'string',
    inputEncoding: 'string',
    sampleRateHz: 'number',
    accepting: 'boolean',
    maxFramePayloadBytes: 'number',
    openSegmentId: 'string|null',
  },
  ack: { epoch: 'number', sampleOffset: 'number', capturedSamples: 'string' },
  partial: { segmentId: 'string', text: 'string', start: 'time', end: 'time' },
  final: { segmentId: 'string', text: 'string', trigger: 'string', start: 'time', end: 'time' },
  committed: { segmentId: 'string|null', capturedSamples: 'string' },
  gap: { epoch: 'number', sampleOffset: 'number', samples: 'number', capturedSamples: 'string' },
  accepting: { accepting: 'boolean', reason: 'string?' },
  notice: { code: 'string', message: 'string' },
  error: { code: 'string', message: 'string', fatal: 'boolean' },
  pong: { id: 'string?' },
  watching: {
    sessionId: 'string',
    transcriptionId: 'string',
    state: 'string',
    streaming: 'boolean',
    epoch: 'number',
    capturedSamples: 'string',
    inputEncoding: 'string',
    sampleRateHz: 'number',
    accepting: 'boolean',
    openSegmentId: 'string|null',
    segments: 'number',
  },
  closed: { status: 'string', capturedSamples: 'string', segments: 'number' },
  alert: {
    alertId: 'string',
    ruleId: 'string',
    ruleName: 'string',
    condition: 'string',
    segmentId: 'string',
    final: 'boolean',
    startMs: 'number',
    endMs: 'number',
  },
  reconnect: { reason: 'string', withinMs: 'number', deadline: 'string' },
};

function isTimePoint(v: unknown): v is TimePoint {
  if (typeof v !== 'object' || v === null) return false;
  const t = v as Record<string, unknown>;
  return (
    typeof t.sample === 'string' &&
    typeof t.ms === 'number' &&
    typeof t.epoch === 'number' &&
    typeof t.epochSample === 'number' &&
    typeof t.epochMs === 'number'
  );
}

function hasKind(v: unknown, kind: Kind): boolean {
  switch (kind) {
    case 'time':
      return isTimePoint(v);
    case 'string?':
      return v === undefined || typeof v === 'string';
    case 'string|null':
      return v === null || typeof v === 'string';
    default:
      return typeof v === kind;
  }
}

export type ParsedServerEvent =
  | { ok: true; event: ServerEvent }
  /** `unknown`: a well-formed event of a type this client does not know (a newer server):
   * ignore it. `invalid`: not JSON, or a known type without the fields it must have. */
  | { ok: false; kind: 'unknown' | 'invalid'; reason: string };

/** A client's reading of one text frame from the server. */
export function parseServerEvent(text: string): ParsedServerEvent {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, kind: 'invalid', reason: 'not JSON' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { ok: false, kind: 'invalid', reason: 'not a JSON object' };
  const obj = value as Record<string, unknown>;
  if (typeof obj.type !== 'string') return { ok: false, kind: 'invalid', reason: 'no type' };
  if (!Object.hasOwn(REQUIRED, obj.type)) return { ok: false, kind: 'unknown', reason: `unknown event type ${obj.type}` };
  const required = REQUIRED[obj.type as ServerEventType];
  for (const [field, kind] of Object.entries(required)) {
    if (!hasKind(obj[field], kind)) return { ok: false, kind: 'invalid', reason: `${obj.type}: field ${field} is not a ${kind}` };
  }
  if (obj.type === 'final' && obj.words !== undefined) {
    const words = obj.words;
    if (
      !Array.isArray(words) ||
      !words.every((w) => typeof w === 'object' && w !== null && typeof w.word === 'string' && isTimePoint(w.start) && isTimePoint(w.end))
    ) {
      return { ok: false, kind: 'invalid', reason: 'final: words are not word timings' };
    }
  }
  return { ok: true, event: obj as unknown as ServerEvent };
}
