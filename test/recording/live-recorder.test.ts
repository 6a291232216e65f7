// The live recorder's write path (src/recording/live-recorder.ts) without a server: audio
// placed in frames (and replayed again after a takeover) is cut into pieces at each final,
// each piece masked over the final's redacted spans before it is handed to the keeper; audio
// no final covered never reaches the keeper; a close finishes the recording at the session's
// length. And the pure cores it stands on (mask.ts, mix.ts).
import { describe, expect, it } from 'vitest';
import pino from 'pino';
import { LiveRecorder, redactedSpansOf } from '../../src/recording/live-recorder.js';
import type { RecordingKeeper } from '../../src/recording/keeper.js';
import { MASK_PAD_MS, MASK_TONE_AMPLITUDE, maskSpans, spansOfAnnotations } from '../../src/recording/mask.js';
import { interleaveStereo } from '../../src/recording/mix.js';

const RATE = 8000;

class FakeKeeper {
  pieces: Array<{ start: bigint; pcm: Int16Array }> = [];
  finished: Array<{ total: bigint | null }> = [];
  async putPiece(_id: string, start: bigint, pcm: Int16Array): Promise<void> {
    this.pieces.push({ start, pcm: pcm.slice() });
  }
  async finishFromPieces(_id: string, _acc: string, total: bigint | null): Promise<null> {
    this.finished.push({ total });
    return null;
  }
}

/** Speech-like audio: a ramp that never repeats a value a mask could produce by chance. */
function speech(n: number, from = 0): Int16Array {
  return Int16Array.from({ length: n }, (_, i) => 5000 + ((from + i) % 7000));
}

function recorder(): { keeper: FakeKeeper; rec: LiveRecorder } {
  const keeper = new FakeKeeper();
  return { keeper, rec: new LiveRecorder(keeper as unknown as RecordingKeeper, 'stt_x', 'acc_x', RATE, pino({ level: 'silent' })) };
}

describe('LiveRecorder', () => {
  it('cuts a piece at each final, masks exactly its padded spans, and keeps the rest for the next', async () => {
    const { keeper, rec } = recorder();
    const audio = speech(3 * RATE);
    for (let at = 0; at < audio.length; at += 320) rec.audio(BigInt(at), audio.subarray(at, at + 320));
    // A replay of audio already held (a recognizer restart) is not held twice.
    rec.audio(0n, audio.subarray(0, 4000));
    await rec.final({ startSample: 0n, endSample: 16000n, redactions: [{ type: 'number', startSample: '8000', endSample: '12000' }] });
    expect(keeper.pieces).toHaveLength(1);
    const p = keeper.pieces[0]!;
    expect(p.start).toBe(0n);
    expect(p.pcm.length).toBe(16000);
    const pad = (MASK_PAD_MS * RATE) / 1000;
    for (let i = 0; i < 16000; i++) {
      const inSpan = i >= 8000 - pad && i < 12000 + pad;
      if (inSpan) expect(Math.abs(p.pcm[i]!)).toBeLessThanOrEqual(MASK_TONE_AMPLITUDE);
      else expect(p.pcm[i]).toBe(audio[i]);
    }
    // The same final's event after it (the finals' listener cut it first): nothing left to cut.
    rec.event({
      type: 'final',
      segmentId: 'seg_0',
      text: '[NUMBER]',
      trigger: 'commit',
      start: { sample: '0', ms: 0, epoch: 1, epochSample: 0, epochMs: 0 },
      end: { sample: '16000', ms: 2000, epoch: 1, epochSample: 16000, epochMs: 2000 },
    });
    await rec.settled();
    expect(keeper.pieces).toHaveLength(1);
    // The shared frames were copied, not masked in place.
    expect(audio[10000]).toBe(speech(1, 10000)[0]);
    await rec.final({ startSample: 16000n, endSample: 20000n, redactions: [] });
    expect(keeper.pieces[1]!.start).toBe(16000n);
    expect([...keeper.pieces[1]!.pcm]).toEqual([...audio.subarray(16000, 20000)]);
    // Held audio past the last final is dropped at close (never redacted); the recording is
    // finished at the session's length.
    await rec.close(24000n);
    expect(keeper.pieces).toHaveLength(2);
    expect(keeper.finished).toEqual([{ total: 24000n }]);
  });

  it('on a node that took the session over, starts from the replayed audio', async () => {
    const { keeper, rec } = recorder();
    rec.audio(40000n, speech(8000, 40000)); // the spool's open segment, replayed
    rec.audio(48000n, speech(800, 48000)); // then new frames
    await rec.final({ startSample: 40000n, endSample: 48800n, redactions: [] });
    expect(keeper.pieces.map((p) => [p.start, p.pcm.length])).toEqual([[40000n, 8800]]);
  });

  it('reads spans from a final event: its redactions, else its token words, else a token in its text masks the segment', () => {
    expect(redactedSpansOf({ redactions: [{ type: 'number', startSample: '10', endSample: '20' }] }, 0n, 100n)).toEqual([
      { startSample: 10n, endSample: 20n },
    ]);
    const words = [
      { word: 'call', start: { sample: '0' }, end: { sample: '5' } },
      { word: '[NUMBER]', start: { sample: '5' }, end: { sample: '50' } },
    ];
    expect(redactedSpansOf({ text: 'call [NUMBER]', words }, 0n, 100n)).toEqual([{ startSample: 5n, endSample: 50n }]);
    expect(redactedSpansOf({ text: 'call [CARD_NUMBER].' }, 0n, 100n)).toEqual([{ startSample: 0n, endSample: 100n }]);
    expect(redactedSpansOf({ text: 'call me' }, 0n, 100n)).toEqual([]);
  });
});

describe('mask and mix', () => {
  it('masks spans with a tone whose phase follows the session sample, clipped to the buffer', () => {
    const whole = speech(4000);
    maskSpans(whole, 1000n, [{ startSample: 2000n, endSample: 2500n }], RATE);
    const a = speech(2000);
    const b = speech(2000, 2000);
    maskSpans(a, 1000n, [{ startSample: 2000n, endSample: 2500n }], RATE);
    maskSpans(b, 3000n, [{ startSample: 2000n, endSample: 2500n }], RATE);
    expect([...a, ...b]).toEqual([...whole]); // one tone across a cut
    expect(spansOfAnnotations({ redactions: [{ type: 'ssn', startSample: '3', endSample: '9' }, { bad: true }] })).toEqual([
      { startSample: 3n, endSample: 9n },
    ]);
  });

  it('interleaves two legs, left and right, padding the shorter with silence', () => {
    expect([...interleaveStereo(Int16Array.of(1, 2, 3), 0, Int16Array.of(9), 1)]).toEqual([1, 0, 2, 9, 3, 0]);
  });
});
