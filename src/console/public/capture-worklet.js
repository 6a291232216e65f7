// AudioWorklet processor: the capture's mono input at the context's rate (44.1 or 48 kHz),
// resampled to the session's rate and encoded to its encoding here, off the main thread, then
// posted in 20 ms frames (the payload only; console.js adds the header when it knows the
// epoch). 'stop' flushes the resampler and posts what is left, then {done: true}.
/* global AudioWorkletProcessor, registerProcessor, sampleRate */
import { Resampler, encodeSamples } from './audio.js';

class CaptureProcessor extends AudioWorkletProcessor {
  constructor(options) {
    super();
    const { targetRate, encoding } = options.processorOptions;
    this.encoding = encoding;
    this.resampler = new Resampler(sampleRate, targetRate);
    this.frame = new Float32Array(Math.round(targetRate / 50));
    this.filled = 0;
    this.running = true;
    this.port.onmessage = (e) => {
      if (e.data === 'stop' && this.running) {
        this.running = false;
        this.take(this.resampler.flush());
        if (this.filled > 0) this.post(this.frame.subarray(0, this.filled));
        this.filled = 0;
        this.port.postMessage({ done: true });
      }
    };
  }

  post(samples) {
    const bytes = encodeSamples(this.encoding, samples);
    this.port.postMessage({ bytes }, [bytes.buffer]);
  }

  take(samples) {
    let at = 0;
    while (at < samples.length) {
      const n = Math.min(samples.length - at, this.frame.length - this.filled);
      this.frame.set(samples.subarray(at, at + n), this.filled);
      this.filled += n;
      at += n;
      if (this.filled === this.frame.length) {
        this.post(this.frame);
        this.filled = 0;
      }
    }
  }

  process(inputs) {
    if (!this.running) return false;
    const channel = inputs[0]?.[0];
    // No input (not connected yet, or an ended file source): nothing was captured.
    if (channel) this.take(this.resampler.push(channel));
    return true;
  }
}

registerProcessor('scribed-capture', CaptureProcessor);
