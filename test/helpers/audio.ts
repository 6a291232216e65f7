// Test and bench audio: the repo's sample clips (or another set with the same manifest
// format), read as the encodings a client would send.
import fs from 'node:fs';
import path from 'node:path';
import { decodeMulaw, decodeToPcm16 } from '../../src/core/audio/encodings.js';

export const SAMPLES_DIR = path.resolve(import.meta.dirname, '../../samples');

export interface Clip {
  id: string;
  reference: string;
  durationSec: number;
  /** 16 kHz PCM s16le bytes (WAV data chunk). */
  pcm16k: Buffer;
  /** 8 kHz G.711 mu-law bytes. */
  mulaw8k: Buffer;
  wavFile: string;
  ulawFile: string;
}

/** The team's development set when it is beside the checkout (or SCRIBED_DEV_SAMPLES),
 * else the same clips in samples/. Benchmarks report which one they read. */
export function devSetDir(): string {
  const candidates = [process.env.SCRIBED_DEV_SAMPLES, path.resolve(SAMPLES_DIR, '../../shared/samples/dev')];
  for (const dir of candidates) if (dir && fs.existsSync(path.join(dir, 'manifest.jsonl'))) return dir;
  return SAMPLES_DIR;
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
      wavFile: path.join(dir, m.wav),
      ulawFile: path.join(dir, m.ulaw),
    };
  });
}

/** 16 kHz PCM of a clip as samples. */
export function pcmSamples(clip: Clip): Int16Array {
  return decodeToPcm16('pcm_s16le_16000', clip.pcm16k);
}

/** 8 kHz mu-law of a clip decoded to samples. */
export function mulawSamples(clip: Clip): Int16Array {
  return decodeMulaw(clip.mulaw8k);
}

/** Split payload bytes into chunks of `samples` samples each. */
export function chunks(bytes: Buffer, bytesPerSample: number, samples: number): Buffer[] {
  const step = bytesPerSample * samples;
  const out: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += step) out.push(bytes.subarray(i, Math.min(bytes.length, i + step)));
  return out;
}
