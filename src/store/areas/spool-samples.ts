// How a shared-spool chunk's samples are stored (spool_chunks.encoding). The session hands the
// spool 16-bit PCM; audio that came in as mu-law (telephony, the call-center case) decodes to
// only the 256 values of the mu-law table, so it is stored as those bytes again, one a sample:
// half the row, half the WAL, and read back to the very same PCM. A chunk with any other value
// (wideband PCM, A-law, a gap's zeros are fine: 0 is a mu-law value) stays PCM.
import { mulawToPcm16 } from '../../core/audio/encodings.js';

export type SpoolEncoding = 'pcm_s16le' | 'mulaw';

/** 16-bit value + 32768 -> its mu-law byte, or -1 for a value no mu-law byte decodes to. */
const MULAW_OF = (() => {
  const t = new Int16Array(65536).fill(-1);
  // 0x7f and 0xff both decode to 0; the first seen is kept (either reads back as 0).
  for (let byte = 0; byte < 256; byte++) if (t[mulawToPcm16(byte) + 32768] === -1) t[mulawToPcm16(byte) + 32768] = byte;
  return t;
})();

/** The stored form of a chunk's 16-bit little-endian PCM. */
export function packSamples(pcm: Buffer): { encoding: SpoolEncoding; bytes: Buffer } {
  const n = pcm.length >> 1;
  const out = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) {
    const code = MULAW_OF[pcm.readInt16LE(i * 2) + 32768]!;
    if (code < 0) return { encoding: 'pcm_s16le', bytes: pcm };
    out[i] = code;
  }
  return { encoding: 'mulaw', bytes: out };
}

/** A stored chunk's samples as 16-bit little-endian PCM again. */
export function unpackSamples(encoding: string, bytes: Buffer): Buffer {
  if (encoding === 'pcm_s16le') return bytes;
  if (encoding !== 'mulaw') throw new Error(`spool chunk in an unknown encoding ${encoding}`);
  const pcm = Buffer.allocUnsafe(bytes.length * 2);
  for (let i = 0; i < bytes.length; i++) pcm.writeInt16LE(mulawToPcm16(bytes[i]!), i * 2);
  return pcm;
}

/** Bytes one sample takes in a stored chunk. */
function bytesPerSample(encoding: string): number {
  return encoding === 'mulaw' ? 1 : 2;
}

/** A stored chunk cut to start at `from` (inside it): its frames from there on (the frame
 * `from` falls in is cut too) and their bytes. */
export function chunkFrom(
  chunk: { startSample: bigint; frames: readonly number[]; encoding: string; bytes: Buffer },
  from: bigint,
): { frames: number[]; bytes: Buffer } {
  let skip = Number(from - chunk.startSample);
  const frames: number[] = [];
  for (const f of chunk.frames) {
    if (skip >= f) {
      skip -= f;
      continue;
    }
    frames.push(f - skip);
    skip = 0;
  }
  const cut = Number(from - chunk.startSample) * bytesPerSample(chunk.encoding);
  return { frames, bytes: chunk.bytes.subarray(cut) };
}
