// How an adapter drives a live session: the session's typed commands bound to one socket, and
// the one backpressure rule every adapter's socket follows (docs/architecture.md, "Driving a
// session from an adapter"). An adapter decodes its own wire at its edge (the native socket's
// frames: server/ws/native-wire.ts; Deepgram's raw audio and JSON: facades/deepgram) and calls
// these; the session never sees wire bytes.
import type { AudioInput } from '../core/frame.js';
import type { LiveSession } from './live-session.js';
import type { SessionSocket } from './session-context.js';

/** Pause reading from a socket whose sessions have this many commands queued, resume at the low
 * mark: backpressure reaches the client through TCP instead of memory growth. */
export const QUEUE_HIGH = 64;
export const QUEUE_LOW = 16;

/** What backpressure needs of a socket (ws's WebSocket has it). */
export interface PausableSource {
  pause(): void;
  resume(): void;
  readonly isPaused: boolean;
}

/** Counts one socket's commands still queued on its sessions (every session of the socket:
 * a call's legs share one count) and pauses the socket between the marks. */
export class Backpressure {
  private queued = 0;

  constructor(private readonly source: PausableSource) {}

  track(work: Promise<void>): Promise<void> {
    this.queued += 1;
    if (this.queued >= QUEUE_HIGH && !this.source.isPaused) this.source.pause();
    return work.finally(() => {
      this.queued -= 1;
      if (this.queued <= QUEUE_LOW && this.source.isPaused) this.source.resume();
    });
  }
}

/** One session driven from one socket: the session's commands with that socket's sink, each
 * counted by the socket's backpressure. Every promise resolves (a refusal is an `error` event
 * on the sink, in order). */
export class SessionDriver {
  constructor(
    readonly session: LiveSession,
    readonly sink: SessionSocket,
    private readonly pressure: Backpressure | null = null,
  ) {}

  private track(work: Promise<void>): Promise<void> {
    return this.pressure ? this.pressure.track(work) : work;
  }

  /** Audio in the session's input encoding (whole samples, at most maxFramePayloadBytes). */
  audio(frame: AudioInput): Promise<void> {
    return this.track(this.session.audio(this.sink, frame));
  }

  commit(): Promise<void> {
    return this.track(this.session.commit(this.sink));
  }

  close(): Promise<void> {
    return this.track(this.session.close(this.sink));
  }

  ping(id?: string): Promise<void> {
    return this.track(this.session.ping(this.sink, id));
  }

  keepAlive(): Promise<void> {
    return this.track(this.session.keepAlive(this.sink));
  }

  /** A message the edge could not read (see LiveSession.refuse). */
  refuse(err: unknown, kind: 'audio' | 'control'): Promise<void> {
    return this.track(this.session.refuse(this.sink, err, kind));
  }

  /** The socket's end: the session pauses unless it was closed first. */
  detach(): Promise<void> {
    return this.session.detach(this.sink);
  }
}
