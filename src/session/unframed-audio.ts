// Audio from a client that sends no epoch or sample offset (the API facades' sockets), handed
// to its session as typed audio commands: numbered from the session's cursor when the driver
// was made, cut to the session's payload limit, a partial sample kept for the next piece. While
// the session does not accept audio (spent balance, recognition backlog, stopping) it is
// dropped without moving the cursor, so only what was in flight becomes a gap.
import type { SessionDriver } from './session-driver.js';

export class UnframedAudio {
  /** Follows the session's `accepting` events (the adapter's sink sets it). */
  accepting = true;
  private readonly epoch: number;
  private sampleOffset: number;
  private readonly maxPayload: number;
  /** Bytes short of a whole sample, kept for the next piece. */
  private carry = Buffer.alloc(0);

  constructor(
    private readonly driver: SessionDriver,
    private readonly bytesPerSample: 1 | 2,
  ) {
    const session = driver.session;
    // A fresh session's epoch, from its first sample.
    this.epoch = session.cursor.epoch;
    this.sampleOffset = session.cursor.epochReceived;
    this.maxPayload = session.maxFramePayloadBytes - (session.maxFramePayloadBytes % bytesPerSample);
  }

  push(bytes: Buffer): void {
    let data = this.carry.length > 0 ? Buffer.concat([this.carry, bytes]) : bytes;
    const whole = data.length - (data.length % this.bytesPerSample);
    if (whole < data.length || this.carry.length > 0) this.carry = Buffer.from(data.subarray(whole));
    data = data.subarray(0, whole);
    if (!this.accepting) return;
    for (let at = 0; at < data.length; at += this.maxPayload) {
      const payload = data.subarray(at, Math.min(data.length, at + this.maxPayload));
      void this.driver.audio({ epoch: this.epoch, sampleOffset: this.sampleOffset, payload });
      this.sampleOffset += payload.length / this.bytesPerSample;
    }
  }
}
