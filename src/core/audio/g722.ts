// G.722 (ITU-T G.722, 7 kHz audio coding within 64 kbit/s) decoding, mode 1 (64 kbit/s: six bits
// of the lower sub-band and two of the higher in each byte), as SBCs send it over RTP (payload
// type 9, RFC 3551 4.5.2: the RTP clock is 8000 Hz although the audio is sampled at 16 kHz, so
// one byte is one clock tick and two samples). Pure.
//
// Written here rather than installed: no maintained npm package decodes G.722 in JavaScript (the
// registry's candidates are native bindings or unmaintained ports; none is in this project's
// dependency lists), and the algorithm is small and fully specified: a sub-band ADPCM decoder
// per band (the standard's blocks INVQBL/INVQAL, LOGSCL/LOGSCH, SCALEL/SCALEH and the adaptive
// predictor, two poles and six zeros) and the 24-tap receive QMF. Checked against ffmpeg's
// independent decoder on real speech (test/core/audio/g722.test.ts).

/** The 6-bit inverse quantizer of the lower band (mode 1), by code. */
const QM6 = [
  -136, -136, -136, -136, -24808, -21904, -19008, -16704, -14984, -13512, -12280, -11192, -10232, -9360, -8576, -7856, -7192, -6576, -6000,
  -5456, -4944, -4464, -4008, -3576, -3168, -2776, -2400, -2032, -1688, -1360, -1040, -728, 24808, 21904, 19008, 16704, 14984, 13512, 12280,
  11192, 10232, 9360, 8576, 7856, 7192, 6576, 6000, 5456, 4944, 4464, 4008, 3576, 3168, 2776, 2400, 2032, 1688, 1360, 1040, 728, 432, 136,
  -432, -136,
];
/** The 4-bit inverse quantizer (the lower band's code without its two least bits), for the
 * predictor and scale adaptation, which every mode shares. */
const QM4 = [0, -20456, -12896, -8968, -6288, -4240, -2584, -1200, 20456, 12896, 8968, 6288, 4240, 2584, 1200, 0];
/** The higher band's 2-bit inverse quantizer. */
const QM2 = [-7408, -1616, 7408, 1616];
/** Log scale factor multipliers: lower band by magnitude of the 4-bit code, higher band by the 2-bit code. */
const WL = [-60, -30, 58, 172, 334, 538, 1198, 3042];
const RL42 = [0, 7, 6, 5, 4, 3, 2, 1, 7, 6, 5, 4, 3, 2, 1, 0];
const WH = [0, -214, 798];
const RH2 = [2, 1, 2, 1];
/** Antilog table of the scale factor: 2^(i/32) in Q11. */
const ILB = [
  2048, 2093, 2139, 2186, 2233, 2282, 2332, 2383, 2435, 2489, 2543, 2599, 2656, 2714, 2774, 2834, 2896, 2960, 3025, 3091, 3158, 3228, 3298,
  3371, 3444, 3520, 3597, 3676, 3756, 3838, 3922, 4008,
];
/** The QMF's coefficients (half of the symmetric 24-tap filter). */
const QMF = [3, -11, 12, 32, -210, 951, 3876, -805, 362, -156, 53, -11];

const clamp16 = (x: number): number => (x > 32767 ? 32767 : x < -32768 ? -32768 : x);
const sign = (x: number): number => (x < 0 ? -1 : 0);

/** One sub-band's ADPCM state: scale factor and the pole-zero predictor. */
class Band {
  /** Log scale factor (NBL/NBH) and scale factor (DETL/DETH). */
  nb = 0;
  det: number;
  /** Predicted signal and its zero-section part. */
  s = 0;
  sz = 0;
  /** Pole coefficients a[1..2], zero coefficients b[1..6]. */
  readonly a = [0, 0, 0];
  readonly b = [0, 0, 0, 0, 0, 0, 0];
  /** Quantized differences d[0..6], reconstructed signals r[0..2], partial signals p[0..2]. */
  readonly d = [0, 0, 0, 0, 0, 0, 0];
  readonly r = [0, 0, 0];
  readonly p = [0, 0, 0];

  constructor(
    det: number,
    private readonly nbMax: number,
    /** 8 for the lower band, 10 for the higher (SCALEL, SCALEH). */
    private readonly shiftBase: number,
  ) {
    this.det = det;
  }

  /** LOGSCL/LOGSCH then SCALEL/SCALEH: the log scale leaks (127/128) and steps by `w`. */
  adaptScale(w: number): void {
    let nb = ((this.nb * 127) >> 7) + w;
    if (nb < 0) nb = 0;
    else if (nb > this.nbMax) nb = this.nbMax;
    this.nb = nb;
    const mant = ILB[(nb >> 6) & 31]!;
    const shift = this.shiftBase - (nb >> 11);
    this.det = (shift < 0 ? mant << -shift : mant >> shift) << 2;
  }

  /** The predictor's update with the quantized difference `dq` (RECONS, PARREC, UPPOL2,
   * UPPOL1, UPZERO, the delays, FILTEP, FILTEZ, PREDIC). */
  adapt(dq: number): void {
    const { a, b, d, r, p } = this;
    d[0] = dq;
    r[0] = clamp16(this.s + dq);
    p[0] = clamp16(this.sz + dq);
    // Second pole coefficient.
    const s0 = sign(p[0]);
    const twoA1 = clamp16(a[1]! * 4);
    let w = s0 === sign(p[1]!) ? -twoA1 : twoA1;
    if (w > 32767) w = 32767;
    let a2 = (s0 === sign(p[2]!) ? 128 : -128) + (w >> 7) + ((a[2]! * 32512) >> 15);
    if (a2 > 12288) a2 = 12288;
    else if (a2 < -12288) a2 = -12288;
    // First pole coefficient, bounded by the second's stability limit.
    let a1 = clamp16((s0 === sign(p[1]!) ? 192 : -192) + ((a[1]! * 32640) >> 15));
    const bound = clamp16(15360 - a2);
    if (a1 > bound) a1 = bound;
    else if (a1 < -bound) a1 = -bound;
    // Zero coefficients: sign-sign adaptation with leakage.
    const step = dq === 0 ? 0 : 128;
    const sd = sign(dq);
    const nb = [0, 0, 0, 0, 0, 0, 0];
    for (let i = 1; i <= 6; i++) nb[i] = clamp16((sign(d[i]!) === sd ? step : -step) + ((b[i]! * 32640) >> 15));
    // Delays.
    for (let i = 6; i >= 1; i--) {
      d[i] = d[i - 1]!;
      b[i] = nb[i]!;
    }
    r[2] = r[1]!;
    r[1] = r[0];
    p[2] = p[1]!;
    p[1] = p[0];
    a[1] = a1;
    a[2] = a2;
    // The prediction of the next sample: poles over r, zeros over d.
    const sp = clamp16(((a[1] * clamp16(r[1] * 2)) >> 15) + ((a[2] * clamp16(r[2] * 2)) >> 15));
    let sz = 0;
    for (let i = 6; i >= 1; i--) sz += (b[i]! * clamp16(d[i]! * 2)) >> 15;
    this.sz = clamp16(sz);
    this.s = clamp16(sp + this.sz);
  }
}

/** A G.722 decoder for one stream (it keeps the ADPCM and QMF state between calls). */
export class G722Decoder {
  private readonly low = new Band(32, 18432, 8);
  private readonly high = new Band(8, 22528, 10);
  /** The receive QMF's delay line, the newest pair last. */
  private readonly x = new Array<number>(24).fill(0);

  /** Bytes (64 kbit/s codewords) to 16-bit samples at 16 kHz, two per byte. */
  decode(bytes: Uint8Array): Int16Array {
    const out = new Int16Array(bytes.length * 2);
    const { low, high, x } = this;
    for (let n = 0; n < bytes.length; n++) {
      const code = bytes[n]!;
      // Lower band: the 6-bit code for the output, its 4-bit truncation for the adaptation.
      const il = code & 0x3f;
      const il4 = il >> 2;
      let rl = low.s + ((low.det * QM6[il]!) >> 15);
      if (rl > 16383) rl = 16383;
      else if (rl < -16384) rl = -16384;
      const dl = (low.det * QM4[il4]!) >> 15;
      low.adaptScale(WL[RL42[il4]!]!);
      low.adapt(dl);
      // Higher band.
      const ih = code >> 6;
      const dh = (high.det * QM2[ih]!) >> 15;
      let rh = high.s + dh;
      if (rh > 16383) rh = 16383;
      else if (rh < -16384) rh = -16384;
      high.adaptScale(WH[RH2[ih]!]!);
      high.adapt(dh);
      // Receive QMF: the two bands back to two samples at 16 kHz.
      for (let i = 0; i < 22; i++) x[i] = x[i + 2]!;
      x[22] = rl + rh;
      x[23] = rl - rh;
      let even = 0;
      let odd = 0;
      for (let i = 0; i < 12; i++) {
        even += x[2 * i]! * QMF[i]!;
        odd += x[2 * i + 1]! * QMF[11 - i]!;
      }
      out[2 * n] = clamp16(odd >> 11);
      out[2 * n + 1] = clamp16(even >> 11);
    }
    return out;
  }
}

/** 16 kHz to 8 kHz for the telephony legs: a 31-tap low-pass (Hamming-windowed sinc, cut at
 * 3.7 kHz) then every second sample. Keeps its history between calls. */
export class Decimator {
  private static readonly TAPS = (() => {
    const n = 31;
    const fc = 3700 / 16000;
    const taps: number[] = [];
    for (let i = 0; i < n; i++) {
      const m = i - (n - 1) / 2;
      const sinc = m === 0 ? 2 * fc : Math.sin(2 * Math.PI * fc * m) / (Math.PI * m);
      taps.push(sinc * (0.54 - 0.46 * Math.cos((2 * Math.PI * i) / (n - 1))));
    }
    const sum = taps.reduce((s, t) => s + t, 0);
    return taps.map((t) => t / sum);
  })();
  private readonly history = new Float64Array(Decimator.TAPS.length);
  private at = 0;
  private phase = 0;

  /** Samples at 16 kHz in, at 8 kHz out. */
  process(input: Int16Array): Int16Array {
    const taps = Decimator.TAPS;
    const len = taps.length;
    const out = new Int16Array(Math.floor((input.length + this.phase) / 2));
    let o = 0;
    for (const sample of input) {
      this.history[this.at] = sample;
      this.at = (this.at + 1) % len;
      if (this.phase === 1) {
        let acc = 0;
        for (let k = 0; k < len; k++) acc += taps[k]! * this.history[(this.at + k) % len]!;
        out[o++] = clamp16(Math.round(acc));
      }
      this.phase ^= 1;
    }
    return out;
  }
}
