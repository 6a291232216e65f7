// The client's buffer of audio the server has not acknowledged yet, addressed by
// session-wide sample position. Pure: no I/O, no timers.
//
// It holds the samples [start, end) in a fixed circular byte array of `capacity` samples.
// Acknowledged audio is released from the front. When a push would exceed the capacity the
// oldest samples are dropped (overflow) so the newest audio is kept: a live call cannot wait,
// and after a long outage the recent audio is worth more than the old. Callers that can wait
// (files, pipes) check `free` first and never overflow. Positions below `start` that were
// dropped read back as silence, so the session timeline stays true (docs/ingest.md).

export interface RingRead {
  /** Payload bytes for `samples` samples starting at the requested position. */
  bytes: Buffer;
  samples: number;
  /** True when the bytes are silence standing in for overflowed (dropped) audio. */
  silence: boolean;
}

export class AudioRing {
  private readonly data: Buffer;
  private startPos: number;
  private endPos: number;

  constructor(
    readonly bytesPerSample: 1 | 2,
    readonly capacity: number,
    /** Session-wide position of the first sample this ring will hold. */
    origin = 0,
    /** The byte that encodes silence (0xff for mu-law, 0x00 for PCM). */
    private readonly silenceByte = 0,
  ) {
    if (!Number.isSafeInteger(capacity) || capacity < 1) throw new RangeError(`ring capacity must be a positive integer, got ${capacity}`);
    this.data = Buffer.alloc(capacity * bytesPerSample);
    this.startPos = origin;
    this.endPos = origin;
  }

  /** Session-wide position of the oldest sample held. */
  get start(): number {
    return this.startPos;
  }

  /** Session-wide position one past the newest sample held (the capture cursor). */
  get end(): number {
    return this.endPos;
  }

  get length(): number {
    return this.endPos - this.startPos;
  }

  get free(): number {
    return this.capacity - this.length;
  }

  /** Restart empty at `origin` (a re-attached session continues at the server's count). */
  reset(origin: number): void {
    this.startPos = origin;
    this.endPos = origin;
  }

  /** Append whole samples. Returns how many of the oldest held samples were dropped to make room. */
  push(chunk: Uint8Array): number {
    const bps = this.bytesPerSample;
    if (chunk.byteLength % bps !== 0) throw new RangeError(`chunk of ${chunk.byteLength} bytes is not whole ${bps}-byte samples`);
    const total = chunk.byteLength / bps;
    // Only the newest `capacity` samples of an oversized chunk can be kept.
    const skipped = Math.max(0, total - this.capacity);
    const newEnd = this.endPos + total;
    const newStart = Math.max(this.startPos, newEnd - this.capacity);
    const evicted = Math.max(0, Math.min(newStart, this.endPos) - this.startPos);
    let pos = this.endPos + skipped;
    let off = skipped * bps;
    while (off < chunk.byteLength) {
      const at = (pos % this.capacity) * bps;
      const n = Math.min(chunk.byteLength - off, this.data.length - at);
      this.data.set(chunk.subarray(off, off + n), at);
      off += n;
      pos += n / bps;
    }
    this.startPos = newStart;
    this.endPos = newEnd;
    return evicted + skipped;
  }

  /** Drop everything before `upTo` (acknowledged by the server). */
  release(upTo: number): void {
    if (upTo > this.startPos) this.startPos = Math.min(upTo, this.endPos);
  }

  /** Up to `maxSamples` samples from position `from` (start <= ... or a dropped position). */
  read(from: number, maxSamples: number): RingRead {
    if (from >= this.endPos) return { bytes: Buffer.alloc(0), samples: 0, silence: false };
    const bps = this.bytesPerSample;
    if (from < this.startPos) {
      const n = Math.min(maxSamples, this.startPos - from);
      return { bytes: Buffer.alloc(n * bps, this.silenceByte), samples: n, silence: true };
    }
    const n = Math.min(maxSamples, this.endPos - from);
    const out = Buffer.allocUnsafe(n * bps);
    let pos = from;
    let off = 0;
    while (off < out.length) {
      const at = (pos % this.capacity) * bps;
      const len = Math.min(out.length - off, this.data.length - at);
      this.data.copy(out, off, at, at + len);
      off += len;
      pos += len / bps;
    }
    return { bytes: out, samples: n, silence: false };
  }
}
