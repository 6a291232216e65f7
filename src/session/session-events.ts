// Event fan-out of a live session: every event goes to the stream socket and to the read-only
// watchers (src/server/ws/watch.ts), but acks, pongs and errors, which are about the stream
// socket alone (acks are sent by frame-intake.ts straight to the socket that sent the frame).
import { toScribedError, ScribedError } from '../core/errors.js';
import { wsError } from '../core/envelope.js';
import { segmentId, serverEvent, type ServerEvent, type WatchingEvent } from '../core/protocol.js';
import { sessionNotices } from '../core/session-notices.js';
import type { SessionContext, SessionSocket } from './session-context.js';

export class SessionEvents {
  private readonly watchers = new Set<SessionSocket>();
  /** In-process listeners of every event (the session's recorder). */
  private readonly taps: Array<(event: ServerEvent) => void> = [];

  constructor(private readonly ctx: SessionContext) {}

  emit(event: ServerEvent): void {
    this.ctx.socket?.send(event);
    if (event.type === 'pong' || event.type === 'error') return;
    for (const t of this.taps) t(event);
    for (const w of this.watchers) w.send(event);
    this.ctx.deps.observeEvent?.(this.ctx, event, (e) => this.emit(e));
  }

  emitError(err: unknown): void {
    const e = toScribedError(err);
    this.ctx.metrics.frameErrors.inc({ code: e.code });
    if (e.code === 'INTERNAL') this.ctx.log.error({ err: e.cause ?? e }, 'session error');
    this.emit(wsError(e));
  }

  /** Add a watcher: it is sent the `watching` snapshot at once, then the session's events as
   * they happen (synchronously, so no event falls between the snapshot and the first one).
   * Whether a stream socket is attached does not matter; no decoder is taken. */
  watch(watcher: SessionSocket, limit: number): void {
    if (this.ctx.moved) throw new ScribedError('SESSION_MOVED');
    if (this.ctx.state === 'CLOSED') throw new ScribedError('SESSION_CLOSED');
    if (this.watchers.size >= limit)
      throw new ScribedError('WATCHER_LIMIT', `session ${this.ctx.id} already has ${limit} watchers, its limit`);
    this.watchers.add(watcher);
    watcher.send(this.watchingEvent());
  }

  /** Listen to the session's events in process (after the stream socket, before watchers). */
  tap(listener: (event: ServerEvent) => void): void {
    this.taps.push(listener);
  }

  unwatch(watcher: SessionSocket): void {
    this.watchers.delete(watcher);
  }

  get watcherCount(): number {
    return this.watchers.size;
  }

  /** The stream socket is attached: where the session stands, for the client to go on from,
   * and what its options mean here (notices). */
  ready(): void {
    const ctx = this.ctx;
    this.emit(
      serverEvent.ready({
        sessionId: ctx.id,
        transcriptionId: ctx.transcriptionId,
        epoch: ctx.cursor.epoch,
        sampleOffset: ctx.cursor.epochReceived,
        capturedSamples: ctx.cursor.capturedSamples.toString(),
        inputEncoding: ctx.encoding.name,
        sampleRateHz: ctx.rate,
        accepting: ctx.accepting,
        maxFramePayloadBytes: ctx.deps.maxFramePayloadBytes,
        openSegmentId: ctx.segment ? segmentId(ctx.segment.index) : null,
      }),
    );
    for (const notice of sessionNotices(ctx.options, ctx.stream?.vocabulary ?? null)) this.emit(serverEvent.notice(notice));
  }

  /** The stream socket went away: watchers are sent the session's new snapshot. */
  snapshotToWatchers(): void {
    for (const w of this.watchers) w.send(this.watchingEvent());
  }

  private watchingEvent(): WatchingEvent {
    const ctx = this.ctx;
    return serverEvent.watching({
      sessionId: ctx.id,
      transcriptionId: ctx.transcriptionId,
      state: ctx.state,
      streaming: ctx.socket !== null,
      epoch: ctx.cursor.epoch,
      capturedSamples: ctx.cursor.capturedSamples.toString(),
      inputEncoding: ctx.encoding.name,
      sampleRateHz: ctx.rate,
      accepting: ctx.accepting,
      openSegmentId: ctx.segment ? segmentId(ctx.segment.index) : null,
      segments: ctx.nextSegmentIndex,
    });
  }

  /** The session ends here (closed, moved on, server stopping): its watchers are let go. */
  closeWatchers(code: number, reason: string, last?: ServerEvent): void {
    const watchers = [...this.watchers];
    this.watchers.clear();
    for (const w of watchers) {
      if (last) w.send(last);
      w.close(code, reason);
    }
  }
}
