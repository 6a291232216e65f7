// FLAC through ffmpeg (Debian's package, already what batch uploads are decoded with): 16-bit
// PCM in, a FLAC file out, and back. Run as child processes with argument arrays (no shell)
// and a time limit. The encoder writes to a file, not a pipe, so ffmpeg can go back and fill
// in the stream header (total samples, MD5) and a seek table: players then know the duration
// and seek without reading the whole file.
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

export const FLAC_CONTENT_TYPE = 'audio/flac';
const TIMEOUT_MS = 120_000;

function ffmpeg(args: string[], input: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn('ffmpeg', ['-hide_banner', '-nostdin', '-loglevel', 'error', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let err = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), TIMEOUT_MS);
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => {
      if (err.length < 4000) err += c.toString();
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(Buffer.concat(out));
      else reject(new Error(`ffmpeg exited with ${code}: ${err.trim()}`));
    });
    // An early exit closes stdin under the write: the exit code says what went wrong.
    child.stdin.on('error', () => undefined);
    child.stdin.end(input);
  });
}

function pcmBytes(pcm: Int16Array): Buffer {
  // s16le: the platforms scribed runs on are little-endian (as the spool's records assume).
  return Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
}

/** `pcm` (interleaved when `channels` is 2) as a FLAC file. */
export async function encodeFlac(pcm: Int16Array, rate: number, channels: 1 | 2): Promise<Buffer> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'scribed-flac-'));
  const file = path.join(dir, 'out.flac');
  try {
    await ffmpeg(
      [
        '-f',
        's16le',
        '-ar',
        String(rate),
        '-ac',
        String(channels),
        '-i',
        'pipe:0',
        '-map_metadata',
        '-1',
        '-fflags',
        '+bitexact',
        '-flags:a',
        '+bitexact',
        '-c:a',
        'flac',
        '-compression_level',
        '5',
        '-y',
        file,
      ],
      pcmBytes(pcm),
    );
    return await fs.readFile(file);
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

/** A FLAC file as mono 16-bit PCM at `rate` (resampled when it was stored at another). */
export async function decodeFlacMono(flac: Buffer, rate: number): Promise<Int16Array> {
  const raw = await ffmpeg(
    ['-f', 'flac', '-i', 'pipe:0', '-f', 's16le', '-acodec', 'pcm_s16le', '-ac', '1', '-ar', String(rate), 'pipe:1'],
    flac,
  );
  const copy = new Int16Array(raw.length >> 1);
  Buffer.from(copy.buffer).set(raw.subarray(0, copy.length * 2));
  return copy;
}
