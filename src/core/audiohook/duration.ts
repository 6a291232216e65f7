// AudioHook's durations: ISO-8601 durations of time only (`PT3S`, `PT0.2S`, `PT1M30.5S`), the
// form every position, offset and gap of the protocol takes. Kept as whole microseconds, so a
// client's decimal seconds map to samples without float drift.

const DURATION = /^PT(?:(\d{1,9})H)?(?:(\d{1,9})M)?(?:(\d{1,12})(?:\.(\d{1,9}))?S)?$/;

/** Microseconds of an ISO-8601 time duration; null when it is not one (or is `PT` alone). */
export function parseDuration(value: unknown): number | null {
  if (typeof value !== 'string' || value === 'PT') return null;
  const m = DURATION.exec(value);
  if (!m) return null;
  const [, h, min, s, frac] = m;
  if (h === undefined && min === undefined && s === undefined) return null;
  const micros =
    (Number(h ?? 0) * 3600 + Number(min ?? 0) * 60 + Number(s ?? 0)) * 1_000_000 + Math.round(Number(`0.${frac ?? '0'}`) * 1_000_000);
  return Number.isSafeInteger(micros) ? micros : null;
}

/** `PT<seconds>S` with at most 6 decimals, trailing zeros dropped (`PT0S`, `PT2.5S`). */
export function formatDuration(micros: number): string {
  const us = Math.max(0, Math.round(micros));
  const whole = Math.floor(us / 1_000_000);
  const frac = us % 1_000_000;
  return frac === 0 ? `PT${whole}S` : `PT${whole}.${String(frac).padStart(6, '0').replace(/0+$/, '')}S`;
}

/** Samples at `rate` in a duration of microseconds, rounded to the nearest sample. */
export function microsToSamples(micros: number, rate: number): number {
  return Math.round((micros * rate) / 1_000_000);
}

export function samplesToMicros(samples: number, rate: number): number {
  return Math.round((samples * 1_000_000) / rate);
}
