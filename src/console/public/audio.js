// Audio for the console's capture path, pure (no DOM, no Web Audio): used inside the
// AudioWorklet (capture-worklet.js) and by the tests in Node.
//
// Resampler: band-limited interpolation (a Blackman-windowed sinc, evaluated at each output
// sample's fractional position from a table of 512 phases). Going down it low-passes at 95% of
// the new Nyquist frequency, so a 48 kHz microphone becomes 8 kHz telephone audio without
// aliasing; going up it interpolates. Streaming: push() blocks of any size, flush() at the end.

const PHASES = 512;

export class Resampler {
  /** @param {number} inRate @param {number} outRate */
  constructor(inRate, outRate) {
    if (!(inRate > 0 && outRate > 0)) throw new RangeError('sample rates must be positive');
    this.inRate = inRate;
    this.outRate = outRate;
    this.step = inRate / outRate;
    // Cut-off in cycles per input sample.
    const fc = 0.5 * Math.min(1, outRate / inRate) * 0.95;
    // Half-width in input samples: sixteen zero crossings of the sinc each side, for a
    // transition band narrow enough that what would alias is 40 dB down.
    this.half = Math.max(8, Math.ceil(16 / (2 * fc)));
    const taps = 2 * this.half;
    this.table = new Float32Array(PHASES * taps);
    for (let p = 0; p < PHASES; p++) {
      const frac = p / PHASES;
      let sum = 0;
      for (let j = 0; j < taps; j++) {
        const x = j - this.half + 1 - frac; // distance from the output position
        const s = x === 0 ? 1 : Math.sin(2 * Math.PI * fc * x) / (2 * Math.PI * fc * x);
        const w = 0.42 + 0.5 * Math.cos((Math.PI * x) / this.half) + 0.08 * Math.cos((2 * Math.PI * x) / this.half);
        const v = Math.abs(x) >= this.half ? 0 : 2 * fc * s * w;
        this.table[p * taps + j] = v;
        sum += v;
      }
      // Unity gain at DC for every phase.
      for (let j = 0; j < taps; j++) this.table[p * taps + j] /= sum;
    }
    // Input history; buf[0] is input sample `base` (starts with `half` zeros before sample 0).
    this.buf = new Float32Array(4096);
    this.len = this.half;
    this.base = -this.half;
    this.t = 0; // input position of the next output sample
    this.received = 0; // input samples pushed
    this.limit = Infinity; // after flush(): no output past the last input sample
  }

  /** @param {Float32Array} input @returns {Float32Array} */
  push(input) {
    if (this.len + input.length > this.buf.length) {
      const next = new Float32Array(Math.max(this.buf.length * 2, this.len + input.length));
      next.set(this.buf.subarray(0, this.len));
      this.buf = next;
    }
    this.buf.set(input, this.len);
    this.len += input.length;
    if (this.limit === Infinity) this.received += input.length;
    return this.drain();
  }

  /** The tail: the last input samples' outputs (zeros after the end). */
  flush() {
    this.limit = this.received;
    return this.push(new Float32Array(this.half + Math.ceil(this.step) + 1));
  }

  drain() {
    const taps = 2 * this.half;
    const end = this.base + this.len; // first input sample we do not have
    const outs = [];
    while (Math.floor(this.t) + this.half + 1 < end && this.t < this.limit) {
      const pos = Math.round(this.t * PHASES);
      const i = Math.floor(pos / PHASES);
      const phase = pos - i * PHASES;
      const first = i - this.half + 1 - this.base;
      const row = phase * taps;
      let acc = 0;
      for (let j = 0; j < taps; j++) acc += this.buf[first + j] * this.table[row + j];
      outs.push(acc);
      this.t += this.step;
    }
    // Drop what no later output needs.
    const keepFrom = Math.floor(this.t) - this.half + 1 - this.base;
    if (keepFrom > 0) {
      this.buf.copyWithin(0, keepFrom, this.len);
      this.len -= keepFrom;
      this.base += keepFrom;
    }
    return Float32Array.from(outs);
  }
}

/** A float sample (-1..1) as a 16-bit sample, clipped. */
export function toPcm16(x) {
  const v = Math.round(x * 32767);
  return v > 32767 ? 32767 : v < -32768 ? -32768 : v;
}

/** G.711 mu-law encoding of a 16-bit sample (ITU-T G.711, with the usual 0x84 bias). */
export function pcm16ToMulaw(sample) {
  const BIAS = 0x84;
  const CLIP = 32635;
  let sign = 0;
  let s = sample;
  if (s < 0) {
    sign = 0x80;
    s = -s;
  }
  if (s > CLIP) s = CLIP;
  s += BIAS;
  let exponent = 7;
  for (let mask = 0x4000; (s & mask) === 0 && exponent > 0; mask >>= 1) exponent--;
  const mantissa = (s >> (exponent + 3)) & 0x0f;
  return ~(sign | (exponent << 4) | mantissa) & 0xff;
}

/** Bytes per sample of a session encoding (docs/protocol.md, Audio frames). */
export function bytesPerSample(encoding) {
  return encoding === 'mulaw_8000' ? 1 : 2;
}

/** Float samples as the payload of the session's encoding: mu-law bytes, or PCM s16le. */
export function encodeSamples(encoding, samples) {
  if (encoding === 'mulaw_8000') {
    const out = new Uint8Array(samples.length);
    for (let i = 0; i < samples.length; i++) out[i] = pcm16ToMulaw(toPcm16(samples[i]));
    return out;
  }
  const out = new Uint8Array(samples.length * 2);
  const view = new DataView(out.buffer);
  for (let i = 0; i < samples.length; i++) view.setInt16(i * 2, toPcm16(samples[i]), true);
  return out;
}

/** The rate of an encoding name: `mulaw_8000`, `pcm_s16le_16000`, ... */
export function rateOf(encoding) {
  const m = /_(\d+)$/.exec(String(encoding));
  if (!m) throw new RangeError(`unknown encoding ${encoding}`);
  return Number(m[1]);
}
