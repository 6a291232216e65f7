// What the streamer makes of each server event (docs/protocol.md), as a pure reducer: an event
// changes the stream's state (its place on the timeline in CaptureAccount, whether the server
// accepts audio, the finals received, the audio lost to gaps) and yields decisions the
// streamer carries out (send, wait for Characters, drop the socket, emit, log). No I/O, no
// timers: the clock is passed in, as is everything else.
import { segmentIndex, type ServerEvent } from '../core/protocol.js';
import { CaptureAccount, wireSamples } from './capture-accounting.js';

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

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export type Decision =
  /** Audio up to acct.acknowledged is held by the server (`samples` newly so). */
  | { kind: 'acknowledged'; samples: number }
  /** The socket is ready: the reconnect backoff starts over. */
  | { kind: 'ready' }
  /** The server stopped accepting for want of Characters: ask again later, or give up. */
  | { kind: 'wait-for-credit' }
  /** Room or permission to send changed: wake blocked writers and send what the window allows. */
  | { kind: 'send' }
  | { kind: 'partial'; segment: PartialSegment }
  | { kind: 'final'; segment: FinalSegment }
  | { kind: 'notice'; code: string; message: string }
  /** A server `error` event, for the caller's 'error' listeners. */
  | { kind: 'server-error'; code: string; message: string }
  /** Audio this client sent that the server filled with silence. */
  | { kind: 'lost'; samples: number }
  /** Give up this socket and resume (a resume says exactly what the server holds). */
  | { kind: 'drop-socket' }
  /** The node is draining: move to another node make-before-break (resume, open the next
   * socket, then let this one go), within `withinMs`. */
  | { kind: 'move'; withinMs: number }
  | { kind: 'closed'; capturedSamples: number; segments: number }
  | { kind: 'log'; level: LogLevel; fields: Record<string, unknown>; msg: string };

/** Frame errors after which the next send starts again from the acknowledged point. */
const REWIND_CODES = new Set(['NOT_ACCEPTING', 'INSUFFICIENT_CHARACTERS', 'STALE_EPOCH', 'GAP_TOO_LARGE']);

export class StreamEventState {
  readonly acct: CaptureAccount;
  /** The server takes audio (its last `ready` or `accepting` said so). */
  accepting = true;
  /** When the server stopped accepting for want of Characters; null while the account pays. */
  noCreditSince: number | null = null;
  /** Where the timeline stood then. */
  private noCreditAt = 0;
  maxPayloadBytes = 131072;
  /** Positions below this were dropped by overflow and sent as silence. */
  silentBelow = 0;
  /** Samples this client sent that the server reported filling with silence. */
  gapSamples = 0;
  readonly finals = new Map<string, FinalSegment>();

  constructor(
    /** Samples a Character pays for (the rate: 1 Character per started second). */
    private readonly samplesPerCharacter: number,
    acct = new CaptureAccount(),
  ) {
    this.acct = acct;
  }

  /** Apply one server event at time `now` (ms); returns what the streamer does about it. */
  apply(e: ServerEvent, now: number): Decision[] {
    void now;
    switch (e.type) {
      case 'ready': {
        const samples = this.acct.onReady(e.epoch, e.sampleOffset, wireSamples(e.capturedSamples));
        this.accepting = e.accepting !== false;
        this.paidAgain();
        if (typeof e.maxFramePayloadBytes === 'number') this.maxPayloadBytes = e.maxFramePayloadBytes;
        return [
          { kind: 'acknowledged', samples },
          { kind: 'ready' },
          {
            kind: 'log',
            level: 'info',
            fields: { epoch: e.epoch, capturedSamples: e.capturedSamples, resend: this.acct.unacknowledged },
            msg: 'stream ready',
          },
          ...(this.accepting ? [] : [{ kind: 'wait-for-credit' } as const]),
          { kind: 'send' },
        ];
      }
      case 'ack': {
        if (e.epoch !== this.acct.epoch) return [];
        const samples = this.acct.onAck(wireSamples(e.capturedSamples));
        this.paidAgain();
        return [...(samples > 0 ? [{ kind: 'acknowledged', samples } as const] : []), { kind: 'send' }];
      }
      case 'partial':
        return [{ kind: 'partial', segment: { segmentId: e.segmentId, text: e.text, startMs: e.start.ms, endMs: e.end.ms } }];
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
        return known ? [] : [{ kind: 'final', segment: seg }];
      }
      case 'accepting': {
        this.accepting = e.accepting !== false;
        // Said once per wait for Characters: each retry's refusal is the same news again.
        const again = !this.accepting && this.noCreditSince !== null;
        const out: Decision[] = [
          {
            kind: 'log',
            level: again ? 'debug' : 'warn',
            fields: { accepting: this.accepting, reason: e.reason },
            msg: 'server changed accepting',
          },
        ];
        if (this.accepting) return [...out, { kind: 'send' }];
        this.acct.rewind();
        // Only Characters need someone to act; a shutdown ends the socket, and a node's
        // recognition backlog says accepting: true once it drains.
        if (e.reason === 'INSUFFICIENT_CHARACTERS' || e.reason === undefined) out.push({ kind: 'wait-for-credit' });
        return out;
      }
      case 'notice':
        return [
          { kind: 'log', level: 'info', fields: { code: e.code, message: e.message }, msg: 'server notice' },
          { kind: 'notice', code: e.code, message: e.message },
        ];
      case 'gap':
        return this.onGap(e);
      case 'error': {
        // Frames already in flight when the server stopped accepting are refused, each: expected,
        // and said once by the accepting event, not once per frame.
        const expected = REWIND_CODES.has(e.code) && !this.accepting;
        const out: Decision[] = [
          {
            kind: 'log',
            level: expected ? 'debug' : 'warn',
            fields: { code: e.code, message: e.message, fatal: e.fatal },
            msg: 'server error event',
          },
        ];
        if (REWIND_CODES.has(e.code)) this.acct.rewind();
        else if (e.fatal !== true) {
          // A frame the server failed to take for another reason (storage, recognizer, a
          // malformed frame): frames already in flight after it would land past a hole and be
          // filled with silence. Resume instead: its count says where to re-send from.
          out.push(
            { kind: 'log', level: 'error', fields: { code: e.code }, msg: 'the server did not take a frame; reconnecting to resume' },
            { kind: 'drop-socket' },
          );
        }
        out.push({ kind: 'server-error', code: e.code, message: e.message });
        return out;
      }
      case 'closed':
        return [{ kind: 'closed', capturedSamples: wireSamples(e.capturedSamples), segments: e.segments }];
      case 'reconnect':
        return [
          {
            kind: 'log',
            level: 'info',
            fields: { reason: e.reason, withinMs: e.withinMs },
            msg: 'server asks to reconnect elsewhere; moving',
          },
          { kind: 'move', withinMs: e.withinMs },
        ];
      default:
        return []; // pong, committed, future events
    }
  }

  /** The finals received, in segment order (an id that is not a segment's sorts last). */
  finalsInOrder(): FinalSegment[] {
    const index = (id: string) => segmentIndex(id) ?? Number.MAX_SAFE_INTEGER;
    return [...this.finals.values()].sort((a, b) => index(a.segmentId) - index(b.segmentId));
  }

  /** Where the wait for Characters stands at `now`: give up once `timeoutMs` has passed since
   * the server stopped accepting, else ask again (by resuming) within `retryMs`. */
  creditVerdict(now: number, timeoutMs: number, retryMs: number): { giveUp: true } | { giveUp: false; retryInMs: number } {
    if (this.noCreditSince === null) {
      this.noCreditSince = now;
      this.noCreditAt = this.acct.acknowledged;
    }
    const left = this.noCreditSince + timeoutMs - now;
    if (left <= 0) return { giveUp: true };
    return { giveUp: false, retryInMs: Math.min(retryMs, left) };
  }

  /** The wait for Characters ends only when the server takes more audio than a Character
   * pays for past where it stopped: a `ready` or `accepting` saying true proves nothing, as
   * the rest of the last second paid for (less than a frame, say) lets the server say true
   * and refuse the next frame, again and again. */
  private paidAgain(): void {
    if (this.noCreditSince !== null && this.acct.acknowledged >= this.noCreditAt + this.samplesPerCharacter) this.noCreditSince = null;
  }

  private onGap(e: Extract<ServerEvent, { type: 'gap' }>): Decision[] {
    // This client never leaves holes: a gap means the server lost frames it was sent
    // (refused or dropped after a failure) and went on with a later one.
    const lost = this.acct.realAudioInGap({ epoch: e.epoch, sampleOffset: e.sampleOffset, samples: e.samples }, this.silentBelow);
    if (!lost) {
      return [
        {
          kind: 'log',
          level: 'warn',
          fields: { samples: e.samples, sampleOffset: e.sampleOffset, epoch: e.epoch },
          msg: 'server filled a gap with silence (no audio of this client in it)',
        },
      ];
    }
    const samples = lost.to - lost.from;
    this.gapSamples += samples;
    // Frames after the lost ones may be refused or taken; a resume says exactly what the
    // server holds and the re-send goes on from there (nothing is sent twice).
    return [
      { kind: 'lost', samples },
      {
        kind: 'log',
        level: 'error',
        fields: {
          fromSample: lost.from,
          toSample: lost.to,
          samples,
          epoch: e.epoch,
          sampleOffset: e.sampleOffset,
          gapSamplesTotal: this.gapSamples,
        },
        msg: 'the server filled audio this client sent with silence; reconnecting to resume',
      },
      { kind: 'drop-socket' },
    ];
  }
}
