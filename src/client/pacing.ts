// Real-time pacing for file input (`--realtime`): audio is released no faster than it would
// have been captured live. Pure: the clock is passed in.

/** How long to wait before releasing audio that ends `samplesSoFar` samples after the
 * start, when `elapsedMs` have passed since the start. */
export function pacingDelayMs(samplesSoFar: number, rate: number, elapsedMs: number): number {
  const due = (samplesSoFar * 1000) / rate;
  return Math.max(0, due - elapsedMs);
}

/** Split a chunk into pieces of at most `maxBytes` (whole samples) for smooth pacing. */
export function splitChunk(chunk: Buffer, maxBytes: number): Buffer[] {
  if (chunk.length <= maxBytes) return [chunk];
  const out: Buffer[] = [];
  for (let i = 0; i < chunk.length; i += maxBytes) out.push(chunk.subarray(i, Math.min(chunk.length, i + maxBytes)));
  return out;
}
