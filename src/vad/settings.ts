// The effective VAD settings of a session: the spec's options where the client gave them,
// the server's defaults otherwise (the spec gives none). Pure; documented in docs/options.md.
import type { SegmenterConfig } from './segmenter.js';
import { VAD_WINDOW_MS } from './window.js';

export const VAD_DEFAULTS = {
  speechDetectionThreshold: 0.5,
  commitSilenceMs: 700,
  minimumSpeechMs: 250,
  minimumSilenceMs: 100,
} as const;

/** Audio kept before the first speech window of a segment (the onset the detector needed
 * time to confirm). */
export const VAD_PRE_ROLL_MS = 300;

export interface VadSettings {
  threshold: number;
  segmenter: SegmenterConfig;
}

function num(v: unknown, fallback: number): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : fallback;
}

/**
 * @param maxSegmentSeconds the server's hard segment bound (the same one manual mode uses);
 *        from half of it on, a pause of minimumSilenceMs is enough to commit.
 */
export function vadSettings(options: Record<string, unknown>, maxSegmentSeconds: number): VadSettings {
  const maxMs = maxSegmentSeconds * 1000;
  return {
    threshold: num(options.speechDetectionThreshold, VAD_DEFAULTS.speechDetectionThreshold),
    segmenter: {
      windowMs: VAD_WINDOW_MS,
      minimumSpeechMs: num(options.minimumSpeechMs, VAD_DEFAULTS.minimumSpeechMs),
      minimumSilenceMs: num(options.minimumSilenceMs, VAD_DEFAULTS.minimumSilenceMs),
      commitSilenceMs: num(options.commitSilenceMs, VAD_DEFAULTS.commitSilenceMs),
      preRollMs: VAD_PRE_ROLL_MS,
      softMaxSegmentMs: maxMs / 2,
      maxSegmentMs: maxMs,
    },
  };
}
