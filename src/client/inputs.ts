// Audio sources for `scribed stream`: stdin (raw audio in the session encoding), files (raw
// .ulaw/.raw/.pcm as they are; wav, mp3, m4a, flac, ... decoded by Debian's ffmpeg through
// prism-media's FFmpeg transcoder into the session encoding) and the microphone (sox or
// arecord through node-record-lpcm16, 16-bit PCM, converted to mu-law when asked).
// Stdin and raw files are sniffed first (src/core/audio/sniff.ts): a WAV in the session
// encoding is read past its header, any other container is refused before a session exists.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { PassThrough, Transform, type Readable } from 'node:stream';
import type { ChildProcess } from 'node:child_process';
import { INPUT_ENCODINGS, encodeAlaw, encodeMulaw, decodeToPcm16, type InputEncodingName } from '../core/audio/encodings.js';
import { MAX_HEAD_BYTES, decideHead, sniffAudioHead, type HeadDecision } from '../core/audio/sniff.js';

const require = createRequire(import.meta.url);

export interface AudioInput {
  /** Bytes in the session encoding. */
  stream: Readable;
  /** A live source cannot wait: when the ring is full it must drop, not block. */
  live: boolean;
  kind: 'stdin' | 'raw-file' | 'ffmpeg' | 'mic';
  /** Stop capturing (microphone) or reading: the stream then ends normally (what was read
   * so far is delivered), as at the end of the input; `done` resolves. */
  stop(): void;
  /** Settles once the source finished: rejects when it failed (ffmpeg could not decode,
   * the recorder exited with an error), so a broken input is never a short transcript. */
  done: Promise<void>;
  /** What the input's first bytes are (stdin and raw files; the others are `raw`): settles
   * once they are read, before a session is needed. `refuse` carries the message to show;
   * `strip-wav` says a WAV header (and any chunk after the audio) is being skipped. */
  head: Promise<HeadDecision>;
}

function endOf(stream: Readable): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    stream.once('error', reject);
    stream.once('end', resolve);
    stream.once('close', resolve);
  });
}

/** Extensions read as raw audio already in the session encoding. */
export const RAW_EXTENSIONS = ['.raw', '.ulaw', '.mulaw', '.ul', '.pcm', '.sln', '.s16'];

/** The ffmpeg output arguments for a session encoding: mixed down to mono, or (`channels` 2,
 * `scribed stream --channels 2`) the file's two channels kept, interleaved. */
export function ffmpegOutputArgs(encoding: InputEncodingName, channels: 1 | 2 = 1): string[] {
  const enc = INPUT_ENCODINGS[encoding];
  const format = encoding === 'mulaw_8000' ? 'mulaw' : encoding === 'alaw_8000' ? 'alaw' : 's16le';
  return ['-f', format, '-ar', String(enc.sampleRateHz), '-ac', String(channels)];
}

export function openInput(
  spec: string,
  encoding: InputEncodingName,
  opts: { recorder?: string; device?: string; channels?: 1 | 2 } = {},
): AudioInput {
  const input = open(spec, encoding, opts);
  // Failure is read when the caller awaits `done`, which may be after it happened.
  input.done.catch(() => undefined);
  input.head.catch(() => undefined);
  return input;
}

/** Holds the first bytes of a raw input until sniffAudioHead can tell what they are, then
 * passes the audio: all of it for raw audio; for a WAV in the session encoding, the data
 * chunk only (the header before, and chunks after a data chunk of known size, are dropped);
 * nothing for a refused input (the reader sees an empty input; `decision` says why). */
export class HeadSniffer extends Transform {
  readonly decision: Promise<HeadDecision>;
  #settle!: (d: HeadDecision) => void;
  #fail!: (err: Error) => void;
  #head: Buffer[] = [];
  #decided: HeadDecision | null = null;
  /** Bytes still to skip before the audio, and audio bytes still to pass (null: unbounded). */
  #skip = 0;
  #left: number | null = null;

  constructor(
    private readonly encoding: InputEncodingName,
    private readonly source: string,
  ) {
    super();
    this.decision = new Promise<HeadDecision>((resolve, reject) => {
      this.#settle = resolve;
      this.#fail = reject;
    });
    this.decision.catch(() => undefined);
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    if (this.#decided) {
      this.#pass(chunk);
      return cb();
    }
    this.#head.push(chunk);
    this.#tryDecide(false);
    cb();
  }

  override _flush(cb: (err?: Error | null) => void): void {
    if (!this.#decided) this.#tryDecide(true);
    cb();
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    if (!this.#decided) {
      if (err) this.#fail(err);
      else this.#tryDecide(true);
    }
    cb(err);
  }

  #tryDecide(atEnd: boolean): void {
    const head = this.#head.length === 1 ? this.#head[0]! : Buffer.concat(this.#head);
    let sniff = sniffAudioHead(head, atEnd);
    // Past the bound nothing but a WAV header is still undecided, and parseWav refuses
    // that itself; anything else that long is audio.
    if (sniff.kind === 'need-more') {
      if (head.length < MAX_HEAD_BYTES + 8) return;
      sniff = { kind: 'raw' };
    }
    const decision = decideHead(sniff, this.encoding, this.source);
    this.#decided = decision;
    this.#head = [];
    if (decision.action === 'strip-wav') {
      this.#skip = decision.dataOffset;
      this.#left = decision.dataBytes;
    } else if (decision.action === 'refuse') {
      this.#left = 0;
    }
    this.#settle(decision);
    this.#pass(head);
  }

  #pass(chunk: Buffer): void {
    let data = chunk;
    if (this.#skip > 0) {
      const cut = Math.min(this.#skip, data.length);
      this.#skip -= cut;
      data = data.subarray(cut);
    }
    if (this.#left !== null) {
      data = data.subarray(0, this.#left);
      this.#left -= data.length;
    }
    if (data.length > 0) this.push(data);
  }
}

const settledRaw = (): Promise<HeadDecision> => Promise.resolve({ action: 'raw' });

/** A source read through a PassThrough that stop() can end: the source is unpiped and
 * released, and the reader sees a normal end of input after what it already holds, where
 * destroying the source itself would make `for await` throw ERR_STREAM_PREMATURE_CLOSE
 * (a Ctrl-C would then abort the stream instead of closing the session). */
export function stoppableInput(
  source: Readable,
  kind: 'stdin' | 'raw-file',
  through: PassThrough | HeadSniffer = new PassThrough(),
): AudioInput {
  const stream = through;
  let stopped = false;
  let stop: () => void = () => undefined;
  const done = new Promise<void>((resolve, reject) => {
    source.once('error', (err) => {
      if (stopped) return resolve();
      stream.destroy(err);
      reject(err);
    });
    source.once('end', resolve);
    source.once('close', () => {
      // Closed without an end (destroyed elsewhere): still an end for the reader.
      if (!stream.writableEnded) stream.end();
      resolve();
    });
    stop = () => {
      if (stopped) return;
      stopped = true;
      source.unpipe(stream);
      source.destroy();
      stream.end();
      resolve();
    };
  });
  source.pipe(stream);
  return { stream, live: false, kind, stop, done, head: stream instanceof HeadSniffer ? stream.decision : settledRaw() };
}

function open(spec: string, encoding: InputEncodingName, opts: { recorder?: string; device?: string; channels?: 1 | 2 }): AudioInput {
  if (spec === '-') return stoppableInput(process.stdin, 'stdin', new HeadSniffer(encoding, 'stdin'));
  if (spec === 'mic') return openMic(encoding, opts);
  if (!fs.existsSync(spec)) throw new Error(`input file not found: ${spec}`);
  if (RAW_EXTENSIONS.includes(path.extname(spec).toLowerCase())) {
    return stoppableInput(fs.createReadStream(spec, { highWaterMark: 16 * 1024 }), 'raw-file', new HeadSniffer(encoding, spec));
  }
  const prism = require('prism-media') as { FFmpeg: { create(o: { args: string[] }): ChildProcess } };
  // prism-media finds the ffmpeg binary and spawns the transcoder. Its Duplex wrapper is not
  // used: it shares the child's stdout state and sets it flowing, so output produced before
  // the first read is dropped. The transcoder reads the file itself (-i FILE); its output
  // pipe is read directly, and a failed decode (exit status) fails the input.
  const proc = prism.FFmpeg.create({
    args: ['-nostdin', '-loglevel', 'error', '-i', path.resolve(spec), '-vn', ...ffmpegOutputArgs(encoding, opts.channels ?? 1)],
  });
  // Piped into a PassThrough at once: Node resumes (and so discards) a child's stdout that
  // has no reader when the child exits, and a short file can be decoded before the session
  // is even created. The pipe keeps backpressure, so ffmpeg waits for the reader.
  const out = new PassThrough();
  proc.stdout!.pipe(out);
  let stderr = '';
  proc.stderr?.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-2000)));
  let stopped = false;
  const done = new Promise<void>((resolve, reject) => {
    proc.once('error', reject);
    proc.once('close', (code, signal) => {
      if (code === 0 || stopped) resolve();
      else reject(new Error(`ffmpeg could not decode ${spec} (${code === null ? `signal ${signal}` : `exit ${code}`}): ${stderr.trim()}`));
    });
  });
  return {
    stream: out,
    live: false,
    kind: 'ffmpeg',
    stop: () => {
      stopped = true;
      proc.kill('SIGTERM');
    },
    done,
    head: settledRaw(),
  };
}

function openMic(encoding: InputEncodingName, opts: { recorder?: string; device?: string }): AudioInput {
  const enc = INPUT_ENCODINGS[encoding];
  const recordLib = require('node-record-lpcm16') as {
    record(o: Record<string, unknown>): {
      stream(): Readable;
      stop(): void;
      process: { on(ev: string, fn: (...a: unknown[]) => void): void };
    };
  };
  const rec = recordLib.record({
    sampleRate: enc.sampleRateHz,
    channels: 1,
    audioType: 'raw',
    recorder: opts.recorder ?? 'sox',
    ...(opts.device ? { device: opts.device } : {}),
  });
  const pcm = rec.stream();
  // Read at once (see the ffmpeg case); mu-law sessions get the PCM converted.
  const stream = pcm.pipe(INPUT_ENCODINGS[encoding].bytesPerSample === 1 ? pcmToG711(encoding) : new PassThrough());
  pcm.on('error', (err) => stream.emit('error', err instanceof Error ? err : new Error(String(err))));
  return { stream, live: true, kind: 'mic', stop: () => rec.stop(), done: endOf(stream), head: settledRaw() };
}

/** 16-bit PCM to G.711 mu-law, keeping a split sample across chunks. */
export function pcmToMulaw(): Transform {
  return pcmToG711('mulaw_8000');
}

/** 16-bit PCM to the G.711 law of `encoding` (mu-law or A-law), keeping a split sample. */
export function pcmToG711(encoding: InputEncodingName): Transform {
  const encode = encoding === 'alaw_8000' ? encodeAlaw : encodeMulaw;
  let carry: Buffer | null = null;
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      let data = carry ? Buffer.concat([carry, chunk]) : chunk;
      carry = null;
      if (data.length % 2 === 1) {
        carry = Buffer.from(data.subarray(data.length - 1));
        data = data.subarray(0, data.length - 1);
      }
      cb(null, Buffer.from(encode(decodeToPcm16('pcm_s16le_8000', data))));
    },
  });
}
