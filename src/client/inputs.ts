// Audio sources for `scribed stream`: stdin (raw audio in the session encoding), files (raw
// .ulaw/.raw/.pcm as they are; wav, mp3, m4a, flac, ... decoded by Debian's ffmpeg through
// prism-media's FFmpeg transcoder into the session encoding) and the microphone (sox or
// arecord through node-record-lpcm16, 16-bit PCM, converted to mu-law when asked).
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { Transform, type Readable } from 'node:stream';
import { INPUT_ENCODINGS, encodeMulaw, decodeToPcm16, type InputEncodingName } from '../core/audio/encodings.js';

const require = createRequire(import.meta.url);

export interface AudioInput {
  /** Bytes in the session encoding. */
  stream: Readable;
  /** A live source cannot wait: when the ring is full it must drop, not block. */
  live: boolean;
  kind: 'stdin' | 'raw-file' | 'ffmpeg' | 'mic';
  /** Stop capturing (microphone) or reading; the stream then ends. */
  stop(): void;
}

/** Extensions read as raw audio already in the session encoding. */
export const RAW_EXTENSIONS = ['.raw', '.ulaw', '.mulaw', '.ul', '.pcm', '.sln', '.s16'];

/** The ffmpeg output arguments for a session encoding. */
export function ffmpegOutputArgs(encoding: InputEncodingName): string[] {
  const enc = INPUT_ENCODINGS[encoding];
  const format = encoding === 'mulaw_8000' ? 'mulaw' : 's16le';
  return ['-f', format, '-ar', String(enc.sampleRateHz), '-ac', '1'];
}

export function openInput(spec: string, encoding: InputEncodingName, opts: { recorder?: string; device?: string } = {}): AudioInput {
  if (spec === '-') return { stream: process.stdin, live: false, kind: 'stdin', stop: () => process.stdin.destroy() };
  if (spec === 'mic') return openMic(encoding, opts);
  if (!fs.existsSync(spec)) throw new Error(`input file not found: ${spec}`);
  if (RAW_EXTENSIONS.includes(path.extname(spec).toLowerCase())) {
    const stream = fs.createReadStream(spec, { highWaterMark: 16 * 1024 });
    return { stream, live: false, kind: 'raw-file', stop: () => stream.destroy() };
  }
  const prism = require('prism-media') as { FFmpeg: new (o: { args: string[] }) => Readable & { process: { kill(s?: string): void } | null } };
  const ff = new prism.FFmpeg({ args: ['-nostdin', '-loglevel', 'error', '-i', path.resolve(spec), '-vn', ...ffmpegOutputArgs(encoding)] });
  return {
    stream: ff,
    live: false,
    kind: 'ffmpeg',
    stop: () => ff.destroy(),
  };
}

function openMic(encoding: InputEncodingName, opts: { recorder?: string; device?: string }): AudioInput {
  const enc = INPUT_ENCODINGS[encoding];
  const recordLib = require('node-record-lpcm16') as {
    record(o: Record<string, unknown>): { stream(): Readable; stop(): void; process: { on(ev: string, fn: (...a: unknown[]) => void): void } };
  };
  const rec = recordLib.record({
    sampleRate: enc.sampleRateHz,
    channels: 1,
    audioType: 'raw',
    recorder: opts.recorder ?? 'sox',
    ...(opts.device ? { device: opts.device } : {}),
  });
  const pcm = rec.stream();
  const stream = encoding === 'mulaw_8000' ? pcm.pipe(pcmToMulaw()) : pcm;
  if (stream !== pcm) pcm.on('error', (err) => stream.emit('error', err));
  return { stream, live: true, kind: 'mic', stop: () => rec.stop() };
}

/** 16-bit PCM to G.711 mu-law, keeping a split sample across chunks. */
export function pcmToMulaw(): Transform {
  let carry: Buffer | null = null;
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      let data = carry ? Buffer.concat([carry, chunk]) : chunk;
      carry = null;
      if (data.length % 2 === 1) {
        carry = Buffer.from(data.subarray(data.length - 1));
        data = data.subarray(0, data.length - 1);
      }
      cb(null, Buffer.from(encodeMulaw(decodeToPcm16('pcm_s16le_8000', data))));
    },
  });
}
