// The encodings table and the decoders: little-endian PCM read byte by byte, G.711 mu-law
// and A-law tables built from the standard, and encoders that invert them.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  INPUT_ENCODINGS,
  INPUT_ENCODING_NAMES,
  alawToPcm16,
  decodeAlaw,
  decodeToPcm16,
  encodeAlaw,
  encodeMulaw,
  encodePcm16le,
  isInputEncodingName,
  mulawToPcm16,
  pcm16ToMulaw,
} from '../../src/core/audio/encodings.js';

const ALL_BYTES = Uint8Array.from({ length: 256 }, (_, i) => i);

describe('encodings table', () => {
  it('lists exactly the spec encodings with rate, sample size and profile', () => {
    expect(Object.values(INPUT_ENCODINGS)).toEqual([
      { name: 'pcm_s16le_8000', sampleRateHz: 8000, bytesPerSample: 2, profile: 'telephony' },
      { name: 'pcm_s16le_16000', sampleRateHz: 16000, bytesPerSample: 2, profile: 'wideband' },
      { name: 'pcm_s16le_22050', sampleRateHz: 22050, bytesPerSample: 2, profile: 'wideband' },
      { name: 'pcm_s16le_24000', sampleRateHz: 24000, bytesPerSample: 2, profile: 'wideband' },
      { name: 'pcm_s16le_44100', sampleRateHz: 44100, bytesPerSample: 2, profile: 'wideband' },
      { name: 'pcm_s16le_48000', sampleRateHz: 48000, bytesPerSample: 2, profile: 'wideband' },
      { name: 'mulaw_8000', sampleRateHz: 8000, bytesPerSample: 1, profile: 'telephony' },
      { name: 'alaw_8000', sampleRateHz: 8000, bytesPerSample: 1, profile: 'telephony' },
    ]);
    expect(Object.keys(INPUT_ENCODINGS)).toEqual([...INPUT_ENCODING_NAMES]);
  });

  it('recognises only table names, not inherited properties', () => {
    expect(isInputEncodingName('mulaw_8000')).toBe(true);
    expect(isInputEncodingName('pcm_s16le_11025')).toBe(false);
    expect(isInputEncodingName('toString')).toBe(false);
    expect(isInputEncodingName(16000)).toBe(false);
  });
});

describe('PCM 16-bit little-endian', () => {
  it('reads low byte first and sign-extends', () => {
    const pcm = decodeToPcm16('pcm_s16le_16000', Uint8Array.from([0x01, 0x80, 0xff, 0x7f, 0xff, 0xff, 0x00, 0x00, 0x34, 0x12]));
    expect([...pcm]).toEqual([-32767, 32767, -1, 0, 0x1234]);
  });

  it('agrees with an explicit little-endian DataView read, at any byte offset', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.nat(7), (raw, pad) => {
        const even = raw.subarray(0, raw.length & ~1);
        const host = new Uint8Array(pad + even.length);
        host.set(even, pad);
        const view = host.subarray(pad); // unaligned view into a larger buffer
        const pcm = decodeToPcm16('pcm_s16le_48000', view);
        const dv = new DataView(even.buffer, even.byteOffset, even.byteLength);
        expect([...pcm]).toEqual(Array.from({ length: even.length / 2 }, (_, i) => dv.getInt16(2 * i, true)));
      }),
    );
  });

  it('round-trips through encodePcm16le', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -32768, max: 32767 })), (values) => {
        const samples = Int16Array.from(values);
        expect([...decodeToPcm16('pcm_s16le_8000', encodePcm16le(samples))]).toEqual(values);
      }),
    );
  });
});

describe('G.711 mu-law', () => {
  it('decodes reference values', () => {
    expect(mulawToPcm16(0xff)).toBe(0);
    expect(mulawToPcm16(0x7f)).toBe(0);
    expect(mulawToPcm16(0x80)).toBe(32124);
    expect(mulawToPcm16(0x00)).toBe(-32124);
    expect(mulawToPcm16(0xfe)).toBe(8);
    expect(mulawToPcm16(0x7e)).toBe(-8);
    expect(mulawToPcm16(0xef)).toBe(132); // ~0xef = 0x10: exponent 1, mantissa 0: (132 << 1) - 132
  });

  it('decodes a whole buffer via decodeToPcm16', () => {
    expect([...decodeToPcm16('mulaw_8000', Uint8Array.from([0xff, 0x80, 0x00]))]).toEqual([0, 32124, -32124]);
  });

  it('encodes every decoded level back to the same byte (except negative zero)', () => {
    for (const b of ALL_BYTES) {
      const expected = b === 0x7f ? 0xff : b;
      expect(pcm16ToMulaw(mulawToPcm16(b)), `byte 0x${b.toString(16)}`).toBe(expected);
    }
  });

  it('quantises any sample to within half a step, monotonically', () => {
    fc.assert(
      fc.property(fc.integer({ min: -32768, max: 32767 }), fc.integer({ min: -32768, max: 32767 }), (x, y) => {
        const dx = mulawToPcm16(pcm16ToMulaw(x));
        const mag = Math.min(Math.abs(x), 32635);
        const clipped = Math.sign(x) * mag;
        expect(Math.abs(dx - clipped)).toBeLessThanOrEqual((mag + 132) / 32 + 1);
        if (x <= y) expect(dx).toBeLessThanOrEqual(mulawToPcm16(pcm16ToMulaw(y)));
      }),
    );
  });

  it('encodeMulaw maps buffers sample by sample', () => {
    expect([...encodeMulaw(Int16Array.from([0, 32767, -32768, 8]))]).toEqual([0xff, 0x80, 0x00, 0xfe]);
  });
});

describe('G.711 A-law', () => {
  it('decodes reference values', () => {
    expect(alawToPcm16(0xd5)).toBe(8);
    expect(alawToPcm16(0x55)).toBe(-8);
    expect(alawToPcm16(0xaa)).toBe(32256);
    expect(alawToPcm16(0x2a)).toBe(-32256);
  });

  it('is a bijection between bytes and decoded levels', () => {
    const levels = decodeAlaw(ALL_BYTES);
    expect(new Set(levels).size).toBe(256);
    expect([...encodeAlaw(levels)]).toEqual([...ALL_BYTES]);
  });

  it('quantises monotonically and within a step', () => {
    fc.assert(
      fc.property(fc.integer({ min: -32768, max: 32767 }), fc.integer({ min: -32768, max: 32767 }), (x, y) => {
        const dx = decodeAlaw(encodeAlaw(Int16Array.of(x)))[0]!;
        expect(Math.abs(dx - x)).toBeLessThanOrEqual(Math.max(16, Math.abs(x) / 16) + 1);
        if (x <= y) expect(dx).toBeLessThanOrEqual(decodeAlaw(encodeAlaw(Int16Array.of(y)))[0]!);
      }),
    );
  });
});
