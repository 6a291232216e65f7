// What callers (the registry, the socket routes, health and metrics) read of a live session:
// its identity and where it stands, from the session's shared context (session-context.ts).
import type { InputEncoding } from '../core/audio/encodings.js';
import type { CaptureCursor } from '../core/capture-cursor.js';
import type { RecognitionStream } from '../engine/types.js';
import type { ServerEvent } from '../core/protocol.js';
import type { SessionFence, SessionState } from '../store/store.js';
import type { SessionContext } from './session-context.js';

export class SessionView {
  constructor(protected readonly ctx: SessionContext) {}

  get id(): string {
    return this.ctx.id;
  }
  get accountId(): string {
    return this.ctx.accountId;
  }
  get transcriptionId(): string {
    return this.ctx.transcriptionId;
  }
  get encoding(): InputEncoding {
    return this.ctx.encoding;
  }
  /** The largest audio payload the session takes in one command. */
  get maxFramePayloadBytes(): number {
    return this.ctx.deps.maxFramePayloadBytes;
  }
  get options(): Record<string, unknown> {
    return this.ctx.options;
  }
  get state(): SessionState {
    return this.ctx.state;
  }
  get cursor(): CaptureCursor {
    return this.ctx.cursor;
  }
  get accepting(): boolean {
    return this.ctx.accepting;
  }
  get rate(): number {
    return this.ctx.rate;
  }
  get hasSocket(): boolean {
    return this.ctx.socket !== null;
  }
  /** The session's recognizer (tests reach it to stall or crash its worker). */
  get stream(): RecognitionStream | null {
    return this.ctx.stream;
  }
  get ownership(): SessionFence | null {
    return this.ctx.moved ? null : this.ctx.fence;
  }
  get hasMoved(): boolean {
    return this.ctx.moved;
  }
  /** True while a recognizer is open for this session (a socket attaching needs no new one). */
  get holdsDecoder(): boolean {
    return this.ctx.stream !== null;
  }

  /** A stream socket is attached and its client can resume elsewhere (scribed's protocol). */
  get socketCanResume(): boolean {
    return this.ctx.socket?.canResume === true;
  }
  /** The client sent `close` on its socket (the close is under way here). */
  get closeRequested(): boolean {
    return this.ctx.closeRequested;
  }
  /** Samples of the open segment the recognizer has heard; 0 between utterances. */
  get openSegmentSamples(): number {
    return this.ctx.segment?.samples ?? 0;
  }
  /** Send one event to the stream socket alone (not to watchers: it is about that socket). */
  tellSocket(event: ServerEvent): boolean {
    const socket = this.ctx.socket;
    if (!socket || this.ctx.moved) return false;
    socket.send(event);
    return true;
  }
  /** Resolves once what the session queued for storage so far (audio, a final's spool cut
   * and channel state) is stored. */
  whenStored(): Promise<void> {
    return this.ctx.spool?.whenDurable() ?? Promise.resolve();
  }
}
