// A live real-time session: the coordinator of one session's parts (session-context.ts lists
// what they share; docs/architecture.md, "The live session's modules", what each part does).
// It owns the session's one promise queue, so commands, resume and shutdown never interleave,
// and its state: the state machine of src/core/session-state.ts decides each transition and
// the effects it calls for, and this class carries out exactly those (session-effects.ts).
// Adapters drive it through typed commands (audio, commit, close, ping, keepAlive), the wire
// decoded at their edge (session-driver.ts).
import { ScribedError } from '../core/errors.js';
import type { AudioInput } from '../core/frame.js';
import { step, type LiveEvent, type SessionEffect } from '../core/session-state.js';
import type { BacklogItem } from '../core/recognition-backlog.js';
import type { RecognitionStream } from '../engine/types.js';
import type { SessionRecord } from '../store/store.js';
import { serverEvent } from '../core/protocol.js';
import type { DeferredSession } from './recognizer-queue.js';
import { SessionContext, type LiveSessionDeps, type OpenSegment, type SessionSocket } from './session-context.js';
import { SessionEvents } from './session-events.js';
import { SessionView } from './session-view.js';
import { FencedWrites } from './fenced-writes.js';
import { DecoderHold } from './decoder-hold.js';
import { Finals } from './finals.js';
import { RecognizerYield } from './recognizer-yield.js';
import { Recognition } from './recognition.js';
import { RecognitionFeed } from './recognition-feed.js';
import { Replay } from './replay.js';
import { Deferral } from './deferral.js';
import { FrameIntake } from './frame-intake.js';
import { loseRecognizer } from './lost-recognizer.js';
import { SessionEnd, type EndReason } from './session-end.js';
import { checkResume } from './epochs.js';
import { SessionEffects } from './session-effects.js';
import { Restore } from './restore.js';

export type { LiveSessionDeps, SessionSocket } from './session-context.js';

export class LiveSession extends SessionView implements DeferredSession {
  private queue: Promise<unknown> = Promise.resolve();
  private readonly events: SessionEvents;
  private readonly writes: FencedWrites;
  private readonly decoder: DecoderHold;
  private readonly finals: Finals;
  private readonly recognition: Recognition;
  private readonly feed: RecognitionFeed;
  private readonly replay: Replay;
  private readonly deferral: Deferral;
  private readonly intake: FrameIntake;
  private readonly ending: SessionEnd;
  private readonly effects: SessionEffects;
  private readonly yielder: RecognizerYield;
  private readonly restore: Restore;

  constructor(record: SessionRecord, deps: LiveSessionDeps) {
    super(new SessionContext(record, deps));
    const ctx = this.ctx;
    this.events = new SessionEvents(ctx);
    const recorder = ctx.recorder;
    if (recorder) this.events.tap((e) => recorder.event(e));
    // A write that found the fence gone stops the session from inside the work that found it.
    this.writes = new FencedWrites(ctx, (detail) => this.end({ reason: 'moved', detail }));
    this.decoder = new DecoderHold(ctx, {
      // Batched decoding reports partials as they are decoded, between frames.
      partial: (stream, p) => {
        if (ctx.stream === stream && ctx.segment) this.finals.emitPartial(ctx.segment, p);
      },
      // A worker that crashes or stops answering its heartbeat fails the session at once, even
      // while no audio is in flight (otherwise only the next frame would notice).
      lost: (stream, err) => this.recognizerLost(stream, err, true),
    });
    this.finals = new Finals(ctx, this.events, this.writes, (stream, err, seg) => this.recognizerLost(stream, err, false, seg));
    // The recorder cuts and stores each final's piece, masked, before the spool lets go of it.
    if (recorder) this.finals.onFinal((seg) => recorder.final(seg));
    this.recognition = new Recognition(ctx, this.events, this.finals, (stream, err) => this.recognizerLost(stream, err, true));
    this.feed = new RecognitionFeed(
      ctx.rate,
      (item, deferred) => this.recognizeItem(item, deferred),
      () => this.feedDrained(),
    );
    this.replay = new Replay(ctx, this.recognition);
    this.deferral = new Deferral(ctx, this, this.feed, this.decoder, this.replay, this.events);
    this.ending = new SessionEnd(
      ctx,
      { events: this.events, deferral: this.deferral, feed: this.feed, decoder: this.decoder, writes: this.writes },
      {
        apply: (event) => this.apply(event),
        carryOut: (effects, trigger) => this.effects.carryOut(effects, trigger),
        release: () => this.effects.releaseDecoder({ dropPending: true }),
        done: () => ctx.deps.onClosed?.(this),
      },
    );
    this.effects = new SessionEffects(
      ctx,
      { decoder: this.decoder, feed: this.feed, recognition: this.recognition, writes: this.writes, deferral: this.deferral },
      {
        run: (fn) => this.run(fn),
        giveUp: () => this.end({ reason: 'givenUp' }),
      },
    );
    this.yielder = new RecognizerYield(
      ctx,
      { feed: this.feed, finals: this.finals, effects: this.effects, deferral: this.deferral },
      (fn) => this.run(fn),
    );
    this.restore = new Restore(
      ctx,
      { feed: this.feed, replay: this.replay, deferral: this.deferral, decoder: this.decoder, effects: this.effects },
      {
        run: (fn) => this.run(fn),
        tryCatchUp: () => this.tryCatchUp(),
        feedDrained: () => this.feedDrained(),
        end: (how) => this.end(how),
      },
    );
    this.intake = new FrameIntake(ctx, this.events, this.writes, this.feed, this.deferral, {
      loseSocket: (code) => this.end({ reason: 'socketDropped', code }),
      movedOn: (reason) => void this.movedOn(reason),
      spoolFailed: (err) => void this.run(() => this.end({ reason: 'spoolFailed', err })),
    });
  }

  /** True while the session's recognition runs behind its audio (deferred recognition). */
  get isDeferred(): boolean {
    return this.deferral.active;
  }
  /** True while this session is paused and still holds a decoder (see holdDecoder). */
  get holdsIdleDecoder(): boolean {
    return this.ctx.socket === null && this.ctx.stream !== null && !this.deferral.active;
  }
  get watcherCount(): number {
    return this.events.watcherCount;
  }

  /** The registry claimed the session for this node at `epoch`. */
  ownedAt(epoch: number): void {
    this.ctx.ownedAt(epoch);
  }

  /** Run one unit of work after everything queued before it: the session's one queue. */
  private run<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** The state machine decides the transition; the effects it names are what happens
   * (session-effects.ts carries them out). */
  private apply(event: LiveEvent): SessionEffect[] {
    const result = step(this.ctx.liveState, event);
    this.ctx.enter(result.live);
    return result.effects;
  }

  // ---------------------------------------------------------------- leaving this node

  /** The one way the session ends on this node (session-end.ts lists the reasons). */
  private end(how: EndReason): Promise<void> {
    return this.ending.end(how);
  }

  /** The session is no longer this node's (a resume elsewhere, another node adopted it, or a
   * write found the fence gone): stop at once without finalizing (the new owner replays the
   * open segment from the spool), close the socket with 4000 so the client resumes. */
  movedOn(reason: string): Promise<void> {
    // At once, not behind queued commands (a frame waiting on a loaded feed held them for minutes).
    this.ctx.startLeaving();
    this.feed.stop();
    return this.run(() => this.end({ reason: 'moved', detail: reason }));
  }

  /** The recognizer was lost (lost-recognizer.ts); on the socket path the socket closes with
   * 1011 so the client resumes, and the next attach opens a new decoder. */
  private recognizerLost(stream: RecognitionStream, err: unknown, closeSocket: boolean, seg: OpenSegment | null = this.ctx.segment): void {
    const { ctx, feed, deferral, events, decoder, replay } = this;
    if (!loseRecognizer({ ctx, feed, deferral, events, decoder, replay }, stream, err, seg)) return;
    // The close waiting behind the deferred recognition went with it: the session goes on.
    if (this.ctx.closing) this.apply({ type: 'closeDropped' });
    if (!closeSocket) return;
    void this.run(() => this.end({ reason: 'socketDropped', code: 'ENGINE_FAILED' })).catch((e) =>
      this.ctx.log.error({ err: e }, 'handling a lost recognizer failed'),
    );
  }

  // ---------------------------------------------------------------- watchers and sockets

  watch(watcher: SessionSocket, limit: number): void {
    this.events.watch(watcher, limit);
  }

  unwatch(watcher: SessionSocket): void {
    this.events.unwatch(watcher);
  }

  /** Attach a socket: admission control happens here (a decoder must be free, or recognition
   * is deferred). */
  attach(socket: SessionSocket): Promise<void> {
    const ctx = this.ctx;
    return this.run(async () => {
      await this.effects.carryOut(this.apply({ type: 'socketAttached' }));
      if (ctx.socket) throw new ScribedError('SESSION_BUSY');
      this.decoder.cancel();
      if (!ctx.stream && !this.deferral.active) await this.deferral.openOrDefer();
      await this.startFeeding('the recognizer failed while restoring the open segment; resume to retry');
      ctx.attachSocket(socket);
      await ctx.reopen(this.deferral.heldByBacklog);
      this.events.ready();
      this.deferral.tellAttached();
      ctx.log.info(
        { epoch: ctx.cursor.epoch, capturedSamples: ctx.cursor.capturedSamples.toString(), deferred: this.deferral.active },
        'socket attached',
      );
    });
  }

  /** With a recognizer open and not deferred: stored audio no decoder decoded goes first,
   * then the feed runs. */
  private async startFeeding(failure: string): Promise<void> {
    if (!this.ctx.stream || this.deferral.active) return;
    await this.feed.idle();
    if (!(await this.replay.feed())) throw new ScribedError('ENGINE_FAILED', failure);
    this.feed.start();
  }

  /** The socket went away. Without a prior close this pauses the session. */
  detach(socket: SessionSocket): Promise<void> {
    return this.run(() => this.end({ reason: 'socketLost', socket }));
  }

  /** Give a held decoder back to the pool now, finalizing the open segment first. */
  releaseHeldDecoder(): Promise<boolean> {
    return this.run(async () => this.holdsIdleDecoder && (await this.effects.reclaimHeldDecoder()));
  }

  // ---------------------------------------------------------------- deferred recognition

  /** Whether yieldRecognizer would give the recognizer back now (recognizer-yield.ts). */
  get canYieldRecognizer(): boolean {
    return this.yielder.possible;
  }

  /** Fair share: give the recognizer back between segments and wait deferred. */
  yieldRecognizer(): Promise<boolean> {
    return this.yielder.yieldNow();
  }

  /** Called by the queue while the backlog is below its bound. */
  backlogHasRoom(): void {
    if (!this.deferral.heldByBacklog) return;
    void this.run(() => this.deferral.acceptAgain(false)).catch((err) => this.ctx.log.warn({ err }, 'could not accept audio again'));
  }

  /** The queue offers a recognizer: take it and start catching up. */
  tryCatchUp(): Promise<'started' | 'busy' | 'gone'> {
    return this.run(() => this.deferral.tryCatchUp());
  }

  private feedDrained(): void {
    if (!this.deferral.active) return;
    void this.run(async () => {
      if (!(await this.deferral.caughtUp())) return;
      if (!this.ctx.socket && this.ctx.state !== 'CLOSED' && this.ctx.stream) this.effects.holdDecoder();
    }).catch((err) => this.ctx.log.error({ err }, 'catching up failed'));
  }

  /** One item of the recognition feed, off the session's queue (recognition-feed.ts). */
  private async recognizeItem(item: BacklogItem, deferred: boolean): Promise<boolean> {
    if (item.kind !== 'close') return this.recognition.take(item, deferred);
    if (!this.ctx.stream || this.ctx.moved) return false;
    // A deferred close, after the audio before it.
    void this.run(async () => {
      this.deferral.end();
      await this.end({ reason: item.expired === true ? 'expired' : 'closed' });
    }).catch((err: unknown) => this.events.emitError(err));
    return true;
  }

  // ---------------------------------------------------------------- commands
  // What every adapter drives a session with (session-driver.ts; docs/architecture.md,
  // "Driving a session from an adapter"): typed, the wire decoded at the adapter's edge. Each
  // runs on the session's queue and only while `sink` is the attached socket (commands that
  // raced a failed attach, a resume or a close are dropped); a refusal goes to that socket as
  // an `error` event, in order, and the promise resolves either way.

  /** Audio in the session's input encoding, numbered by the client's epoch and offset. */
  audio(sink: SessionSocket, frame: AudioInput): Promise<void> {
    return this.command(sink, () => this.intake.take(frame));
  }

  /** End the open segment once the audio before it is recognized; `committed` carries today's
   * cursor. The final and `committed` follow when the segment is decoded; audio sent after the
   * commit is taken meanwhile. */
  commit(sink: SessionSocket): Promise<void> {
    return this.command(sink, async () => {
      if (this.ctx.state !== 'RECORDING' || this.ctx.closing) throw new ScribedError('SESSION_CLOSED');
      this.feed.push({ kind: 'commit', capturedSamples: this.ctx.cursor.capturedSamples.toString() });
    });
  }

  /** The client's close (see requestClose). */
  close(sink: SessionSocket): Promise<void> {
    if (this.ctx.socket === sink) this.ctx.noteCloseRequested();
    return this.command(sink, () => this.requestClose());
  }

  /** Answered with `pong` (and its id), in order with the session's other events. */
  ping(sink: SessionSocket, id?: string): Promise<void> {
    return this.command(sink, async () => this.events.emit(serverEvent.pong(id === undefined ? {} : { id })));
  }

  /** The client is still there and has nothing to say (Deepgram's KeepAlive): nothing to do,
   * a session with a socket attached never idles out. */
  keepAlive(sink: SessionSocket): Promise<void> {
    return this.command(sink, async () => undefined);
  }

  /** A message the adapter could not read, reported as the session reports a refused command,
   * in order: malformed `audio` on a session that takes none is told SESSION_CLOSED first,
   * as the audio itself would be; a malformed `control` message is told what is wrong. */
  refuse(sink: SessionSocket, err: unknown, kind: 'audio' | 'control'): Promise<void> {
    return this.command(sink, async () => {
      if (kind === 'audio') this.intake.checkOpen();
      throw err;
    });
  }

  private command(sink: SessionSocket, fn: () => Promise<void>): Promise<void> {
    return this.run(async () => {
      if (this.ctx.socket === sink && !this.ctx.leaving) await fn();
    }).catch((err) => void (this.ctx.leaving || this.events.emitError(err)));
  }

  /** The client's close: once the audio before it is recognized (at once, or while
   * deferred, when the session has caught up to it). */
  private async requestClose(how: 'closed' | 'expired' = 'closed'): Promise<void> {
    if (this.deferral.active) {
      this.apply({ type: 'closeWaits' });
      return this.deferral.closeWhenCaughtUp(how === 'expired');
    }
    await this.feed.idle();
    return this.end({ reason: how });
  }

  /** POST .../sessions/{id}/close: the session ends without a socket (an attached one is sent
   * `closed`, as for its own close). Audio held and not recognized yet (restored from the spool)
   * is recognized first: now when a recognizer is free, else when one frees (deferred). True
   * once closed; false while the close waits for deferred recognition. */
  closeFromRequest(): Promise<boolean> {
    return this.run(() => this.closeWithoutSocket('closed'));
  }

  private async closeWithoutSocket(how: 'closed' | 'expired'): Promise<boolean> {
    const ctx = this.ctx;
    if (ctx.state === 'CLOSED') return true;
    if (ctx.closing) return false;
    if (!ctx.stream && !this.deferral.active && this.replay.pending) await this.deferral.openOrDefer();
    await this.startFeeding("the recognizer failed on the session's held audio; close again to retry");
    await this.requestClose(how);
    // Closed now, unless the close waits in a deferred backlog.
    return !ctx.closing;
  }

  /** The idle expiry (session-expiry.ts): on the queue, still with no socket and `idle()`, the
   * session closes as POST .../close does, ending `session.expired`. Null when kept. */
  expireIdle(idle: () => Promise<boolean>): Promise<boolean | null> {
    return this.run(async () => {
      if (this.ctx.socket || this.ctx.moved || this.ctx.state === 'CLOSED' || !(await idle())) return null;
      return this.closeWithoutSocket('expired');
    });
  }

  // ---------------------------------------------------------------- HTTP-driven actions

  /** Resume: validate the client's cursor, open a new epoch, detach any old socket. */
  resume(clientCaptured: bigint | undefined): Promise<{ epoch: number; capturedSamples: bigint; accepting: boolean }> {
    const ctx = this.ctx;
    return this.run(async () => {
      checkResume(ctx, clientCaptured);
      await this.effects.carryOut(this.apply({ type: 'resume', socketAttached: ctx.socket !== null }), 'pause', clientCaptured);
      await ctx.reopen(this.deferral.heldByBacklog);
      ctx.log.info({ epoch: ctx.cursor.epoch, clientCaptured: clientCaptured?.toString() }, 'session resumed');
      return { epoch: ctx.cursor.epoch, capturedSamples: ctx.cursor.capturedSamples, accepting: ctx.accepting };
    });
  }

  /** Server stopping: stop accepting, finalize and persist, tell the client to resume later. */
  shutdown(): Promise<void> {
    return this.run(() => this.end({ reason: 'shutdown' }));
  }

  /** After a restart, or on the node that took the session over: its open segment back from
   * the spool, its decoder loaded beside the queue (restore.ts). */
  restoreOpenSegment(startSample: bigint, frames: Int16Array[], index = this.ctx.nextSegmentIndex): Promise<void> {
    return this.restore.openSegment(startSample, frames, index);
  }

  /** A session taken over with nothing to restore: its decoder loads beside the queue all the
   * same (restore.ts). */
  loadDecoderAside(): Promise<void> {
    return this.restore.loadDecoderAside();
  }

  /** After a restart: the channel state spooled with the last final; the next decoder this
   * session opens starts from it. */
  restoreChannelState(state: number[]): void {
    this.ctx.restoreChannelState(state);
  }
}
