// The stereo mix of a call (pure: no I/O): two legs on one time line, agent left and customer
// right. A leg's time 0 is its own first sample and the legs of a call start together
// (docs/calls.md, "Time line"), so the mix places both at 0 by default: the same time line as
// the call's merged transcript, whose times a player seeks to.

/** Interleaved 16-bit stereo: `left` from sample `leftAt`, `right` from `rightAt`, silence
 * elsewhere; as long as the later of the two ends. */
export function interleaveStereo(left: Int16Array, leftAt: number, right: Int16Array, rightAt: number): Int16Array {
  if (!Number.isSafeInteger(leftAt) || leftAt < 0 || !Number.isSafeInteger(rightAt) || rightAt < 0)
    throw new RangeError('offsets must be non-negative integers');
  const frames = Math.max(leftAt + left.length, rightAt + right.length);
  const out = new Int16Array(frames * 2);
  for (let i = 0; i < left.length; i++) out[(leftAt + i) * 2] = left[i]!;
  for (let i = 0; i < right.length; i++) out[(rightAt + i) * 2 + 1] = right[i]!;
  return out;
}
