// Small real audio files for upload tests, made with sox and ffmpeg (Debian packages the
// set-up script installs). Each call makes distinct content (the tone frequency varies), so
// content-addressed storage does not fold test files together unless a test wants it.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from './service.js';

const dir = tempDir('scribed-audio-');
let n = 0;

function tone(ext: string, args: string[]): Buffer {
  const out = path.join(dir, `t${++n}.${ext}`);
  const freq = 300 + n * 7;
  execFileSync('ffmpeg', ['-v', 'error', '-f', 'lavfi', '-i', `sine=frequency=${freq}:duration=0.4`, ...args, out]);
  return fs.readFileSync(out);
}

export const makeWav = () => tone('wav', ['-ar', '16000', '-ac', '1']);
export const makeMp3 = () => tone('mp3', ['-c:a', 'libmp3lame', '-b:a', '32k']);
export const makeM4a = () => tone('m4a', ['-c:a', 'aac', '-b:a', '32k']);
export const makeMp4Video = () => {
  const out = path.join(dir, `v${++n}.mp4`);
  execFileSync('ffmpeg', [
    '-v',
    'error',
    '-f',
    'lavfi',
    '-i',
    'testsrc=duration=0.4:size=64x64:rate=10',
    '-f',
    'lavfi',
    '-i',
    'sine=duration=0.4',
    '-c:a',
    'aac',
    '-shortest',
    out,
  ]);
  return fs.readFileSync(out);
};

/** A valid 16 kHz mono 16-bit WAV of exactly `bytes` bytes (header included). */
export function wavOfSize(bytes: number): Buffer {
  const data = bytes - 44;
  if (data < 2 || data % 2 !== 0) throw new RangeError('wav data must be a positive even size');
  const buf = Buffer.alloc(bytes);
  buf.write('RIFF', 0, 'ascii');
  buf.writeUInt32LE(bytes - 8, 4);
  buf.write('WAVE', 8, 'ascii');
  buf.write('fmt ', 12, 'ascii');
  buf.writeUInt32LE(16, 16);
  buf.writeUInt16LE(1, 20); // PCM
  buf.writeUInt16LE(1, 22); // mono
  buf.writeUInt32LE(16000, 24);
  buf.writeUInt32LE(32000, 28);
  buf.writeUInt16LE(2, 32);
  buf.writeUInt16LE(16, 34);
  buf.write('data', 36, 'ascii');
  buf.writeUInt32LE(data, 40);
  for (let i = 44; i + 1 < bytes; i += 2) buf.writeInt16LE(Math.round(3000 * Math.sin((i / 2) * 0.05)), i);
  return buf;
}
