// Streaming int16 mono resampler: the addon's libsoxr converter (src/engine/pocketsphinx/
// resampler.cc) with sox's default quality. State lives across push() calls, so chunk
// boundaries leave no clicks and no sample is dropped: over a whole stream, push()es plus
// flush() return round(totalIn * outRate / inRate) samples.
//
// Why this converter (docs/engines.md, "Upsampling telephone audio"): on 8 kHz mu-law the band
// up to 3.7 kHz must reach the recognizer whole (libsamplerate's medium sinc cut it: 5 points of
// WER on the Asterisk prompts); sox's filter keeps it, and it is what the bare-CLI baseline
// hears. In C it costs under 0.001 CPU s per audio second, where libsamplerate's best sinc in
// WASM cost about 0.02 and 1.7 MiB per stream.
import { requireAddon } from './native.js';

interface NativeResampler {
  /** The output the filter can give so far for this input. */
  process(samples: Int16Array): Int16Array;
  /** End of input: the output still held in the filter; the converter is then cleared. */
  drain(): Int16Array;
  /** Forget all history, same rates. */
  clear(): void;
  destroy(): void;
}
type ResamplerClass = new (inRate: number, outRate: number) => NativeResampler;

export class StreamResampler {
  readonly inRate: number;
  readonly outRate: number;
  private readonly native: NativeResampler | null;
  private totalIn = 0;
  private totalOut = 0;

  constructor(inRate: number, outRate: number) {
    if (!Number.isInteger(inRate) || !Number.isInteger(outRate) || inRate <= 0 || outRate <= 0) {
      throw new RangeError(`StreamResampler: rates must be positive integers (got ${inRate} -> ${outRate})`);
    }
    this.inRate = inRate;
    this.outRate = outRate;
    if (inRate === outRate) {
      this.native = null;
    } else {
      const { Resampler } = requireAddon() as { Resampler: ResamplerClass };
      this.native = new Resampler(inRate, outRate);
    }
  }

  /** True when input and output rates match and samples pass through unchanged. */
  get identity(): boolean {
    return this.native === null;
  }

  push(samples: Int16Array): Int16Array {
    if (this.native === null) return samples;
    if (samples.length === 0) return new Int16Array(0);
    this.totalIn += samples.length;
    const out = this.native.process(samples);
    this.totalOut += out.length;
    return out;
  }

  /** Drain the filter delay: returns the samples still owed for the input pushed so far, and
   * starts a fresh stream. */
  flush(): Int16Array {
    if (this.native === null) return new Int16Array(0);
    const owed = Math.max(0, Math.round((this.totalIn * this.outRate) / this.inRate) - this.totalOut);
    const tail = this.native.drain();
    this.totalIn = 0;
    this.totalOut = 0;
    if (tail.length === owed) return tail;
    // soxr rounds the stream's length its own way; the contract is ours.
    const out = new Int16Array(owed);
    out.set(tail.subarray(0, owed));
    return out;
  }

  /** Forget all history (a new stream starts). */
  reset(): void {
    if (this.native === null) return;
    this.native.clear();
    this.totalIn = 0;
    this.totalOut = 0;
  }

  destroy(): void {
    this.native?.destroy();
  }
}
