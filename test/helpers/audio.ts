// Test audio: the repo's sample clips, read as the encodings a client would send.
import fs from 'node:fs';
import path from 'node:path';

export const SAMPLES_DIR = path.resolve(import.meta.dirname, '../../samples');
export const DEV_DIR = path.resolve(import.meta.dirname, '../../../shared/samples/dev');

export interface Clip {
  id: string;
  reference: string;
  durationSec: number;
  /** 16 kHz PCM s16le bytes (WAV data chunk). */
  pcm16k: Buffer;
  /** 8 kHz G.711 mu-law bytes. */
  mulaw8k: Buffer;
}

/** The data chunk of a PCM WAV file, found by walking the RIFF chunks. */
export function wavData(file: Buffer): Buffer {
  if (file.toString('ascii', 0, 4) !== 'RIFF' || file.toString('ascii', 8, 12) !== 'WAVE') throw new Error('not a WAV file');
  let off = 12;
  while (off + 8 <= file.length) {
    const id = file.toString('ascii', off, off + 4);
    const size = file.readUInt32LE(off + 4);
    if (id === 'data') return file.subarray(off + 8, off + 8 + size);
    off += 8 + size + (size % 2);
  }
  throw new Error('WAV without a data chunk');
}

export function loadClips(dir = SAMPLES_DIR): Clip[] {
  const lines = fs.readFileSync(path.join(dir, 'manifest.jsonl'), 'utf8').trim().split('\n');
  return lines.map((line) => {
    const m = JSON.parse(line) as { id: string; wav: string; ulaw: string; reference: string; durationSec: number };
    return {
      id: m.id,
      reference: m.reference,
      durationSec: m.durationSec,
      pcm16k: wavData(fs.readFileSync(path.join(dir, m.wav))),
      mulaw8k: fs.readFileSync(path.join(dir, m.ulaw)),
    };
  });
}

/** Split payload bytes into chunks of `samples` samples each. */
export function chunks(bytes: Buffer, bytesPerSample: number, samples: number): Buffer[] {
  const step = bytesPerSample * samples;
  const out: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += step) out.push(bytes.subarray(i, Math.min(bytes.length, i + step)));
  return out;
}
