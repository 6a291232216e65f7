// A real-time caller for the benches: 8 kHz mu-law sent as 20 ms frames paced at real time,
// and the frame-to-ack latency of each frame.
import { performance } from 'node:perf_hooks';
import type WebSocket from 'ws';
import { encodeAudioFrame } from '../src/core/frame.js';

export const PACED_RATE = 8000;
const FRAME = PACED_RATE / 50;

export class PacedFrames {
  readonly frames: number;
  readonly ackMs: number[] = [];
  private readonly sentAt: Float64Array;
  private acked = 0;

  /** `audio`: one byte per sample (mu-law). */
  constructor(private readonly audio: Buffer) {
    this.frames = Math.ceil(audio.length / FRAME);
    this.sentAt = new Float64Array(this.frames);
  }

  /** Send every frame from now at real time; `afterFrame(k)` runs after frame k (0-based) is
   * sent, e.g. to send a commit. */
  start(ws: WebSocket, epoch: number, afterFrame: (k: number) => void = () => undefined): void {
    const t0 = performance.now();
    let k = 0;
    const tick = () => {
      while (k < this.frames && t0 + k * 20 <= performance.now()) {
        this.sentAt[k] = performance.now();
        ws.send(encodeAudioFrame({ epoch, sampleOffset: k * FRAME, payload: this.audio.subarray(k * FRAME, (k + 1) * FRAME) }));
        afterFrame(k);
        k += 1;
      }
      if (k < this.frames) setTimeout(tick, Math.max(0, t0 + k * 20 - performance.now()));
    };
    tick();
  }

  /** An ack holding `capturedSamples`: records the latency of every frame it covers. */
  acknowledged(capturedSamples: number): void {
    const now = performance.now();
    while (this.acked < this.frames && Math.min((this.acked + 1) * FRAME, this.audio.length) <= capturedSamples)
      this.ackMs.push(now - this.sentAt[this.acked++]!);
  }

  get allAcknowledged(): boolean {
    return this.acked === this.frames;
  }
}
