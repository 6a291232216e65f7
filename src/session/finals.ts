// Finals of a live session: a segment ended on the decoder is decoded, persisted (after the
// audio under it is stored) and only then sent, finals one after another in segment order;
// a partial of the next segment waits for the finals before it.
//
// Redaction (options.redact, docs/redaction.md): a final's recognized words are redacted
// before anything else is made of them (text options, the stored segment, the event); a
// partial is shown only as guardPartial lets it (no three digits in a row, a number that may
// still grow held back). The recognizer's own words stay in this process's memory until the
// segment is final and are then dropped; nothing here logs a word.
import { performance } from 'node:perf_hooks';
import { timePoint } from '../core/capture-cursor.js';
import { primaryWords } from '../core/background-speech.js';
import { wordsOnTimeline } from '../core/word-span.js';
import { finalEvent, type FinishedSegment } from '../core/final-event.js';
import { segmentId, serverEvent, type FinalTrigger } from '../core/protocol.js';
import type { AcceptResult, FinalResult, RecognitionStream } from '../engine/types.js';
import type { SegmentWord } from '../store/store.js';
import { shapeFinal } from '../text/final-text.js';
import { guardPartialText, redactFinal } from '../text/redaction/apply.js';
import { continueFinal, digitsCarried } from '../text/redaction/carry.js';
import { redactionPolicies } from '../text/redaction/options.js';
import type { FencedWrites } from './fenced-writes.js';
import type { SessionEvents } from './session-events.js';
import type { OpenSegment, SessionContext } from './session-context.js';

type Partial = Pick<AcceptResult, 'partial' | 'partialSamples'>;

/** Called with each final once it is persisted, before it is sent and before the spool lets go
 * of the audio under it (a recorder masks `redactions` in that audio). Awaited in turn; a
 * listener that fails is logged and the final goes out all the same. */
export type FinalListener = (segment: FinishedSegment) => void | Promise<void>;

export class Finals {
  /** Finals asked of the decoder and not yet persisted and sent, chained in order. */
  private chain: Promise<void> = Promise.resolve();
  private pending = 0;
  /** The latest partial of the next segment, held while a final before it is pending. */
  private heldPartial: { seg: OpenSegment; partial: Partial } | null = null;
  /** suppressBackgroundSpeech: the primary speaker's level so far (dBFS). */
  private primaryDb = -100;
  private readonly finalListeners: FinalListener[] = [];
  /** Redaction: digits of the number run the last final ended with (src/text/redaction/carry.ts). */
  private carriedDigits = 0;

  constructor(
    private readonly ctx: SessionContext,
    private readonly events: SessionEvents,
    private readonly writes: FencedWrites,
    /** The decoder failed on a final: the session's recognizer is lost with `seg`. */
    private readonly lost: (stream: RecognitionStream, err: unknown, seg: OpenSegment) => void,
  ) {}

  /** Adds a listener of finals (see FinalListener). */
  onFinal(listener: FinalListener): void {
    this.finalListeners.push(listener);
  }

  /** Resolves once every final asked for so far is settled. */
  settled(): Promise<null> {
    return this.chain.then(() => null);
  }

  /** A new partial of the open segment; it ends where the decoding reached, which with
   * batched decoding may be behind the audio accepted. */
  emitPartial(seg: OpenSegment, result: Partial): void {
    if (!result.partial) return;
    // Events keep segment order: a partial of this segment waits for the finals before it.
    if (this.pending > 0) {
      this.heldPartial = { seg, partial: result };
      return;
    }
    const partial = guardPartialText(result.partial, redactionPolicies(this.ctx.options), this.carriedDigits);
    if (!partial || partial === seg.lastPartial) return;
    seg.lastPartial = partial;
    const { cursor, rate } = this.ctx;
    this.events.emit(
      serverEvent.partial({
        segmentId: segmentId(seg.index),
        text: partial,
        start: timePoint(cursor, seg.startSample, rate),
        end: timePoint(cursor, seg.startSample + BigInt(Math.min(result.partialSamples, seg.samples)), rate),
      }),
    );
  }

  /** Ends the open segment on the decoder and answers as soon as that is asked of it, with
   * `done`: the final, decoded, persisted and sent (its segment id; null when there was no
   * segment). Audio after this goes to the next segment at once (the decoder keeps the
   * order); finals complete one after another, in order. */
  request(trigger: FinalTrigger): { done: Promise<string | null> } {
    const ctx = this.ctx;
    const seg = ctx.segment;
    const stream = ctx.stream;
    if (!seg) return { done: this.settled() };
    ctx.endSegment(seg);
    if (!stream) return { done: this.settled() };
    const t0 = performance.now();
    const finishing = stream.finish();
    this.pending += 1;
    const done = this.chain.then(() => this.complete(trigger, seg, stream, finishing, t0));
    this.chain = done.then(
      () => this.settle(),
      () => this.settle(),
    );
    return { done };
  }

  private settle(): void {
    this.pending -= 1;
    const held = this.heldPartial;
    this.heldPartial = null;
    if (held && this.pending === 0 && held.seg === this.ctx.segment) this.emitPartial(held.seg, held.partial);
  }

  private async complete(
    trigger: FinalTrigger,
    seg: OpenSegment,
    stream: RecognitionStream,
    finishing: Promise<FinalResult>,
    t0: number,
  ): Promise<string | null> {
    const ctx = this.ctx;
    let result: FinalResult;
    try {
      result = await finishing;
    } catch (err) {
      if (ctx.stream === stream) this.lost(stream, err, seg);
      else
        ctx.log.warn(
          { lostSegment: { index: seg.index, startSample: seg.startSample.toString(), samples: seg.samples } },
          'open segment lost with its recognizer',
        );
      return null;
    }
    ctx.metrics.recognitionLatency.observe((performance.now() - t0) / 1000);
    // Read with the final, between utterances (later audio may already be queued behind it).
    // A decoder that cannot say leaves the previous state in place.
    ctx.noteChannelState(result.channelState);
    let suppressedWords = 0;
    if (seg.meter) {
      const kept = primaryWords(result.words, seg.meter, this.primaryDb);
      this.primaryDb = kept.primaryDb;
      suppressedWords = kept.dropped;
      if (kept.dropped > 0) result = { text: kept.keep.map((w) => w.word).join(' '), words: kept.keep };
    }
    ctx.metrics.segments.inc({ trigger });
    const endSample = seg.startSample + BigInt(seg.samples);
    // includeAlignment false: no word (or character) times are sent or kept (the redacted
    // spans keep theirs: they are where a recording is masked).
    const aligned = ctx.options.includeAlignment !== false;
    // Clamped into the segment: an engine may time a last word in its padding.
    const timeline: SegmentWord[] = seg.samples > 0 ? wordsOnTimeline(result.words, seg.startSample, seg.samples) : [];
    // Redaction first: every later step (readable text, entities, rawText) sees only tokens
    // where a sensitive value was said.
    const policies = redactionPolicies(ctx.options);
    const redacted = continueFinal(redactFinal(result.text, timeline, policies), this.carriedDigits, policies);
    if (policies.length > 0) this.carriedDigits = digitsCarried(redacted.text, this.carriedDigits);
    const words = aligned ? redacted.words : [];
    const shaped = shapeFinal(redacted.text, words, ctx.options); // text options: src/text/final-text.ts
    const annotations = { ...shaped.annotations, ...(redacted.redactions.length > 0 ? { redactions: redacted.redactions } : {}) };
    // A final is persisted only over stored audio: a node that takes over after a crash
    // replays from the spool exactly what no segment covers. (A file spool's append is in the
    // kernel when it returns; the audio under a final was appended before it was decoded.)
    if (ctx.spool?.shared) await ctx.spool.whenDurable();
    await this.writes.appendFinal({
      transcriptionId: ctx.transcriptionId,
      index: seg.index,
      startSample: seg.startSample,
      endSample,
      text: shaped.text,
      words: shaped.words,
      ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
      createdAt: new Date().toISOString(),
    });
    await this.writes.saveProgress(true);
    const id = segmentId(seg.index);
    const finished: FinishedSegment = {
      segmentId: id,
      trigger,
      startSample: seg.startSample,
      endSample,
      shaped,
      redactions: redacted.redactions,
      suppressedWords,
      aligned,
    };
    for (const listener of this.finalListeners) {
      // The final is stored: a listener's failure must not keep it from the client.
      await Promise.resolve()
        .then(() => listener(finished))
        .catch((err: unknown) => ctx.log.error({ err, segmentId: id }, 'a final listener failed'));
    }
    // Everything spooled up to the segment's end is in persisted segments; audio after it (vad
    // mode: the rest of the frame the commit fell in; audio acknowledged and not decoded yet)
    // stays, and so does the channel state.
    ctx.trimSpool(endSample);
    this.events.emit(finalEvent(ctx.cursor, ctx.rate, finished));
    ctx.log.debug({ segmentId: id, trigger, words: words.length }, 'final segment');
    return id;
  }
}
