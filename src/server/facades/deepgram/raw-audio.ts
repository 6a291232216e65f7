// Headerless audio (Deepgram's `encoding` + `sample_rate`) given a WAV header, so the native
// batch path identifies and decodes it by content like any upload. Pure. The header is
// written with zero sizes before the body streams to disk and completed with the real sizes
// after (wavSizes), so the body is never held in memory.
import type { RawEncoding } from './parameters.js';

const FORMAT_TAG: Record<RawEncoding, { tag: number; bits: number }> = {
  linear16: { tag: 1, bits: 16 }, // PCM
  alaw: { tag: 6, bits: 8 }, // ITU G.711 A-law
  mulaw: { tag: 7, bits: 8 }, // ITU G.711 mu-law
};

export const WAV_HEADER_BYTES = 44;

export function wavHeader(encoding: RawEncoding, sampleRate: number, channels: number): Buffer {
  const { tag, bits } = FORMAT_TAG[encoding];
  const blockAlign = (channels * bits) / 8;
  const h = Buffer.alloc(WAV_HEADER_BYTES);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(0, 4); // completed by wavSizes
  h.write('WAVE', 8, 'ascii');
  h.write('fmt ', 12, 'ascii');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(tag, 20);
  h.writeUInt16LE(channels, 22);
  h.writeUInt32LE(sampleRate, 24);
  h.writeUInt32LE(sampleRate * blockAlign, 28);
  h.writeUInt16LE(blockAlign, 32);
  h.writeUInt16LE(bits, 34);
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(0, 40); // completed by wavSizes
  return h;
}

/** The RIFF and data sizes for `dataBytes` of audio: [offset, value] pairs to write. */
export function wavSizes(dataBytes: number): Array<[offset: number, value: number]> {
  return [
    [4, 36 + dataBytes],
    [40, dataBytes],
  ];
}
