// Sample accounting for a real-time session (docs/protocol.md, "How the server places a
// frame"). Two clocks: `epochReceived` counts samples within the current epoch (what frame
// sampleOffsets refer to), `capturedSamples` counts the whole session across epochs (what
// transcripts and billing use). Both only grow, by exactly the silence filled plus the
// samples accepted. Session-wide counts are bigint: a long telephony tap at 48 kHz can pass
// 2^53 in theory, and the spec's resume body carries a uint64.
//
// The cursor is a plain readonly value: every function returns a new one, so a frame that
// is refused (gap too large, unpaid) leaves the caller's cursor untouched.
import { ScribedError } from './errors.js';

export interface CaptureCursor {
  /** Current epoch, from 1. */
  readonly epoch: number;
  /** Samples held in the current epoch (the next expected sampleOffset). */
  readonly epochReceived: number;
  /** Samples held for the whole session, across epochs. */
  readonly capturedSamples: bigint;
  /** epochBases[i] is the session-wide sample at which epoch i+1 began. */
  readonly epochBases: readonly bigint[];
}

export interface FramePlacement {
  /** Samples of the frame already held, dropped. */
  duplicateSamples: number;
  /** Silence samples to insert before the accepted samples. */
  gapSamples: number;
  /** Index into the frame's samples of the first accepted sample. */
  acceptFrom: number;
  acceptCount: number;
  /** The cursor after this frame (gap + accepted added to both counters). */
  next: CaptureCursor;
}

export function initialCursor(): CaptureCursor {
  return { epoch: 1, epochReceived: 0, capturedSamples: 0n, epochBases: [0n] };
}

export function placeFrame(
  cursor: CaptureCursor,
  frame: { epoch: number; sampleOffset: number; samples: number },
  maxGapSamples: number,
): FramePlacement {
  if (frame.epoch !== cursor.epoch) {
    throw new ScribedError('STALE_EPOCH', `frame epoch ${frame.epoch} is not the current epoch ${cursor.epoch}`, {
      details: { epoch: cursor.epoch },
    });
  }
  const { sampleOffset: offset, samples } = frame;
  const received = cursor.epochReceived;

  if (offset + samples <= received) {
    // Everything already held: a retransmission after a lost ack.
    return { duplicateSamples: samples, gapSamples: 0, acceptFrom: samples, acceptCount: 0, next: cursor };
  }

  let duplicateSamples = 0;
  let gapSamples = 0;
  if (offset < received) {
    duplicateSamples = received - offset; // overlap: keep only the new tail
  } else if (offset > received) {
    gapSamples = offset - received;
    if (gapSamples > maxGapSamples) {
      throw new ScribedError(
        'GAP_TOO_LARGE',
        `frame starts at sampleOffset ${offset}, ${gapSamples} samples past ${received}; the largest gap filled is ${maxGapSamples}`,
        { details: { sampleOffset: received } },
      );
    }
  }
  const acceptFrom = duplicateSamples;
  const acceptCount = samples - duplicateSamples;
  const added = gapSamples + acceptCount;
  return {
    duplicateSamples,
    gapSamples,
    acceptFrom,
    acceptCount,
    next: {
      epoch: cursor.epoch,
      epochReceived: received + added,
      capturedSamples: cursor.capturedSamples + BigInt(added),
      epochBases: cursor.epochBases,
    },
  };
}

/** Open the next epoch: its sample 0 is the session's next sample. */
export function beginEpoch(cursor: CaptureCursor): CaptureCursor {
  return {
    epoch: cursor.epoch + 1,
    epochReceived: 0,
    capturedSamples: cursor.capturedSamples,
    epochBases: [...cursor.epochBases, cursor.capturedSamples],
  };
}

/**
 * Which epoch holds a session-wide sample, and where in it. An empty epoch (resumed, then
 * resumed again before any audio) shares its base with the next one; the last such epoch
 * wins, since that is the one the sample was actually received in.
 */
export function locate(cursor: CaptureCursor, sessionSample: bigint): { epoch: number; epochSample: bigint } {
  const bases = cursor.epochBases;
  for (let i = bases.length - 1; i >= 0; i--) {
    const base = bases[i]!;
    if (base <= sessionSample) return { epoch: i + 1, epochSample: sessionSample - base };
  }
  // Before the first base (only if bases[0] > 0, which the store never writes): epoch 1.
  return { epoch: 1, epochSample: sessionSample };
}

export interface TimePoint {
  /** Session-wide sample, decimal string (exact for 64-bit counts). */
  sample: string;
  ms: number;
  epoch: number;
  epochSample: number;
  epochMs: number;
}

/** ms = floor(samples * 1000 / rate), in bigint so large counts stay exact. */
export function samplesToMs(samples: bigint, sampleRateHz: number): bigint {
  return (samples * 1000n) / BigInt(sampleRateHz);
}

export function timePoint(cursor: CaptureCursor, sessionSample: bigint, sampleRateHz: number): TimePoint {
  const { epoch, epochSample } = locate(cursor, sessionSample);
  return {
    sample: sessionSample.toString(),
    ms: Number(samplesToMs(sessionSample, sampleRateHz)),
    epoch,
    epochSample: Number(epochSample),
    epochMs: Number(samplesToMs(epochSample, sampleRateHz)),
  };
}

export const UINT64_MAX = 2n ** 64n - 1n;

/**
 * A sample count from a resume body: a decimal string (preferred: exact beyond 2^53) of
 * digits only, no sign, at most 20 digits and <= 2^64-1; or a non-negative safe integer.
 */
export function parseSampleCount(value: unknown, field = 'capturedSamples'): bigint {
  const fail = (reason: string): never => {
    throw new ScribedError('VALIDATION_FAILED', `${field}: ${reason}`, { details: { field } });
  };
  if (typeof value === 'string') {
    if (!/^[0-9]{1,20}$/.test(value)) return fail('must be a decimal string of 1 to 20 digits');
    const n = BigInt(value);
    if (n > UINT64_MAX) return fail('must be at most 2^64-1');
    return n;
  }
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 0) return fail('must be a non-negative safe integer (or a decimal string)');
    return BigInt(value);
  }
  return fail('must be a decimal string or a non-negative integer');
}
