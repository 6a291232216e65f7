// Streaming int16 mono resampler on libsamplerate (WASM). State lives across push() calls, so
// chunk boundaries leave no clicks and no sample is dropped: over a whole stream, push()es
// plus flush() return round(totalIn * outRate / inRate) samples.
// CommonJS package whose named exports Node cannot detect: take the module object.
import libsamplerate from '@alexanderolsen/libsamplerate-js';

const { ConverterType, create } = libsamplerate;
type Src = Awaited<ReturnType<typeof create>>;

/** Zeros fed per round when draining the filter at flush(). */
const DRAIN_CHUNK = 1024;

/** libsamplerate's sinc converters. "best" (97% of the lower Nyquist passed, 145 dB stopband)
 * feeds the recognizer: on 8 kHz mu-law the band the narrower "medium" (90%) cuts is worth
 * 5 points of WER on the tuning split of the Asterisk prompts (69.4% -> 64.1%, the same as
 * sox's upsampling, 64.2%), and the decoder searches less on it; it costs about 0.01 CPU s per
 * audio second more (docs/engines.md, "Upsampling telephone audio"). Downsampling (44.1 or
 * 48 kHz to 16 kHz) stays on "medium": its 90% of 8 kHz is above the model's 6.8 kHz filterbank,
 * and "best" would cost 0.090 CPU s per audio second at 48 kHz against 0.037. "medium" is also
 * for the voice activity detector, which only tells speech from silence. */
export type ResamplerQuality = 'best' | 'medium';
const CONVERTER = { best: ConverterType.SRC_SINC_BEST_QUALITY, medium: ConverterType.SRC_SINC_MEDIUM_QUALITY } as const;

export class StreamResampler {
  readonly inRate: number;
  readonly outRate: number;
  private readonly src: Src | null;
  private totalIn = 0;
  private totalOut = 0;
  private scratch = new Float32Array(0);

  private constructor(inRate: number, outRate: number, src: Src | null) {
    this.inRate = inRate;
    this.outRate = outRate;
    this.src = src;
  }

  static async create(inRate: number, outRate: number, quality: ResamplerQuality = outRate > inRate ? 'best' : 'medium'): Promise<StreamResampler> {
    if (!Number.isInteger(inRate) || !Number.isInteger(outRate) || inRate <= 0 || outRate <= 0) {
      throw new RangeError(`StreamResampler: rates must be positive integers (got ${inRate} -> ${outRate})`);
    }
    if (inRate === outRate) return new StreamResampler(inRate, outRate, null);
    const src = await create(1, inRate, outRate, { converterType: CONVERTER[quality] });
    return new StreamResampler(inRate, outRate, src);
  }

  /** True when input and output rates match and samples pass through unchanged. */
  get identity(): boolean {
    return this.src === null;
  }

  push(samples: Int16Array): Int16Array {
    if (this.src === null) return samples;
    if (samples.length === 0) return new Int16Array(0);
    this.totalIn += samples.length;
    const out = this.run(samples);
    this.totalOut += out.length;
    return out;
  }

  /** Drain the filter delay: returns the samples still owed for the input pushed so far. */
  flush(): Int16Array {
    if (this.src === null) return new Int16Array(0);
    const owed = Math.round((this.totalIn * this.outRate) / this.inRate) - this.totalOut;
    const parts: Int16Array[] = [];
    let got = 0;
    const zeros = new Int16Array(DRAIN_CHUNK);
    // The sinc filter's delay is a few hundred samples at most; bound the loop anyway.
    for (let round = 0; got < owed && round < 64; round++) {
      const chunk = this.run(zeros);
      parts.push(chunk);
      got += chunk.length;
    }
    const n = Math.max(0, owed);
    const out = new Int16Array(n);
    let off = 0;
    for (const p of parts) {
      if (off >= n) break;
      const take = Math.min(p.length, n - off);
      out.set(p.subarray(0, take), off);
      off += take;
    }
    this.resetState();
    return out;
  }

  /** Forget all history (a new stream starts). */
  reset(): void {
    if (this.src === null) return;
    this.resetState();
  }

  destroy(): void {
    if (this.src !== null && !this.src.isDestroyed) this.src.destroy();
  }

  private resetState(): void {
    this.totalIn = 0;
    this.totalOut = 0;
    if (this.src !== null) {
      // libsamplerate-js re-initialises its converter (src_delete + src_new) on this setter.
      this.src.inputSampleRate = this.inRate;
    }
  }

  private run(samples: Int16Array): Int16Array {
    const src = this.src as Src;
    if (this.scratch.length < samples.length) this.scratch = new Float32Array(samples.length);
    const f = this.scratch.subarray(0, samples.length);
    for (let i = 0; i < samples.length; i++) f[i] = samples[i]! / 32768;
    const y = src.full(f);
    const out = new Int16Array(y.length);
    for (let i = 0; i < y.length; i++) {
      const v = Math.round(y[i]! * 32768);
      out[i] = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
    }
    return out;
  }
}
