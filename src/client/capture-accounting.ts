// Where the client stands on the session timeline: what it captured, sent and had
// acknowledged, and how session-wide positions map to the current epoch's sampleOffset.
// Pure: the streamer feeds it server events and asks it what to send next.
//
// All positions are session-wide sample counts (the server's capturedSamples clock). They are
// JS numbers: 2^53 samples is over 5,900 years of 48 kHz audio; values from the wire are
// checked on the way in.

export interface FramePlan {
  /** Session-wide position of the frame's first sample. */
  from: number;
  samples: number;
  /** The frame header's sampleOffset in the current epoch. */
  sampleOffset: number;
  epoch: number;
}

export class CaptureAccount {
  /** One past the last captured sample. */
  captured: number;
  /** Everything before this is held by the server. */
  acknowledged: number;
  /** Next position to send on the current socket. */
  sendPos: number;
  epoch = 0;
  /** Session-wide position of the current epoch's sampleOffset 0. */
  epochBase = 0;
  /** One past the furthest sample sent in the current epoch. */
  sentEnd: number;

  constructor(origin = 0) {
    this.captured = origin;
    this.acknowledged = origin;
    this.sendPos = origin;
    this.sentEnd = origin;
  }

  /** Continue after what a re-attached session already holds: audio captured by an
   * earlier run of the client is either on the server or gone. */
  reattach(serverCaptured: number): void {
    this.captured = serverCaptured;
    this.acknowledged = serverCaptured;
    this.sendPos = serverCaptured;
    this.sentEnd = serverCaptured;
  }

  capture(samples: number): void {
    this.captured += samples;
  }

  /** `ready` says where the server stands in which epoch: re-send from there. Returns how
   * many samples became newly acknowledged. */
  onReady(epoch: number, sampleOffset: number, serverCaptured: number): number {
    if (serverCaptured > this.captured) {
      throw new RangeError(`server holds ${serverCaptured} samples but this client captured only ${this.captured}`);
    }
    this.epoch = epoch;
    this.epochBase = serverCaptured - sampleOffset;
    const before = this.acknowledged;
    this.acknowledged = Math.max(this.acknowledged, serverCaptured);
    this.sendPos = this.acknowledged;
    this.sentEnd = this.acknowledged;
    // Held by the server though its ack was lost with the old socket.
    return this.acknowledged - before;
  }

  /** An ack: returns how many samples became newly acknowledged. */
  onAck(serverCaptured: number): number {
    const before = this.acknowledged;
    if (serverCaptured > this.acknowledged) this.acknowledged = Math.min(serverCaptured, this.captured);
    if (this.sendPos < this.acknowledged) this.sendPos = this.acknowledged;
    return this.acknowledged - before;
  }

  /** A frame was refused: nothing after the acknowledged point is known to be held. */
  rewind(): void {
    this.sendPos = this.acknowledged;
  }

  get inFlight(): number {
    return this.sendPos - this.acknowledged;
  }

  get unacknowledged(): number {
    return this.captured - this.acknowledged;
  }

  /** The next frame to send, or null: bounded by the frame size and the in-flight window
   * (so a fast file is sent as fast as the server acknowledges, no faster). */
  nextFrame(maxFrameSamples: number, windowSamples: number): FramePlan | null {
    const room = windowSamples - this.inFlight;
    const n = Math.min(maxFrameSamples, this.captured - this.sendPos, room);
    if (n <= 0 || this.epoch === 0) return null;
    return { from: this.sendPos, samples: n, sampleOffset: this.sendPos - this.epochBase, epoch: this.epoch };
  }

  markSent(plan: FramePlan): void {
    this.sendPos = plan.from + plan.samples;
    if (this.sendPos > this.sentEnd) this.sentEnd = this.sendPos;
  }

  /** The part of a `gap` event's range (silence the server inserted) where this client had
   * sent real audio in the current epoch, session-wide, or null. Below `silentBelow` the
   * client itself sent silence (audio dropped by buffer overflow), which is no loss. */
  realAudioInGap(gap: { epoch: number; sampleOffset: number; samples: number }, silentBelow = 0): { from: number; to: number } | null {
    if (gap.epoch !== this.epoch || this.epoch === 0) return null;
    const start = this.epochBase + gap.sampleOffset;
    const from = Math.max(start, silentBelow, this.epochBase);
    const to = Math.min(start + gap.samples, this.sentEnd);
    return to > from ? { from, to } : null;
  }
}

/** A sample count from the wire (decimal string or number) as a safe JS number. */
export function wireSamples(value: unknown): number {
  const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : typeof value === 'number' ? value : NaN;
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`not a sample count: ${JSON.stringify(value)}`);
  return n;
}
