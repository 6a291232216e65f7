import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { InterarrivalJitter, JitterBuffer, type ReleasedAudio } from '../../src/rtp/jitter-buffer.js';

const SAMPLES = 160; // 20 ms at 8 kHz
const MULAW_SILENCE = 0xff;

/** Packet k of a stream: 160 samples whose bytes all equal k % 250 (never the silence byte). */
function packet(k: number, opts: { seq0?: number; ts0?: number } = {}) {
  return {
    sequenceNumber: ((opts.seq0 ?? 0) + k) & 0xffff,
    timestamp: ((opts.ts0 ?? 0) + k * SAMPLES) >>> 0,
    payload: new Uint8Array(SAMPLES).fill(k % 250),
  };
}

function mulawBuffer(extra: Partial<ConstructorParameters<typeof JitterBuffer>[0]> = {}) {
  return new JitterBuffer({ bytesPerSample: 1, silenceByte: MULAW_SILENCE, clockRateHz: 8000, ...extra });
}

/** Concatenate released chunks, checking they are contiguous from sample 0. */
function concat(chunks: ReleasedAudio[]): Buffer {
  let at = 0;
  for (const c of chunks) {
    if (c.offsetSamples !== at) throw new Error(`chunk at ${c.offsetSamples}, expected ${at}`);
    at += c.bytes.length;
  }
  const out = Buffer.alloc(at);
  let o = 0;
  for (const c of chunks) {
    out.set(c.bytes, o);
    o += c.bytes.length;
  }
  return out;
}

/** The audio a receiver should produce for packets 0..n-1 with `missing` never arriving. */
function expected(n: number, missing: Set<number> = new Set()): Buffer {
  const out = Buffer.alloc(n * SAMPLES);
  for (let k = 0; k < n; k++) out.fill(missing.has(k) ? MULAW_SILENCE : k % 250, k * SAMPLES, (k + 1) * SAMPLES);
  return out;
}

describe('JitterBuffer', () => {
  it('releases in-order packets at once, placed back to back', () => {
    const jb = mulawBuffer();
    const out: ReleasedAudio[] = [];
    for (let k = 0; k < 5; k++) {
      const r = jb.push(packet(k), k * 20);
      expect(r.outcome).toBe('in_order');
      expect(r.released).toHaveLength(1);
      out.push(...r.released);
    }
    expect(concat(out)).toEqual(expected(5));
    expect(jb.stats).toMatchObject({ received: 5, released: 5, lost: 0, reordered: 0, audioSamples: 5 * SAMPLES, silenceSamples: 0 });
  });

  it('reorders: a packet waits for its predecessor and both are released in order', () => {
    const jb = mulawBuffer();
    const out = [...jb.push(packet(0), 0).released];
    const r2 = jb.push(packet(2), 20);
    expect(r2).toEqual({ outcome: 'in_order', released: [] });
    const r1 = jb.push(packet(1), 25);
    expect(r1.outcome).toBe('reordered');
    out.push(...r1.released);
    expect(concat(out)).toEqual(expected(3));
    expect(jb.stats).toMatchObject({ reordered: 1, lost: 0 });
  });

  it('declares a hole lost after maxDelayMs and fills it with silence by timestamp', () => {
    const jb = mulawBuffer({ maxDelayMs: 100 });
    const out = [...jb.push(packet(0), 0).released, ...jb.push(packet(3), 60).released];
    expect(jb.poll(159)).toEqual([]); // still waiting for 1 and 2
    out.push(...jb.poll(160));
    expect(concat(out)).toEqual(expected(4, new Set([1, 2])));
    expect(jb.stats).toMatchObject({ lost: 2, silenceSamples: 2 * SAMPLES, audioSamples: 2 * SAMPLES });
    // The lost packets arriving now are late, not placed again.
    expect(jb.push(packet(1), 170).outcome).toBe('late');
    expect(jb.push(packet(2), 171).outcome).toBe('late');
    expect(jb.stats.late).toBe(2);
  });

  it('conceals up to concealMs of a loss by repeating the audio before it, then silence', () => {
    const jb = mulawBuffer({ concealMs: 30 }); // 240 samples: one packet and a half
    const out = [...jb.push(packet(0), 0).released];
    for (const k of [4, 5]) out.push(...jb.push(packet(k), k * 20).released);
    out.push(...jb.flush(1000));
    const audio = concat(out);
    const expectedAudio = expected(6, new Set([1, 2, 3]));
    expectedAudio.fill(0 % 250, 160, 400); // packet 0 repeated for 240 samples
    expect(audio.equals(expectedAudio)).toBe(true);
    expect(jb.stats).toMatchObject({ lost: 3, concealedSamples: 240, silenceSamples: 240 });
  });

  it('does not conceal a pause in sending (no packet lost)', () => {
    const jb = mulawBuffer({ concealMs: 60 });
    const out = [...jb.push(packet(0), 0).released];
    out.push(...jb.push({ sequenceNumber: 1, timestamp: 3 * SAMPLES, payload: new Uint8Array(SAMPLES).fill(9) }, 60).released);
    expect(jb.stats).toMatchObject({ concealedSamples: 0, silenceSamples: 2 * SAMPLES });
    expect(
      concat(out)
        .subarray(SAMPLES, 3 * SAMPLES)
        .every((b) => b === MULAW_SILENCE),
    ).toBe(true);
  });

  it('declares holes lost when more than maxPackets wait', () => {
    const jb = mulawBuffer({ maxPackets: 3 });
    const out = [...jb.push(packet(0), 0).released];
    for (let k = 2; k <= 4; k++) expect(jb.push(packet(k), 0).released).toEqual([]);
    out.push(...jb.push(packet(5), 0).released);
    expect(concat(out)).toEqual(expected(6, new Set([1])));
    expect(jb.heldPackets).toBe(0);
  });

  it('counts duplicates, whether still held or already released, and places them once', () => {
    const jb = mulawBuffer();
    const out = [...jb.push(packet(0), 0).released];
    expect(jb.push(packet(0), 1).outcome).toBe('duplicate');
    jb.push(packet(2), 2);
    expect(jb.push(packet(2), 3).outcome).toBe('duplicate');
    out.push(...jb.push(packet(1), 4).released);
    expect(jb.push(packet(1), 5).outcome).toBe('duplicate');
    expect(concat(out)).toEqual(expected(3));
    expect(jb.stats.duplicate).toBe(3);
  });

  it('crosses the 16-bit sequence and 32-bit timestamp wrap without a hitch', () => {
    const jb = mulawBuffer();
    const wrap = { seq0: 0xfffd, ts0: 0xffffffff - 2 * SAMPLES + 1 };
    const order = [0, 1, 3, 2, 4, 5, 6, 7];
    const out: ReleasedAudio[] = [];
    order.forEach((k, i) => out.push(...jb.push(packet(k, wrap), i).released));
    expect(concat(out)).toEqual(expected(8));
    expect(jb.stats).toMatchObject({ lost: 0, reordered: 1, duplicate: 0, late: 0, discontinuities: 0, outOfRange: 0 });
  });

  it('loses packets across the wrap and still places the rest by timestamp', () => {
    const jb = mulawBuffer({ maxDelayMs: 50 });
    const wrap = { seq0: 0xfffe, ts0: 0xffffff00 };
    const out: ReleasedAudio[] = [];
    for (const k of [0, 3, 4]) out.push(...jb.push(packet(k, wrap), k * 20).released);
    out.push(...jb.flush(200));
    expect(concat(out)).toEqual(expected(5, new Set([1, 2])));
    expect(jb.stats.lost).toBe(2);
  });

  it('fills a silence-suppression pause (timestamp jump, no sequence gap) up to the wall-clock time elapsed', () => {
    const jb = mulawBuffer({ maxGapMs: 1000 });
    const out = [...jb.push(packet(0), 0).released];
    // 30 s later, the next talkspurt: sequence 1, timestamp 30 s on.
    out.push(...jb.push({ sequenceNumber: 1, timestamp: 240_000, payload: new Uint8Array(SAMPLES).fill(7) }, 30_000).released);
    const audio = concat(out);
    expect(audio.length).toBe(240_000 + SAMPLES);
    expect(jb.stats).toMatchObject({ silenceSamples: 240_000 - SAMPLES, discontinuities: 0, lost: 0 });
  });

  it('does not fill a timestamp jump that cannot be elapsed time (sender clock reset)', () => {
    const jb = mulawBuffer({ maxGapMs: 1000 });
    const out = [...jb.push(packet(0), 0).released];
    out.push(...jb.push({ sequenceNumber: 1, timestamp: 123_456_789, payload: new Uint8Array(SAMPLES).fill(1) }, 20).released);
    out.push(...jb.push({ sequenceNumber: 2, timestamp: 123_456_789 + SAMPLES, payload: new Uint8Array(SAMPLES).fill(2) }, 40).released);
    expect(concat(out)).toEqual(expected(3));
    expect(jb.stats.discontinuities).toBe(1);
  });

  it('trims audio that overlaps what is already placed', () => {
    const jb = mulawBuffer();
    const out = [...jb.push(packet(0), 0).released];
    // Starts 60 samples before the end of packet 0.
    out.push(...jb.push({ sequenceNumber: 1, timestamp: SAMPLES - 60, payload: new Uint8Array(SAMPLES).fill(9) }, 20).released);
    const audio = concat(out);
    expect(audio.length).toBe(2 * SAMPLES - 60);
    expect(jb.stats.overlapSamples).toBe(60);
  });

  it('resynchronises after a sequence jump confirmed by a second packet (RFC 3550 A.1)', () => {
    const jb = mulawBuffer();
    const out = [...jb.push(packet(0), 0).released, ...jb.push(packet(1), 20).released];
    const jumped = (k: number) => ({
      sequenceNumber: 40_000 + k,
      timestamp: 2 * SAMPLES + k * SAMPLES,
      payload: new Uint8Array(SAMPLES).fill(2 + k),
    });
    expect(jb.push(jumped(0), 40).outcome).toBe('out_of_range');
    const r = jb.push(jumped(1), 60);
    expect(r.outcome).toBe('in_order');
    out.push(...r.released, ...jb.push(jumped(2), 80).released);
    // packet 40000 was dropped (as RFC 3550 does), so its slot is silence.
    expect(concat(out)).toEqual(expected(5, new Set([2])));
    expect(jb.stats).toMatchObject({ outOfRange: 1, resyncs: 1 });
    // Old numbering is now far behind: out of range, never placed.
    expect(jb.push(packet(2), 100).outcome).toBe('out_of_range');
  });

  it('refuses a 16-bit payload with an odd byte count without disturbing the stream', () => {
    const jb = new JitterBuffer({ bytesPerSample: 2, silenceByte: 0, clockRateHz: 16000 });
    expect(jb.push({ sequenceNumber: 0, timestamp: 0, payload: new Uint8Array(3) }, 0)).toEqual({ outcome: 'bad_length', released: [] });
    const r = jb.push({ sequenceNumber: 1, timestamp: 0, payload: new Uint8Array(640).fill(1) }, 20);
    expect(r.released[0]!.bytes.length).toBe(640);
    expect(jb.stats.badLength).toBe(1);
  });

  it('places every arriving packet exactly once, whatever the order, loss and duplication (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 120 }),
        fc.integer({ min: 0, max: 0xffff }),
        fc.integer({ min: 0, max: 0xffffffff }),
        fc.infiniteStream(fc.double({ min: 0, max: 1, noNaN: true })),
        (n, seq0, ts0, random) => {
          const r = random[Symbol.iterator]();
          const next = () => r.next().value as number;
          // Drop ~10%, duplicate ~5%, and jitter arrival by up to 60 ms (less than maxDelayMs),
          // so any packet that is sent arrives before its hole is given up.
          const sends: Array<{ k: number; at: number }> = [];
          const dropped = new Set<number>();
          for (let k = 0; k < n; k++) {
            if (k > 0 && k < n - 1 && next() < 0.1) {
              dropped.add(k);
              continue;
            }
            sends.push({ k, at: k * 20 + next() * 60 });
            if (next() < 0.05) sends.push({ k, at: k * 20 + next() * 60 });
          }
          sends.sort((a, b) => a.at - b.at);
          // The first packet to arrive starts the stream; anything earlier would be late.
          const first = sends[0]!.k;
          const jb = mulawBuffer({ maxDelayMs: 200 });
          const out: ReleasedAudio[] = [];
          for (const s of sends) {
            out.push(...jb.poll(s.at));
            out.push(...jb.push(packet(s.k, { seq0, ts0 }), s.at).released);
          }
          out.push(...jb.flush(n * 20 + 1000));
          const audio = concat(out);
          const exp = expected(n, dropped).subarray(first * SAMPLES);
          const st = jb.stats;
          const lateK = new Set(sends.filter((s) => s.k < first).map((s) => s.k));
          if (lateK.size === 0) {
            expect(Buffer.from(audio).equals(Buffer.from(exp)), 'audio placed as sent').toBe(true);
            expect(st.lost).toBe([...dropped].filter((k) => k > first).length);
          }
          expect(st.received).toBe(sends.length);
          expect(st.released + st.duplicate + st.late).toBe(st.received);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('InterarrivalJitter (RFC 3550 A.8)', () => {
  it('is zero when packets arrive exactly on their timestamps', () => {
    const j = new InterarrivalJitter(8000);
    for (let k = 0; k < 50; k++) j.update(k * 20, k * 160);
    expect(j.units).toBe(0);
  });

  it('converges on the mean absolute transit difference with gain 1/16', () => {
    // Alternate 0 and +10 ms of delay: every |D| is 10 ms = 80 units, so J -> 80.
    const j = new InterarrivalJitter(8000);
    for (let k = 0; k < 400; k++) j.update(k * 20 + (k % 2) * 10, k * 160);
    expect(j.units).toBeCloseTo(80, 3);
    expect(j.seconds).toBeCloseTo(0.01, 6);
    // The first step follows the formula exactly: J1 = (80 - 0) / 16.
    const one = new InterarrivalJitter(8000);
    one.update(0, 0);
    one.update(30, 160);
    expect(one.units).toBe(80 / 16);
  });

  it('is not disturbed by the timestamp wrap', () => {
    const j = new InterarrivalJitter(8000);
    for (let k = 0; k < 50; k++) j.update(k * 20, (0xffffff00 + k * 160) >>> 0);
    expect(j.units).toBe(0);
  });
});
