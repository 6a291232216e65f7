// Frame intake: audio from any adapter (AudioInput: the native socket decodes its binary frames
// at its edge) is checked, placed against the capture cursor (duplicates
// dropped, a gap filled with silence), paid for, appended to the spool, and acknowledged once
// the spool has it durably; then it is left to the recognition feed. Nothing here waits for
// recognition, in either commit mode (recognition-feed.ts).
import { ScribedError } from '../core/errors.js';
import { payloadSamples, type AudioInput } from '../core/frame.js';
import { decodePcm16Into } from '../core/audio/encodings.js';
import { placeFrame } from '../core/capture-cursor.js';
import { chargeNeeded } from '../core/billing.js';
import { CLOSE_CODES, serverEvent } from '../core/protocol.js';
import type { Deferral } from './deferral.js';
import type { FencedWrites } from './fenced-writes.js';
import type { RecognitionFeed } from './recognition-feed.js';
import { Recognition } from './recognition.js';
import type { SessionEvents } from './session-events.js';
import type { SessionContext } from './session-context.js';

/** A live session whose recognition is this far behind its stored audio takes no more until
 * it catches up (its acks wait): what keeps a stalled recognizer from growing the feed without
 * bound. The engine's own decode backlog is bounded the same (MAX_DECODE_BACKLOG_MS). */
export const MAX_LIVE_FEED_SECONDS = 60;

export interface IntakeFailures {
  /** The spool could not store the frame: the socket closes (1011) so the client resumes. */
  loseSocket(reason: 'INTERNAL'): Promise<void>;
  /** The spool's commit was fenced off: the session moved on. */
  movedOn(reason: string): void;
  /** The shared spool could not commit acknowledged audio: the session is given up. */
  spoolFailed(err: unknown): void;
}

export class FrameIntake {
  constructor(
    private readonly ctx: SessionContext,
    private readonly events: SessionEvents,
    private readonly writes: FencedWrites,
    private readonly feed: RecognitionFeed,
    private readonly deferral: Deferral,
    private readonly failures: IntakeFailures,
  ) {}

  /** The session takes audio only while recording and not closing: what a frame on a closed
   * session is told first, whatever else is wrong with it. */
  checkOpen(): void {
    if (this.ctx.state !== 'RECORDING' || this.ctx.closing) throw new ScribedError('SESSION_CLOSED');
  }

  async take(frame: AudioInput): Promise<void> {
    const ctx = this.ctx;
    const m = ctx.metrics;
    this.checkOpen();
    const samplesIn = payloadSamples(frame.payload.byteLength, ctx.encoding.name, ctx.deps.maxFramePayloadBytes);
    m.audioBytes.inc({ encoding: ctx.encoding.name }, frame.payload.byteLength);
    if (!ctx.accepting) throw new ScribedError('NOT_ACCEPTING', 'the session is not accepting audio; wait for an accepting event');

    if (!this.deferral.active && this.feed.behind(MAX_LIVE_FEED_SECONDS)) {
      await this.feed.whenBelow(MAX_LIVE_FEED_SECONDS);
      // The session may have left this node meanwhile (LiveSession.movedOn): not taken.
      if (ctx.leaving) throw new ScribedError('SESSION_MOVED');
    }
    const maxGap = Math.round(ctx.deps.maxGapSeconds * ctx.rate);
    const placed = placeFrame(ctx.cursor, { epoch: frame.epoch, sampleOffset: frame.sampleOffset, samples: samplesIn }, maxGap);
    if (placed.duplicateSamples > 0) m.duplicateSamples.inc(placed.duplicateSamples);
    const added = placed.gapSamples + placed.acceptCount;
    if (added === 0) {
      this.ackWhenDurable(placed.duplicateSamples);
      return;
    }
    this.deferral.admit(added / ctx.rate);
    if (!ctx.stream && !this.deferral.active) throw Recognition.noRecognizer();

    // Billing before acceptance: audio the account cannot pay for is not taken (and so
    // not acknowledged); the client keeps it buffered.
    const need = chargeNeeded(ctx.charged, placed.next.capturedSamples, ctx.rate);
    if (need > 0n) {
      // On a node with a debit batcher, the debit rides the node's next group debit (debit-batcher.ts).
      const debits = ctx.deps.debits;
      const balance = await (debits
        ? debits.debit(ctx.accountId, need, 'realtime_audio', ctx.id, ctx.id, ctx.charged + need)
        : ctx.store.debitCharacters(ctx.accountId, need, 'realtime_audio', ctx.id, ctx.id));
      if (balance === null) {
        ctx.stopAccepting();
        this.events.emit(serverEvent.accepting({ accepting: false, reason: 'INSUFFICIENT_CHARACTERS' }));
        throw new ScribedError('INSUFFICIENT_CHARACTERS', 'the account has no Characters left; audio from this frame on was not accepted');
      }
      ctx.charge(need);
      m.charactersDebited.inc(Number(need));
    }

    // One copy from the payload: the gap's zeros, then the accepted samples. From here on
    // the array is shared read-only (spool, feed, recognizer: RecognitionStream.accept).
    const samples = new Int16Array(added);
    decodePcm16Into(ctx.encoding.name, frame.payload, placed.acceptFrom, placed.acceptCount, samples, placed.gapSamples);

    // Spooled before it is acknowledged or recognized. A spool that cannot be written (a full
    // disk) refuses the frame and closes the socket: frames the client already sent behind it
    // would otherwise land after a hole the server fills with silence.
    const at = ctx.cursor.capturedSamples;
    try {
      ctx.spool?.append(at, samples);
    } catch (err) {
      this.events.emitError(new ScribedError('INTERNAL', 'the audio could not be stored; resume and send it again', { cause: err }));
      await this.failures.loseSocket('INTERNAL');
      return;
    }
    ctx.recorder?.audio(at, samples);
    ctx.measureLevels(at, samples);
    // Opened on the first frame only: later frames find it (or null) without a closure each.
    const spotter =
      ctx.spotter !== undefined ? ctx.spotter : ctx.openSpotter(() => ctx.deps.spotting?.open(ctx, (e) => this.events.emit(e)) ?? null);
    spotter?.audio(at, samples);
    this.reportGap(placed);
    ctx.advance(placed.next);
    m.audioSeconds.inc({ encoding: ctx.encoding.name }, added / ctx.rate);
    this.ackWhenDurable(placed.duplicateSamples);
    this.feed.push({ kind: 'audio', at, samples, arrivedAtMs: Date.now() });
    await this.writes.saveProgress(false);
  }

  /** Silence the server filled before this frame, reported before the cursor moves past it. */
  private reportGap(placed: ReturnType<typeof placeFrame>): void {
    if (placed.gapSamples === 0) return;
    const ctx = this.ctx;
    ctx.metrics.gapSamples.inc(placed.gapSamples);
    this.events.emit(
      serverEvent.gap({
        epoch: ctx.cursor.epoch,
        sampleOffset: ctx.cursor.epochReceived,
        samples: placed.gapSamples,
        capturedSamples: (ctx.cursor.capturedSamples + BigInt(placed.gapSamples)).toString(),
      }),
    );
  }

  /** The ack goes out once the spooled audio it covers is on disk (at once without a
   * spool). Acks keep their order: one sync covers every frame written before it. */
  private ackWhenDurable(duplicateSamples: number): void {
    const ctx = this.ctx;
    const event = serverEvent.ack({
      epoch: ctx.cursor.epoch,
      sampleOffset: ctx.cursor.epochReceived,
      capturedSamples: ctx.cursor.capturedSamples.toString(),
      ...(duplicateSamples > 0 ? { duplicateSamples } : {}),
    });
    const socket = ctx.socket;
    const send = () => {
      if (ctx.socket !== socket || !socket) return;
      ctx.metrics.acks.inc();
      socket.send(event);
    };
    if (!ctx.spool) return send();
    ctx.spool.whenDurable().then(send, (err: unknown) => {
      if (err instanceof ScribedError && err.code === 'SESSION_MOVED') {
        this.failures.movedOn('spool write fenced');
        return;
      }
      if (ctx.spool?.shared) {
        // Nothing of that commit is stored: the next resume (on any node) counts only what
        // the store holds, and the client sends the rest again.
        this.failures.spoolFailed(err);
        return;
      }
      // Not acknowledged, and the socket closes so the client notices. The audio was written
      // (the kernel has it), so resume counts it as held: it is lost only if the machine
      // itself goes down before the kernel writes it back.
      ctx.log.error({ err }, 'spool sync failed; closing the socket without acknowledging');
      if (ctx.socket === socket) socket?.close(CLOSE_CODES.internal, 'INTERNAL');
    });
  }
}
