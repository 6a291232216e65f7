// A stream's counters and its share of the process-wide client metrics (metrics.ts):
// the `streams` and `bufferedSeconds` gauges are shared by every stream of the process, so
// each stream moves them by its own change and gives back what it took, once.
import type { Logger } from 'pino';
import type { ClientMetrics } from './metrics.js';

export class StreamGauges {
  /** Samples this run captured from its input. */
  capturedThisRun = 0;
  overflowSamples = 0;
  reconnects = 0;
  resumes = 0;
  private lastOverflowLog = 0;
  private buffered = 0;
  /** This stream is counted in the shared `streams` gauge: end() and abort() can both run
   * (a caller aborts after a failed end), and abort() can come before start(), so the gauge
   * is released once, and only if it was taken. */
  private counted = false;

  constructor(
    private readonly metrics: ClientMetrics | undefined,
    private readonly rate: number,
  ) {}

  started(): void {
    this.metrics?.streams.inc();
    this.counted = true;
  }

  captured(samples: number): void {
    this.capturedThisRun += samples;
    this.metrics?.capturedSeconds.inc(samples / this.rate);
  }

  reconnected(): void {
    this.reconnects += 1;
    this.metrics?.reconnects.inc();
  }

  resumed(): void {
    this.resumes += 1;
    this.metrics?.resumes.inc();
  }

  /** The oldest unacknowledged audio was dropped from a full ring (logged at most every 5 s). */
  overflowed(dropped: number, bufferSamples: number, log: Logger): void {
    this.overflowSamples += dropped;
    this.metrics?.overflows.inc();
    this.metrics?.overflowSeconds.inc(dropped / this.rate);
    const now = Date.now();
    if (now - this.lastOverflowLog >= 5000) {
      this.lastOverflowLog = now;
      log.warn(
        { droppedSamples: dropped, overflowSamplesTotal: this.overflowSamples, bufferSamples },
        'ring buffer full: oldest unacknowledged audio dropped (it is sent as silence to keep the timeline)',
      );
    }
  }

  /** Samples captured and not yet acknowledged. */
  setBuffered(samples: number): void {
    const seconds = samples / this.rate;
    this.metrics?.bufferedSeconds.inc(seconds - this.buffered);
    this.buffered = seconds;
  }

  release(): void {
    if (this.counted) this.metrics?.streams.dec();
    this.counted = false;
    this.setBuffered(0);
  }
}
