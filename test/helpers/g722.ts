// G.722 from an independent implementation, ffmpeg's (libavcodec's encoder and decoder), for the
// tests of our decoder (src/core/audio/g722.ts) and of G.722 streams at the recording server.
import { execFileSync } from 'node:child_process';

/** A WAV file as raw G.722 at 64 kbit/s (one byte per 1/8000 s). */
export function ffmpegG722(wavFile: string): Buffer {
  return execFileSync('ffmpeg', ['-loglevel', 'error', '-i', wavFile, '-ar', '16000', '-ac', '1', '-c:a', 'g722', '-f', 'g722', '-'], {
    maxBuffer: 64 * 1024 * 1024,
  });
}

/** Raw G.722 decoded by ffmpeg: 16-bit samples at 16 kHz. */
export function ffmpegDecodeG722(g722: Buffer): Int16Array {
  const pcm = execFileSync('ffmpeg', ['-loglevel', 'error', '-f', 'g722', '-i', '-', '-f', 's16le', '-ar', '16000', '-'], {
    input: g722,
    maxBuffer: 64 * 1024 * 1024,
  });
  return new Int16Array(pcm.buffer, pcm.byteOffset, pcm.length / 2);
}
