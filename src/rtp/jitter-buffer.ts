// The per-stream jitter buffer: turns RTP packets as they arrive (out of order, duplicated,
// some missing) into one gap-free run of audio on the sender's clock.
//
// - Order: packets are released in sequence-number order. A packet that arrives while an
//   earlier one is missing waits up to `maxDelayMs` (or until `maxPackets` are held) for
//   the hole to fill; then the hole is declared lost and release goes on.
// - Placement: audio is placed by RTP timestamp, not by arrival. The first released packet
//   is sample 0; every later packet goes at (its timestamp - the first one's). A jump ahead
//   (lost packets, or a sender that stops sending in silence) is filled with the encoding's
//   silence, so the transcript's times stay on the call's clock. Overlapping audio (a
//   timestamp behind what is already placed) is trimmed, never placed twice.
// - Discontinuities: a timestamp jump that cannot be elapsed time (further ahead than both
//   `maxGapMs` and the wall-clock time since the previous packet plus `maxDelayMs`, or far
//   behind) is a sender restart of its clock: the timeline continues without filling.
// - Counting: lost (holes skipped), reordered (arrived after a later packet, still in time),
//   duplicate (already held or released), late (arrived after its hole was declared lost),
//   out of range (a sequence jump beyond `maxDropout`/`maxMisorder`; two consecutive such
//   packets resynchronise, as RFC 3550 A.1 does).
// - Wrap-around: 16-bit sequence numbers and 32-bit timestamps are extended to unbounded
//   counters by signed distance from the latest value.
//
// Pure: time is the `nowMs` argument (any monotonic millisecond clock); no timers, no I/O.

export interface JitterBufferOptions {
  bytesPerSample: 1 | 2;
  /** The wire byte that decodes to silence. */
  silenceByte: number;
  clockRateHz: number;
  maxDelayMs?: number;
  maxPackets?: number;
  maxGapMs?: number;
  maxDropout?: number;
  maxMisorder?: number;
  /** Loss concealment: up to this much of a hole left by lost packets is filled by repeating
   * the audio placed just before it (cyclically), the rest with silence. 0 = silence only. */
  concealMs?: number;
}

export const JITTER_DEFAULTS = {
  maxDelayMs: 200,
  maxPackets: 256,
  maxGapMs: 10_000,
  maxDropout: 3000,
  maxMisorder: 100,
  concealMs: 0,
} as const;

export interface InputPacket {
  sequenceNumber: number;
  timestamp: number;
  payload: Uint8Array;
}

export interface ReleasedAudio {
  readonly kind: 'audio' | 'silence' | 'concealment';
  /** Position of the first sample, counted from the stream's first released sample. */
  readonly offsetSamples: number;
  /** Wire-format bytes (payload or silence), a whole number of samples. */
  readonly bytes: Uint8Array;
}

export type PushOutcome = 'in_order' | 'reordered' | 'duplicate' | 'late' | 'out_of_range' | 'bad_length';

export interface PushResult {
  readonly outcome: PushOutcome;
  readonly released: ReleasedAudio[];
}

export interface JitterStats {
  /** Packets pushed, whatever their outcome. */
  received: number;
  released: number;
  lost: number;
  reordered: number;
  duplicate: number;
  late: number;
  outOfRange: number;
  badLength: number;
  resyncs: number;
  discontinuities: number;
  audioSamples: number;
  silenceSamples: number;
  concealedSamples: number;
  overlapSamples: number;
  /** RFC 3550 A.8 interarrival jitter, in seconds. */
  jitterSeconds: number;
}

/** Signed distance a - b on a ring of 2^bits, in [-2^(bits-1), 2^(bits-1)). */
function ringDelta(a: number, b: number, bits: 16 | 32): number {
  const size = bits === 16 ? 0x1_0000 : 0x1_0000_0000;
  let d = (a - b) % size;
  if (d < 0) d += size;
  return d >= size / 2 ? d - size : d;
}

/** Interarrival jitter (RFC 3550 6.4.1 and A.8), in timestamp units: a running mean of the
 * difference in transit time between consecutive packets, with gain 1/16. */
export class InterarrivalJitter {
  #clockRateHz: number;
  #prevArrival: number | null = null;
  #prevTimestamp = 0;
  #jitter = 0;

  constructor(clockRateHz: number) {
    this.#clockRateHz = clockRateHz;
  }

  update(arrivalMs: number, timestamp: number): void {
    const arrival = (arrivalMs * this.#clockRateHz) / 1000;
    if (this.#prevArrival !== null) {
      const d = arrival - this.#prevArrival - ringDelta(timestamp, this.#prevTimestamp, 32);
      this.#jitter += (Math.abs(d) - this.#jitter) / 16;
    }
    this.#prevArrival = arrival;
    this.#prevTimestamp = timestamp;
  }

  /** In timestamp units, as an RTCP report block carries it. */
  get units(): number {
    return this.#jitter;
  }

  get seconds(): number {
    return this.#jitter / this.#clockRateHz;
  }
}

interface Held {
  timestamp: number;
  payload: Uint8Array;
  arrivalMs: number;
}

export class JitterBuffer {
  readonly #o: Required<JitterBufferOptions>;
  readonly #jitter: InterarrivalJitter;
  readonly #held = new Map<number, Held>();
  readonly #recentlyReleased = new Set<number>();
  #started = false;
  #highest = 0; // extended sequence number of the highest packet seen
  #next = 0; // extended sequence number released next
  #badSeq = -1; // RFC 3550 A.1: the sequence number that would confirm a jump
  #placing = false;
  #lastTimestamp = 0; // raw 32-bit timestamp of the last released packet
  #lastExtTimestamp = 0;
  #lastArrivalMs = 0;
  #base = 0; // extended timestamp of sample 0
  #position = 0; // samples placed so far
  #lostBeforeNext = false; // a hole was declared lost since the last placed packet
  #lastAudio: Uint8Array | null = null; // the last audio placed, for concealment
  readonly #stats: JitterStats = {
    received: 0,
    released: 0,
    lost: 0,
    reordered: 0,
    duplicate: 0,
    late: 0,
    outOfRange: 0,
    badLength: 0,
    resyncs: 0,
    discontinuities: 0,
    audioSamples: 0,
    silenceSamples: 0,
    concealedSamples: 0,
    overlapSamples: 0,
    jitterSeconds: 0,
  };

  constructor(options: JitterBufferOptions) {
    this.#o = { ...JITTER_DEFAULTS, ...options };
    this.#jitter = new InterarrivalJitter(options.clockRateHz);
  }

  get stats(): Readonly<JitterStats> {
    return { ...this.#stats, jitterSeconds: this.#jitter.seconds };
  }

  /** Samples placed so far (audio and silence): the stream's length on its own clock. */
  get positionSamples(): number {
    return this.#position;
  }

  /** Packets waiting for an earlier one. */
  get heldPackets(): number {
    return this.#held.size;
  }

  push(packet: InputPacket, nowMs: number): PushResult {
    this.#stats.received++;
    if (packet.payload.length % this.#o.bytesPerSample !== 0) {
      this.#stats.badLength++;
      return { outcome: 'bad_length', released: [] };
    }
    const seq = packet.sequenceNumber & 0xffff;
    const released: ReleasedAudio[] = [];
    if (!this.#started) {
      this.#started = true;
      this.#highest = seq;
      this.#next = seq;
    }
    let ext = this.#highest + ringDelta(seq, this.#highest, 16);

    if (ext - this.#highest > this.#o.maxDropout || ext < this.#next - this.#o.maxMisorder) {
      if (seq !== this.#badSeq) {
        this.#badSeq = (seq + 1) & 0xffff;
        this.#stats.outOfRange++;
        return { outcome: 'out_of_range', released };
      }
      // Two packets in sequence after a jump: the sender restarted its numbering.
      released.push(...this.#release(nowMs, true));
      this.#stats.resyncs++;
      this.#recentlyReleased.clear();
      // Start a fresh cycle so nothing released before can match again; extended numbers
      // stay congruent to the raw ones modulo 2^16, which ringDelta relies on.
      ext = (Math.floor(this.#next / 0x1_0000) + 1) * 0x1_0000 + seq;
      this.#highest = ext;
      this.#next = ext;
    }
    this.#badSeq = -1;

    if (ext < this.#next) {
      const outcome = this.#recentlyReleased.has(ext) ? 'duplicate' : 'late';
      this.#stats[outcome]++;
      return { outcome, released };
    }
    if (this.#held.has(ext)) {
      this.#stats.duplicate++;
      return { outcome: 'duplicate', released };
    }
    const outcome: PushOutcome = ext < this.#highest ? 'reordered' : 'in_order';
    if (outcome === 'reordered') this.#stats.reordered++;
    this.#highest = Math.max(this.#highest, ext);
    this.#jitter.update(nowMs, packet.timestamp >>> 0);
    this.#held.set(ext, { timestamp: packet.timestamp >>> 0, payload: packet.payload, arrivalMs: nowMs });
    released.push(...this.#release(nowMs, false));
    return { outcome, released };
  }

  /** Release what has waited long enough. Call periodically (e.g. every 20 ms). */
  poll(nowMs: number): ReleasedAudio[] {
    return this.#release(nowMs, false);
  }

  /** Release everything held, declaring every remaining hole lost (end of stream). */
  flush(nowMs: number): ReleasedAudio[] {
    return this.#release(nowMs, true);
  }

  #release(nowMs: number, force: boolean): ReleasedAudio[] {
    const out: ReleasedAudio[] = [];
    for (;;) {
      const held = this.#held.get(this.#next);
      if (held) {
        this.#held.delete(this.#next);
        this.#place(held, out);
        this.#markReleased(this.#next);
        this.#next++;
        continue;
      }
      if (this.#held.size === 0) break;
      let first = Infinity;
      let oldestArrival = Infinity;
      for (const [ext, h] of this.#held) {
        if (ext < first) first = ext;
        if (h.arrivalMs < oldestArrival) oldestArrival = h.arrivalMs;
      }
      const waitedOut = nowMs - oldestArrival >= this.#o.maxDelayMs;
      if (!force && !waitedOut && this.#held.size <= this.#o.maxPackets) break;
      this.#stats.lost += first - this.#next;
      this.#lostBeforeNext = true;
      this.#next = first;
    }
    return out;
  }

  #markReleased(ext: number): void {
    this.#recentlyReleased.add(ext);
    if (this.#recentlyReleased.size > 2 * this.#o.maxMisorder) {
      const floor = ext - this.#o.maxMisorder;
      for (const e of this.#recentlyReleased) if (e < floor) this.#recentlyReleased.delete(e);
    }
  }

  #place(held: Held, out: ReleasedAudio[]): void {
    const bps = this.#o.bytesPerSample;
    const rate = this.#o.clockRateHz;
    let extTs: number;
    if (!this.#placing) {
      this.#placing = true;
      extTs = held.timestamp;
      this.#base = extTs;
    } else {
      extTs = this.#lastExtTimestamp + ringDelta(held.timestamp, this.#lastTimestamp, 32);
    }
    const wallSamples = ((held.arrivalMs - this.#lastArrivalMs + this.#o.maxDelayMs) * rate) / 1000;
    const maxGapSamples = Math.max((this.#o.maxGapMs * rate) / 1000, wallSamples);
    let payload = held.payload;
    const offset = extTs - this.#base;
    if (offset > this.#position) {
      const gap = offset - this.#position;
      if (gap <= maxGapSamples) {
        const conceal = this.#lostBeforeNext && this.#lastAudio ? Math.min(gap, Math.floor((this.#o.concealMs * rate) / 1000)) : 0;
        if (conceal > 0) {
          const bytes = new Uint8Array(conceal * bps);
          const src = this.#lastAudio!;
          for (let i = 0; i < bytes.length; i += src.length) bytes.set(src.subarray(0, Math.min(src.length, bytes.length - i)), i);
          out.push({ kind: 'concealment', offsetSamples: this.#position, bytes });
          this.#position += conceal;
          this.#stats.concealedSamples += conceal;
        }
        const silence = gap - conceal;
        if (silence > 0) {
          out.push({ kind: 'silence', offsetSamples: this.#position, bytes: new Uint8Array(silence * bps).fill(this.#o.silenceByte) });
          this.#position += silence;
          this.#stats.silenceSamples += silence;
        }
      } else {
        this.#stats.discontinuities++;
        this.#base = extTs - this.#position;
      }
    } else if (offset < this.#position) {
      const behind = this.#position - offset;
      if (behind > (this.#o.maxGapMs * rate) / 1000) {
        this.#stats.discontinuities++;
        this.#base = extTs - this.#position;
      } else {
        const trim = Math.min(behind, payload.length / bps);
        payload = payload.subarray(trim * bps);
        this.#stats.overlapSamples += trim;
      }
    }
    if (payload.length > 0) {
      out.push({ kind: 'audio', offsetSamples: this.#position, bytes: payload });
      this.#position += payload.length / bps;
      this.#stats.audioSamples += payload.length / bps;
      this.#lastAudio = payload;
    }
    this.#lostBeforeNext = false;
    this.#stats.released++;
    this.#lastTimestamp = held.timestamp;
    this.#lastExtTimestamp = extTs;
    this.#lastArrivalMs = held.arrivalMs;
  }
}
