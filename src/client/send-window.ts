// The streamer's send side: captured audio goes into the bounded ring of unacknowledged audio
// (ring-buffer.ts), and leaves it as frames no bigger than a frame and no further ahead of
// the acknowledgements than the window (capture-accounting.ts says which). A writer that
// cannot drop audio waits here for room; one that can (live capture) overflows the ring.
import { encodeAudioFrame } from '../core/frame.js';
import { AudioRing } from './ring-buffer.js';
import type { CaptureAccount } from './capture-accounting.js';

export interface SendWindowOptions {
  bytesPerSample: 1 | 2;
  sampleRateHz: number;
  bufferSamples: number;
  /** The byte that encodes silence (0xff for mu-law). */
  silenceByte: number;
  frameMs: number;
  windowMs: number;
  onFull: 'block' | 'drop-oldest';
}

interface Waiter {
  resolve: () => void;
  reject: (err: Error) => void;
}

export class SendWindow {
  readonly ring: AudioRing;
  private readonly bps: 1 | 2;
  private readonly frameSamples: number;
  private readonly windowSamples: number;
  /** The first byte of a 16-bit sample split across two writes. */
  private carry: Buffer | null = null;
  private spaceWaiters: Waiter[] = [];
  private failure: Error | null = null;

  constructor(
    private readonly opts: SendWindowOptions,
    private readonly acct: CaptureAccount,
  ) {
    this.bps = opts.bytesPerSample;
    this.frameSamples = Math.max(1, Math.round((opts.frameMs * opts.sampleRateHz) / 1000));
    this.windowSamples = Math.max(this.frameSamples, Math.round((opts.windowMs * opts.sampleRateHz) / 1000));
    this.ring = new AudioRing(this.bps, opts.bufferSamples, 0, opts.silenceByte);
  }

  /** Continue after what a re-attached session holds. */
  reattach(held: number): void {
    this.acct.reattach(held);
    this.ring.reset(held);
  }

  /** Buffer a chunk, whole samples only. `captured` is told of each piece buffered and of the
   * oldest samples it pushed out of the ring. With onFull 'block' it waits for room (resolved
   * by roomMade(), rejected by fail()). */
  async write(chunk: Buffer, captured: (samples: number, dropped: number) => void): Promise<void> {
    let data = chunk;
    if (this.carry) {
      data = Buffer.concat([this.carry, chunk]);
      this.carry = null;
    }
    const rem = data.length % this.bps;
    if (rem !== 0) {
      // A 16-bit sample split across two reads of a pipe: keep its first byte.
      this.carry = Buffer.from(data.subarray(data.length - rem));
      data = data.subarray(0, data.length - rem);
    }
    let off = 0;
    while (off < data.length) {
      let room = this.ring.free;
      if (this.opts.onFull === 'block') {
        while (room === 0) {
          await new Promise<void>((resolve, reject) => (this.failure ? reject(this.failure) : this.spaceWaiters.push({ resolve, reject })));
          room = this.ring.free;
        }
      } else {
        room = this.ring.capacity;
      }
      const piece = data.subarray(off, off + room * this.bps);
      off += piece.length;
      const samples = piece.length / this.bps;
      const dropped = this.ring.push(piece);
      this.acct.capture(samples);
      captured(samples, dropped);
    }
  }

  /** Bytes of a sample the input ended inside of, dropped. */
  dropCarry(): number {
    const n = this.carry?.length ?? 0;
    this.carry = null;
    return n;
  }

  /** The server holds everything before acct.acknowledged: free its room. */
  released(): void {
    this.ring.release(this.acct.acknowledged);
    if (this.ring.free > 0) for (const w of this.spaceWaiters.splice(0)) w.resolve();
  }

  /** Writers waiting for room, and any that would wait later, fail with `err`. */
  fail(err: Error): void {
    this.failure ??= err;
    for (const w of this.spaceWaiters.splice(0)) w.reject(err);
  }

  /** The frames the window allows now, encoded, each marked sent. */
  *frames(maxPayloadBytes: number): Generator<{ bytes: Uint8Array; samples: number }> {
    const maxFrame = Math.min(this.frameSamples, Math.floor(maxPayloadBytes / this.bps));
    for (;;) {
      const plan = this.acct.nextFrame(maxFrame, this.windowSamples);
      if (!plan) return;
      const read = this.ring.read(plan.from, plan.samples);
      if (read.samples === 0) return;
      const frame = { ...plan, samples: read.samples };
      const bytes = encodeAudioFrame({ epoch: frame.epoch, sampleOffset: frame.sampleOffset, payload: read.bytes });
      this.acct.markSent(frame);
      yield { bytes, samples: read.samples };
    }
  }
}
