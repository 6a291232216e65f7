// Characters for real-time audio.
//
// Rule: a session is charged 1 Character per started second of accepted audio, counted over
// the whole session (all epochs together), not per frame, per epoch or per segment. So a
// session holding 1 sample owes 1 Character, 16000 samples at 16 kHz owe 1, 16001 owe 2.
// "Accepted audio" is capturedSamples: samples the server took, including silence it filled
// for a gap (it is on the timeline and goes to the recognizer) and excluding duplicates.
// Charging the running total rather than each frame means frame sizes and retransmissions
// never change the bill.

/** Characters owed for a session that holds `capturedSamples` samples: ceil(samples / rate). */
export function charactersDue(capturedSamples: bigint, sampleRateHz: number): bigint {
  if (!Number.isInteger(sampleRateHz) || sampleRateHz <= 0) throw new RangeError(`sample rate ${sampleRateHz} is not a positive integer`);
  if (capturedSamples <= 0n) return 0n;
  const rate = BigInt(sampleRateHz);
  return (capturedSamples + rate - 1n) / rate;
}

/** What to debit before accepting audio that brings the session to `capturedAfter`,
 * given `charged` already debited: never negative, so a debit is never undone. */
export function chargeNeeded(charged: bigint, capturedAfter: bigint, sampleRateHz: number): bigint {
  const due = charactersDue(capturedAfter, sampleRateHz);
  return due > charged ? due - charged : 0n;
}
