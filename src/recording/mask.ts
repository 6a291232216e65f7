// Masking the redacted spans of a recording (pure: no I/O). A span the `redact` option
// replaced by a token (its type and session samples, never its value) is overwritten, in the
// audio under it, by a quiet 1 kHz tone: a listener hears that something was removed (silence
// would read as a dropped line) and nothing of what was said. Word times from the recognizer
// are frame-accurate but speech edges spill past them, so each span is widened by MASK_PAD_MS
// either side.

/** A redacted span on the session's timeline (samples at the recording's rate). */
export interface MaskSpan {
  startSample: bigint;
  endSample: bigint;
}

export const MASK_TONE_HZ = 1000;
/** -30 dBFS: audible, and far below the speech it replaces. */
export const MASK_TONE_AMPLITUDE = 1036;
export const MASK_PAD_MS = 80;

/** A redaction as stored (decimal strings) or sent (bigints): the samples it covers. */
export function spanOf(r: { startSample: unknown; endSample: unknown }): MaskSpan | null {
  try {
    const startSample = BigInt(r.startSample as string | bigint | number);
    const endSample = BigInt(r.endSample as string | bigint | number);
    return endSample > startSample && startSample >= 0n ? { startSample, endSample } : null;
  } catch {
    return null;
  }
}

/** The spans a stored segment's annotations name (`annotations.redactions`). */
export function spansOfAnnotations(annotations: Record<string, unknown> | undefined): MaskSpan[] {
  const list = annotations?.redactions;
  if (!Array.isArray(list)) return [];
  return list
    .map((r) => (r && typeof r === 'object' ? spanOf(r as { startSample: unknown; endSample: unknown }) : null))
    .filter((s): s is MaskSpan => s !== null);
}

/** Overwrite, in `pcm` (which starts at session sample `base`), every sample within a padded
 * span with the mask tone. The tone's phase follows the session sample, so a span cut across
 * two pieces is one continuous tone. Returns the samples masked. */
export function maskSpans(pcm: Int16Array, base: bigint, spans: readonly MaskSpan[], rate: number): number {
  const pad = BigInt(Math.round((MASK_PAD_MS * rate) / 1000));
  const end = base + BigInt(pcm.length);
  let masked = 0;
  for (const s of spans) {
    const from = s.startSample - pad < base ? base : s.startSample - pad;
    const to = s.endSample + pad > end ? end : s.endSample + pad;
    if (to <= from) continue;
    const step = (2 * Math.PI * MASK_TONE_HZ) / rate;
    for (let n = from; n < to; n++) {
      pcm[Number(n - base)] = Math.round(MASK_TONE_AMPLITUDE * Math.sin(step * Number(n % BigInt(rate))));
    }
    masked += Number(to - from);
  }
  return masked;
}
