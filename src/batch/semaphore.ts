// At most `limit` tasks at once; the others wait their turn in arrival order. Used around
// the batch upload's probe and decode (each an ffmpeg process with its CPU and disk use).
export class Semaphore {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly limit: number) {
    if (!(Number.isInteger(limit) && limit >= 1)) throw new RangeError(`semaphore limit must be a positive integer (got ${limit})`);
  }

  /** Tasks running now (tests and metrics). */
  get active(): number {
    return this.running;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running < this.limit) this.running++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve)); // the slot is handed over
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
