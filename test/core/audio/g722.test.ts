// Our G.722 decoder (src/core/audio/g722.ts) against ffmpeg's, an independent implementation, on
// real speech ffmpeg encoded; the 16 kHz to 8 kHz filter the legs use; the payload decoder.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Decimator, G722Decoder } from '../../../src/core/audio/g722.js';
import { PayloadDecoder } from '../../../src/core/sip/payload-decoder.js';
import { SAMPLES_DIR } from '../../helpers/audio.js';
import { ffmpegDecodeG722, ffmpegG722 } from '../../helpers/g722.js';

function snrDb(reference: Int16Array, test: Int16Array): number {
  let signal = 0;
  let noise = 0;
  for (let i = 0; i < reference.length; i++) {
    signal += reference[i]! ** 2;
    noise += (reference[i]! - test[i]!) ** 2;
  }
  return 10 * Math.log10(signal / Math.max(noise, 1));
}

function tone(hz: number, rate: number, n: number): Int16Array {
  return Int16Array.from({ length: n }, (_v, i) => Math.round(8000 * Math.sin((2 * Math.PI * hz * i) / rate)));
}
const rms = (x: Int16Array) => Math.sqrt(x.reduce((s, v) => s + v * v, 0) / x.length);

describe('G.722 decoder', () => {
  it('decodes real speech as ffmpeg does (SNR between the two decodes over 60 dB), in any packet sizes', () => {
    const g722 = ffmpegG722(path.join(SAMPLES_DIR, 'librivox-0870.wav'));
    const theirs = ffmpegDecodeG722(g722);
    const decoder = new G722Decoder();
    const parts: Int16Array[] = [];
    // 20 ms packets (160 bytes) and odd sizes: the state carries across calls.
    for (let at = 0, n = 0; at < g722.length; n++) {
      const size = n % 3 === 0 ? 160 : n % 3 === 1 ? 7 : 333;
      parts.push(decoder.decode(g722.subarray(at, at + size)));
      at += size;
    }
    const ours = new Int16Array(parts.reduce((s, p) => s + p.length, 0));
    let o = 0;
    for (const p of parts) ours.set(p, (o += p.length) - p.length);
    expect(ours.length).toBe(g722.length * 2);
    expect(theirs.length).toBe(ours.length);
    const snr = snrDb(theirs, ours);
    console.log(`G.722: ${g722.length} bytes of speech, SNR of our decode against ffmpeg's ${snr.toFixed(1)} dB`);
    expect(snr).toBeGreaterThan(60);
    // Not a silent or trivial output: the speech is there.
    expect(rms(ours)).toBeGreaterThan(300);
  });

  it('brings 16 kHz down to 8 kHz: speech band kept, above 4 kHz cut', () => {
    const pass = new Decimator().process(tone(1000, 16000, 3200));
    expect(pass.length).toBe(1600);
    expect(rms(pass.subarray(100)) / rms(tone(1000, 16000, 3200))).toBeGreaterThan(0.9);
    const stop = new Decimator().process(tone(6000, 16000, 3200));
    expect(rms(stop.subarray(100)) / rms(tone(6000, 16000, 3200))).toBeLessThan(0.05);
  });

  it('gives one 8 kHz sample per byte for every codec, and starts G.722 afresh on a codec change', () => {
    const d = new PayloadDecoder();
    expect(d.decode('PCMU', new Uint8Array(160).fill(0xff)).length).toBe(160);
    expect(d.decode('G722', new Uint8Array(160).fill(0xfa)).length).toBe(160);
    expect(d.decode('PCMA', new Uint8Array(160).fill(0xd5)).length).toBe(160);
    const fresh = new PayloadDecoder().decode('G722', new Uint8Array(160).fill(0x5a));
    d.reset();
    expect(d.decode('G722', new Uint8Array(160).fill(0x5a))).toEqual(fresh);
  });
});
