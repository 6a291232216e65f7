// The recorder of one live session (docs/recordings.md, "Write path"). Audio the session
// places (and audio a takeover replays from the spool) is held here, in memory, until a final
// covers it; then the run up to the final's end is copied, its redacted spans masked, and
// stored as a piece (keeper.ts). At close the pieces become the session's recording. So the
// unredacted audio of an open segment lives only in this process's memory and in the spool,
// which holds it for crash recovery already; nothing unmasked is written by this module.
import type { Logger } from 'pino';
import type { ServerEvent } from '../core/protocol.js';
import type { RecordingKeeper } from './keeper.js';
import { maskSpans, spanOf, type MaskSpan } from './mask.js';

/** A finished segment as the recorder needs it: its end and its redacted spans (session
 * samples). The live finals' `redactions` (src/core/final-event.ts FinishedSegment) fit. */
export interface RecordedFinal {
  startSample: bigint;
  endSample: bigint;
  redactions: ReadonlyArray<{ type?: string; startSample: unknown; endSample: unknown }>;
}

const TOKEN = /^\[[A-Z][A-Z_]*\]$/;

/** The spans a final event redacted: its `redactions` when it carries them; else its token
 * words (`[NUMBER]`, `[CARD_NUMBER]`: each lasts as long as the span it replaced); else, when
 * its text holds a token and no word is timed, the whole segment. */
export function redactedSpansOf(event: Record<string, unknown>, startSample: bigint, endSample: bigint): MaskSpan[] {
  const listed = event.redactions;
  if (Array.isArray(listed)) {
    return listed
      .map((r: Record<string, unknown>) =>
        spanOf({
          startSample: r.startSample ?? (r.start as { sample?: unknown } | undefined)?.sample,
          endSample: r.endSample ?? (r.end as { sample?: unknown } | undefined)?.sample,
        }),
      )
      .filter((s): s is MaskSpan => s !== null);
  }
  const words = Array.isArray(event.words)
    ? (event.words as Array<{ word: string; start: { sample: string }; end: { sample: string } }>)
    : null;
  if (words && words.length > 0) {
    return words
      .filter((w) => TOKEN.test(w.word))
      .map((w) => spanOf({ startSample: w.start.sample, endSample: w.end.sample }))
      .filter((s): s is MaskSpan => s !== null);
  }
  const text = typeof event.text === 'string' ? event.text : '';
  return text.split(/\s+/).some((w) => TOKEN.test(w.replace(/[.,;:!?]+$/, ''))) ? [{ startSample, endSample }] : [];
}

export class LiveRecorder {
  /** Audio placed and not yet in a piece, in order, from `held[0].at`. */
  private held: Array<{ at: bigint; samples: Int16Array }> = [];
  /** Where the held audio ends (the next sample expected). */
  private end: bigint | null = null;
  private chain: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly keeper: RecordingKeeper,
    private readonly transcriptionId: string,
    private readonly accountId: string,
    private readonly rate: number,
    private readonly log: Logger,
  ) {}

  /** Audio placed at session sample `at` (shared read-only: copied before it is masked).
   * Audio already held (a replay of what arrived live) is skipped. */
  audio(at: bigint, samples: Int16Array): void {
    if (this.closed || samples.length === 0) return;
    let from = at;
    let s = samples;
    if (this.end !== null && from < this.end) {
      const skip = this.end - from;
      if (skip >= BigInt(s.length)) return;
      s = s.subarray(Number(skip));
      from = this.end;
    }
    this.held.push({ at: from, samples: s });
    this.end = from + BigInt(s.length);
  }

  /** The session's events (its fan-out): finals cut pieces, `closed` finishes the recording. */
  event(e: ServerEvent): void {
    if (e.type === 'final') {
      const start = BigInt(e.start.sample);
      const end = BigInt(e.end.sample);
      this.final(
        { startSample: start, endSample: end, redactions: [] },
        redactedSpansOf(e as unknown as Record<string, unknown>, start, end),
      );
    } else if (e.type === 'closed') {
      void this.close(BigInt(e.capturedSamples));
    }
  }

  /** A final: the held audio up to its end becomes a piece, its spans masked. */
  final(seg: RecordedFinal, spans: MaskSpan[] = seg.redactions.map(spanOf).filter((s): s is MaskSpan => s !== null)): Promise<void> {
    const first = this.held[0];
    if (this.closed || !first || seg.endSample <= first.at) return this.chain;
    const base = first.at;
    const pcm = new Int16Array(Number(seg.endSample - base));
    const kept: typeof this.held = [];
    for (const h of this.held) {
      const hEnd = h.at + BigInt(h.samples.length);
      if (h.at >= seg.endSample) {
        kept.push(h);
        continue;
      }
      const inPiece = hEnd <= seg.endSample ? h.samples : h.samples.subarray(0, Number(seg.endSample - h.at));
      pcm.set(inPiece, Number(h.at - base));
      if (hEnd > seg.endSample) kept.push({ at: seg.endSample, samples: h.samples.subarray(inPiece.length) });
    }
    this.held = kept;
    maskSpans(pcm, base, spans, this.rate);
    this.chain = this.chain
      .then(() => this.keeper.putPiece(this.transcriptionId, base, pcm, this.rate))
      .catch((err: unknown) => this.log.warn({ err }, 'could not store a piece of the session recording; that stretch is silent in it'));
    return this.chain;
  }

  /** The session closed: audio no final covered is dropped (it was never redacted; it is
   * silence in the recording), and the pieces become the recording, `capturedSamples` long. */
  close(capturedSamples: bigint): Promise<void> {
    if (this.closed) return this.chain;
    this.closed = true;
    this.held = [];
    this.chain = this.chain
      .then(async () => {
        const t0 = process.cpuUsage();
        const rec = await this.keeper.finishFromPieces(this.transcriptionId, this.accountId, capturedSamples);
        const cpu = process.cpuUsage(t0);
        if (rec)
          this.log.info(
            { recording: { samples: rec.samples.toString(), bytes: rec.sizeBytes, cpuMs: Math.round((cpu.user + cpu.system) / 1000) } },
            'session recording stored',
          );
      })
      .catch((err: unknown) =>
        this.log.error({ err }, 'could not store the session recording; its pieces stay and the first download finishes it'),
      );
    return this.chain;
  }

  /** Resolves when every piece and the finished recording so far are stored (tests). */
  settled(): Promise<void> {
    return this.chain;
  }
}
