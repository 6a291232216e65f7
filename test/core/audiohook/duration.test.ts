import { describe, expect, it } from 'vitest';
import { formatDuration, microsToSamples, parseDuration } from '../../../src/core/audiohook/duration.js';

describe('AudioHook durations', () => {
  it('reads the time forms of ISO-8601 durations', () => {
    expect(parseDuration('PT0S')).toBe(0);
    expect(parseDuration('PT3S')).toBe(3_000_000);
    expect(parseDuration('PT0.2S')).toBe(200_000);
    expect(parseDuration('PT1.123456789S')).toBe(1_123_457);
    expect(parseDuration('PT1M30.5S')).toBe(90_500_000);
    expect(parseDuration('PT2H')).toBe(7_200_000_000);
  });
  it('refuses anything else', () => {
    for (const bad of ['PT', 'P1D', '3S', 'PT-1S', 'PT1.S', 'pt1s', 'PT1,5S', '', 3, null, 'PT1S '])
      expect(parseDuration(bad), String(bad)).toBeNull();
  });
  it('writes seconds, trailing zeros dropped, and round-trips', () => {
    expect(formatDuration(0)).toBe('PT0S');
    expect(formatDuration(2_500_000)).toBe('PT2.5S');
    expect(formatDuration(125)).toBe('PT0.000125S');
    for (const us of [1, 999_999, 61_000_001]) expect(parseDuration(formatDuration(us))).toBe(us);
  });
  it('counts samples at 8 kHz', () => {
    expect(microsToSamples(200_000, 8000)).toBe(1600);
    expect(microsToSamples(parseDuration('PT0.0001S')!, 8000)).toBe(1);
  });
});
