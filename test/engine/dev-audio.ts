// Reads the dev clips in /work/shared/samples/dev: 16 kHz PCM WAV and headerless 8 kHz mu-law.
import { readFileSync } from 'node:fs';
import path from 'node:path';

export const DEV_DIR = process.env.SCRIBED_DEV_SAMPLES ?? '/work/shared/samples/dev';

export interface DevClip {
  id: string;
  wav: string;
  ulaw: string;
  durationSec: number;
  reference: string;
}

export function devManifest(dir = DEV_DIR): DevClip[] {
  return readFileSync(path.join(dir, 'manifest.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as DevClip);
}

/** Parse a RIFF/WAVE file of mono 16-bit PCM; walks the chunks rather than trusting 44 bytes. */
export function readWav(file: string): { rate: number; samples: Int16Array } {
  const buf = readFileSync(file);
  if (buf.toString('ascii', 0, 4) !== 'RIFF' || buf.toString('ascii', 8, 12) !== 'WAVE') {
    throw new Error(`${file}: not a RIFF/WAVE file`);
  }
  let off = 12;
  let rate = 0;
  let channels = 0;
  let bits = 0;
  let format = 0;
  while (off + 8 <= buf.length) {
    const id = buf.toString('ascii', off, off + 4);
    const size = buf.readUInt32LE(off + 4);
    const body = off + 8;
    if (id === 'fmt ') {
      format = buf.readUInt16LE(body);
      channels = buf.readUInt16LE(body + 2);
      rate = buf.readUInt32LE(body + 4);
      bits = buf.readUInt16LE(body + 14);
    } else if (id === 'data') {
      if (format !== 1 || channels !== 1 || bits !== 16) {
        throw new Error(`${file}: need mono 16-bit PCM (format ${format}, ${channels} ch, ${bits} bit)`);
      }
      const len = Math.min(size, buf.length - body) & ~1;
      const samples = new Int16Array(len / 2);
      for (let i = 0; i < samples.length; i++) samples[i] = buf.readInt16LE(body + 2 * i);
      return { rate, samples };
    }
    off = body + size + (size & 1);
  }
  throw new Error(`${file}: no data chunk`);
}

/** G.711 mu-law byte to linear int16 (ITU-T table, computed once). */
const ULAW_TABLE = (() => {
  const t = new Int16Array(256);
  for (let i = 0; i < 256; i++) {
    const u = ~i & 0xff;
    const sign = u & 0x80;
    const exponent = (u >> 4) & 0x07;
    const mantissa = u & 0x0f;
    const magnitude = (((mantissa << 3) + 0x84) << exponent) - 0x84;
    t[i] = sign ? -magnitude : magnitude;
  }
  return t;
})();

export function decodeUlaw(bytes: Uint8Array): Int16Array {
  const out = new Int16Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) out[i] = ULAW_TABLE[bytes[i]!]!;
  return out;
}

export function readUlaw(file: string): { rate: number; samples: Int16Array } {
  return { rate: 8000, samples: decodeUlaw(readFileSync(file)) };
}
