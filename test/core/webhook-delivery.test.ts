// The retry schedule and attempt verdicts (src/core/webhook-delivery.ts), as docs/webhooks.md
// documents them.
import { describe, expect, it } from 'vitest';
import { MAX_ATTEMPTS, failingLongEnough, judgeAttempt, retryDelayMs, retrySchedule } from '../../src/core/webhook-delivery.js';
import { transcriptionEventType } from '../../src/core/webhook-events.js';

describe('webhook retry schedule', () => {
  it('waits 5 s x 4^(n-1), capped at 8 h, about a day from first to last attempt', () => {
    const s = retrySchedule(5_000);
    expect(s).toEqual([5_000, 20_000, 80_000, 320_000, 1_280_000, 5_120_000, 20_480_000, 28_800_000, 28_800_000]);
    expect(s).toHaveLength(MAX_ATTEMPTS - 1);
    const hours = s.reduce((a, b) => a + b, 0) / 3600_000;
    expect(hours).toBeGreaterThan(22);
    expect(hours).toBeLessThan(26);
  });

  it('jitters each wait within ±20 %', () => {
    expect(retryDelayMs(2, 5_000, 0)).toBe(16_000);
    expect(retryDelayMs(2, 5_000, 0.5)).toBe(20_000);
    expect(retryDelayMs(2, 5_000, 0.999999)).toBe(24_000);
    expect(() => retryDelayMs(0, 5_000, 0.5)).toThrow(RangeError);
  });
});

describe('webhook attempt verdicts', () => {
  it('delivers on 2xx, disables on 410, retries 5xx/408/429/timeouts/connection errors, fails the rest', () => {
    expect(judgeAttempt({ kind: 'answered', status: 204 }, 1)).toBe('delivered');
    expect(judgeAttempt({ kind: 'answered', status: 410 }, 1)).toBe('gone');
    for (const status of [500, 503, 408, 429]) expect(judgeAttempt({ kind: 'answered', status }, 1)).toBe('retry');
    expect(judgeAttempt({ kind: 'timeout' }, 3)).toBe('retry');
    expect(judgeAttempt({ kind: 'network', error: 'ECONNREFUSED' }, 3)).toBe('retry');
    for (const status of [301, 400, 401, 404]) expect(judgeAttempt({ kind: 'answered', status }, 1)).toBe('failed');
    expect(judgeAttempt({ kind: 'refused', error: 'link-local' }, 1)).toBe('failed');
    expect(judgeAttempt({ kind: 'answered', status: 500 }, MAX_ATTEMPTS)).toBe('failed');
  });

  it('disables only an endpoint failing since before the delivery was raised', () => {
    expect(failingLongEnough('2026-01-01T00:00:00.000Z', '2026-01-01T00:00:01.000Z')).toBe(true);
    expect(failingLongEnough('2026-01-02T00:00:00.000Z', '2026-01-01T00:00:01.000Z')).toBe(false);
    expect(failingLongEnough(null, '2026-01-01T00:00:01.000Z')).toBe(false);
  });
});

describe('webhook events from status changes', () => {
  it('raises one event per change and none for a repeated status', () => {
    expect(transcriptionEventType('PROCESSING', 'COMPLETED', 'realtime')).toBe('transcription.completed');
    expect(transcriptionEventType('RECORDING', 'FAILED', 'batch')).toBe('transcription.failed');
    expect(transcriptionEventType('RECORDING', 'PAUSED', 'realtime')).toBe('session.paused');
    expect(transcriptionEventType('COMPLETED', 'COMPLETED', 'realtime')).toBeNull();
    expect(transcriptionEventType('PAUSED', 'RECORDING', 'realtime')).toBeNull();
  });
});
