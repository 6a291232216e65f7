// A Deepgram live stream's binary messages as whole samples per channel. Pure and stateful
// (one per socket). Deepgram clients send raw audio in messages of any size, so a message may
// end inside a sample (linear16) or inside a frame of interleaved channels (`channels=2`,
// `multichannel=true`: L R L R ...); the bytes of the unfinished frame wait for the next
// message. Mono passes through untouched (no copy unless a frame was split).

export class ChannelSplitter {
  private carry: Buffer | null = null;
  private readonly frameBytes: number;

  constructor(
    private readonly bytesPerSample: 1 | 2,
    private readonly channels: 1 | 2,
  ) {
    this.frameBytes = bytesPerSample * channels;
  }

  /** The whole frames received so far and not yet returned, one buffer per channel (each in
   * the channel's own encoding, one channel's samples in order). */
  push(data: Buffer): Buffer[] {
    let bytes = this.carry ? Buffer.concat([this.carry, data]) : data;
    this.carry = null;
    const whole = bytes.length - (bytes.length % this.frameBytes);
    if (whole < bytes.length) this.carry = Buffer.from(bytes.subarray(whole));
    bytes = bytes.subarray(0, whole);
    if (this.channels === 1) return [bytes];
    const frames = whole / this.frameBytes;
    const b = this.bytesPerSample;
    const left = Buffer.allocUnsafe(frames * b);
    const right = Buffer.allocUnsafe(frames * b);
    if (b === 1) {
      for (let f = 0, at = 0; f < frames; f++, at += 2) {
        left[f] = bytes[at]!;
        right[f] = bytes[at + 1]!;
      }
    } else {
      for (let f = 0, at = 0, o = 0; f < frames; f++, at += 4, o += 2) {
        left[o] = bytes[at]!;
        left[o + 1] = bytes[at + 1]!;
        right[o] = bytes[at + 2]!;
        right[o + 1] = bytes[at + 3]!;
      }
    }
    return [left, right];
  }
}
