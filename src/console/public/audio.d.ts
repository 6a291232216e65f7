// Types of audio.js for the TypeScript tests (the page itself is plain JavaScript).
export declare class Resampler {
  constructor(inRate: number, outRate: number);
  readonly half: number;
  push(input: Float32Array): Float32Array;
  flush(): Float32Array;
}
export declare function toPcm16(x: number): number;
export declare function pcm16ToMulaw(sample: number): number;
export declare function bytesPerSample(encoding: string): 1 | 2;
export declare function encodeSamples(encoding: string, samples: Float32Array): Uint8Array;
export declare function rateOf(encoding: string): number;
