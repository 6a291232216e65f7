// What raw input bytes really are: a container header at the start of what a client says is
// raw audio (a WAV piped as mu-law, an MP3 on stdin), and whether the first seconds of audio
// look like sound in the declared encoding (mu-law bytes read as 16-bit PCM are loud noise
// with half the samples at full scale; PCM read as mu-law is noise with a share of samples at
// the mu-law extremes). Without these a wrong --encoding gives a few garbage words or an
// empty transcript and exit 0. Pure: no I/O; `scribed stream` (src/client/inputs.ts,
// src/cli/stream.ts) runs it on stdin and raw files. docs/ingest.md, "Wrong audio".
import { INPUT_ENCODINGS, INPUT_ENCODING_NAMES, decodeToPcm16, type InputEncodingName } from './encodings.js';

// ------------------------------------------------------------------ container sniffing

/** The most header bytes read before the audio must start: a WAV whose data chunk is not
 * found within this is refused rather than buffered without bound. */
export const MAX_HEAD_BYTES = 1 << 20;

export type WavSampleFormat = 'pcm' | 'float' | 'alaw' | 'mulaw' | 'other';

export interface WavFormat {
  /** WAVE format tag (1 PCM, 3 float, 6 A-law, 7 mu-law), the sub-format's for EXTENSIBLE. */
  formatTag: number;
  sampleFormat: WavSampleFormat;
  channels: number;
  sampleRateHz: number;
  bitsPerSample: number;
}

export type SniffResult =
  /** Not decided yet: more bytes could still make it a container. */
  | { kind: 'need-more' }
  /** No header: raw audio. */
  | { kind: 'raw' }
  /** A RIFF/WAVE file: its audio is `dataBytes` bytes from `dataOffset` (null: to the end of
   * the input, for a WAV written to a pipe whose sizes were never filled in). */
  | { kind: 'wav'; format: WavFormat; dataOffset: number; dataBytes: number | null }
  /** A RIFF/WAVE header that cannot be read (no fmt chunk, no data chunk in reach). */
  | { kind: 'bad-wav'; reason: string }
  /** Another container or compressed format. */
  | { kind: 'container'; name: string };

const ascii = (b: Uint8Array, from: number, to: number) => String.fromCharCode(...b.subarray(from, to));
const u16 = (b: Uint8Array, o: number) => b[o]! | (b[o + 1]! << 8);
const u32 = (b: Uint8Array, o: number) => (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24)) >>> 0;

/** Signatures at offset 0 (or `at`). Four ASCII bytes cannot plausibly open real raw audio
 * by chance before a client's first word: a hit is the container. */
const MAGICS: Array<{ bytes: string; at?: number; name: string }> = [
  { bytes: 'OggS', name: 'an Ogg stream (Opus or Vorbis)' },
  { bytes: 'fLaC', name: 'a FLAC file' },
  { bytes: 'ID3', name: 'an MP3 file (ID3 tag)' },
  { bytes: 'ftyp', at: 4, name: 'an MP4/M4A file' },
  { bytes: 'caff', name: 'a CAF file' },
  { bytes: 'RF64', name: 'an RF64 (large WAV) file' },
  { bytes: '#!AMR', name: 'an AMR file' },
  { bytes: '.snd', name: 'a Sun/NeXT .au file' },
  { bytes: '\x1a\x45\xdf\xa3', name: 'a WebM/Matroska file' },
  { bytes: 'wvpk', name: 'a WavPack file' },
  { bytes: 'MAC ', name: "a Monkey's Audio file" },
];

/** Decide what `head` (the first bytes of the input) is. `atEnd`: the input has no more
 * bytes, so what cannot be decided is raw. */
export function sniffAudioHead(head: Uint8Array, atEnd: boolean): SniffResult {
  const more: SniffResult = atEnd ? { kind: 'raw' } : { kind: 'need-more' };
  let undecided = false;
  for (const m of MAGICS) {
    const at = m.at ?? 0;
    const have = Math.min(head.length - at, m.bytes.length);
    if (have < 0) {
      undecided = true;
      continue;
    }
    if (ascii(head, at, at + have) !== m.bytes.slice(0, have)) continue;
    if (have === m.bytes.length) return { kind: 'container', name: m.name };
    undecided = true;
  }
  if ('FORM'.startsWith(ascii(head, 0, Math.min(4, head.length)))) {
    if (head.length < 12) return more;
    const form = ascii(head, 8, 12);
    if (form === 'AIFF' || form === 'AIFC') return { kind: 'container', name: 'an AIFF file' };
  }
  const riff = 'RIFF'.slice(0, Math.min(4, head.length));
  if (ascii(head, 0, riff.length) === riff) {
    if (head.length < 12) return more;
    if (ascii(head, 8, 12) === 'WAVE') return parseWav(head, atEnd);
    return { kind: 'container', name: `a RIFF ${JSON.stringify(ascii(head, 8, 12))} file` };
  }
  const frames = frameSyncAt(head, atEnd);
  if (frames !== 'no') return frames === 'need-more' ? more : { kind: 'container', name: frames };
  return undecided ? more : { kind: 'raw' };
}

/** The RIFF chunks of a WAVE file up to its data chunk. */
function parseWav(head: Uint8Array, atEnd: boolean): SniffResult {
  let format: WavFormat | null = null;
  let off = 12;
  for (;;) {
    if (off + 8 > head.length) {
      if (off >= MAX_HEAD_BYTES) return { kind: 'bad-wav', reason: `no data chunk in its first ${MAX_HEAD_BYTES} bytes` };
      return atEnd ? { kind: 'bad-wav', reason: 'it ends before its data chunk' } : { kind: 'need-more' };
    }
    const id = ascii(head, off, off + 4);
    const size = u32(head, off + 4);
    if (id === 'data') {
      if (!format) return { kind: 'bad-wav', reason: 'its data chunk comes before a fmt chunk' };
      const dataOffset = off + 8;
      // Writers to a pipe cannot go back to fill in sizes: 0 and 0xFFFFFFFF (ffmpeg, sox) mean
      // "to the end". A real size is honoured, so chunks after the audio are not played.
      const dataBytes = size === 0 || size === 0xffffffff ? null : size;
      return { kind: 'wav', format, dataOffset, dataBytes };
    }
    if (id === 'fmt ') {
      if (off + 8 + Math.min(size, 40) > head.length)
        return atEnd ? { kind: 'bad-wav', reason: 'its fmt chunk is cut short' } : { kind: 'need-more' };
      if (size < 16) return { kind: 'bad-wav', reason: `its fmt chunk has ${size} bytes` };
      const f = off + 8;
      let formatTag = u16(head, f);
      // WAVE_FORMAT_EXTENSIBLE: the real format is the first two bytes of the sub-format GUID.
      if (formatTag === 0xfffe && size >= 40) formatTag = u16(head, f + 24);
      format = {
        formatTag,
        sampleFormat: formatTag === 1 ? 'pcm' : formatTag === 3 ? 'float' : formatTag === 6 ? 'alaw' : formatTag === 7 ? 'mulaw' : 'other',
        channels: u16(head, f + 2),
        sampleRateHz: u32(head, f + 4),
        bitsPerSample: u16(head, f + 14),
      };
    }
    if (size > MAX_HEAD_BYTES) return { kind: 'bad-wav', reason: `a ${JSON.stringify(id)} chunk of ${size} bytes before its audio` };
    off += 8 + size + (size % 2); // chunks are padded to an even size
  }
}

const MPEG_BITRATES_KBPS: Record<string, number[]> = {
  // [version 1 | 2/2.5][layer 1 | 2 | 3], index 1-14
  '1-1': [32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448],
  '1-2': [32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384],
  '1-3': [32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
  '2-1': [32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256],
  '2-2': [8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
  '2-3': [8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
};
const MPEG_RATES = [
  [44100, 48000, 32000], // MPEG 1
  [22050, 24000, 16000], // MPEG 2
  [11025, 12000, 8000], // MPEG 2.5
];

/** The byte length of the MPEG audio frame whose header is at `o`, or 0 when it is not one. */
function mpegFrameLength(b: Uint8Array, o: number): number {
  if (b[o] !== 0xff || (b[o + 1]! & 0xe0) !== 0xe0) return 0;
  const versionBits = (b[o + 1]! >> 3) & 3; // 0: 2.5, 1: reserved, 2: 2, 3: 1
  const layerBits = (b[o + 1]! >> 1) & 3; // 0: reserved, 1: III, 2: II, 3: I
  const bitrateIndex = b[o + 2]! >> 4;
  const rateIndex = (b[o + 2]! >> 2) & 3;
  if (versionBits === 1 || layerBits === 0 || bitrateIndex === 0 || bitrateIndex === 15 || rateIndex === 3) return 0;
  const layer = 4 - layerBits;
  const v1 = versionBits === 3;
  const kbps = MPEG_BITRATES_KBPS[`${v1 ? 1 : 2}-${layer}`]![bitrateIndex - 1]!;
  const rate = MPEG_RATES[v1 ? 0 : versionBits === 2 ? 1 : 2]![rateIndex]!;
  const padding = (b[o + 2]! >> 1) & 1;
  if (layer === 1) return (Math.floor((12 * kbps * 1000) / rate) + padding) * 4;
  const perFrame = layer === 3 && !v1 ? 72 : 144;
  return Math.floor((perFrame * kbps * 1000) / rate) + padding;
}

/** The byte length of the ADTS (AAC) frame whose header is at `o`, or 0. */
function adtsFrameLength(b: Uint8Array, o: number): number {
  if (b[o] !== 0xff || (b[o + 1]! & 0xf6) !== 0xf0) return 0;
  if (((b[o + 2]! >> 2) & 0xf) > 12) return 0; // sampling frequency index
  const length = ((b[o + 3]! & 3) << 11) | (b[o + 4]! << 3) | (b[o + 5]! >> 5);
  return length >= 7 ? length : 0;
}

/** A bare MP3 or AAC stream starts with a frame sync. 0xFF bytes are common in raw audio
 * (mu-law silence, PCM -1), so a sync only counts when a valid header is followed, exactly
 * one frame length later, by another header of the same kind. */
function frameSyncAt(head: Uint8Array, atEnd: boolean): string | 'need-more' | 'no' {
  if (head.length < 1 || head[0] !== 0xff) return 'no';
  if (head.length < 6) return atEnd ? 'no' : 'need-more';
  for (const [frameLength, name] of [
    [mpegFrameLength, 'an MP3 (MPEG audio) stream'],
    [adtsFrameLength, 'an AAC (ADTS) stream'],
  ] as const) {
    const first = frameLength(head, 0);
    if (first === 0) continue;
    if (head.length < first + 6) return atEnd ? 'no' : 'need-more';
    if (frameLength(head, first) > 0) return name;
  }
  return 'no';
}

// ------------------------------------------------------------------ what to do with a head

/** The session encoding a WAV file's data chunk already is, or null. */
export function wavSessionEncoding(format: WavFormat): InputEncodingName | null {
  if (format.channels !== 1) return null;
  if (format.sampleFormat === 'mulaw' && format.bitsPerSample === 8 && format.sampleRateHz === 8000) return 'mulaw_8000';
  if (format.sampleFormat === 'pcm' && format.bitsPerSample === 16) {
    const name = `pcm_s16le_${format.sampleRateHz}`;
    return (INPUT_ENCODING_NAMES as readonly string[]).includes(name) ? (name as InputEncodingName) : null;
  }
  return null;
}

export function describeWavFormat(format: WavFormat): string {
  const kind =
    format.sampleFormat === 'pcm'
      ? `${format.bitsPerSample}-bit PCM`
      : format.sampleFormat === 'float'
        ? `${format.bitsPerSample}-bit float`
        : format.sampleFormat === 'mulaw'
          ? 'G.711 mu-law'
          : format.sampleFormat === 'alaw'
            ? 'G.711 A-law'
            : `format ${format.formatTag}`;
  return `${kind}, ${format.channels === 1 ? 'mono' : `${format.channels} channels`}, ${format.sampleRateHz} Hz`;
}

/** The ffmpeg command that turns any audio into raw bytes of `encoding` (stdin to stdout). */
export function ffmpegDecodeCommand(encoding: InputEncodingName): string {
  const enc = INPUT_ENCODINGS[encoding];
  return `ffmpeg -loglevel error -i pipe:0 -f ${encoding === 'alaw_8000' ? 'alaw' : enc.bytesPerSample === 1 ? 'mulaw' : 's16le'} -ar ${enc.sampleRateHz} -ac 1 pipe:1`;
}

export type HeadDecision =
  | { action: 'raw' }
  /** Skip `dataOffset` bytes; then pass `dataBytes` (null: all the rest). */
  | { action: 'strip-wav'; dataOffset: number; dataBytes: number | null; format: WavFormat }
  | { action: 'refuse'; message: string };

/** What `scribed stream` does with a sniffed head given the declared encoding. `source` is
 * how the input is named in messages ('stdin' or the file's path). */
export function decideHead(sniff: Exclude<SniffResult, { kind: 'need-more' }>, encoding: InputEncodingName, source: string): HeadDecision {
  const what = source === 'stdin' ? 'stdin' : source;
  const decode =
    source === 'stdin'
      ? `decode it to raw ${encoding} on the way (\`... | ${ffmpegDecodeCommand(encoding)} | scribed stream --input - --encoding ${encoding} ...\`), or save it to a file and pass --input FILE (scribed stream decodes files with ffmpeg)`
      : `give it its real extension (.wav, .mp3, ...) so scribed stream decodes it with ffmpeg, or convert it: \`ffmpeg -loglevel error -i ${source} ${ffmpegDecodeCommand(
          encoding,
        )
          .split(' -i pipe:0 ')[1]!
          .replace(/ pipe:1$/, '')} OUT.raw\``;
  switch (sniff.kind) {
    case 'raw':
      return { action: 'raw' };
    case 'container':
      return { action: 'refuse', message: `${what} holds ${sniff.name}, not raw ${encoding} audio: ${decode}` };
    case 'bad-wav':
      return { action: 'refuse', message: `${what} starts with a WAV header that cannot be read (${sniff.reason}): ${decode}` };
    case 'wav': {
      const is = wavSessionEncoding(sniff.format);
      if (is === encoding) return { action: 'strip-wav', dataOffset: sniff.dataOffset, dataBytes: sniff.dataBytes, format: sniff.format };
      const desc = describeWavFormat(sniff.format);
      if (is)
        return {
          action: 'refuse',
          message: `${what} is a WAV file of ${desc}, not ${encoding}: run again with --encoding ${is}, or ${decode}`,
        };
      return { action: 'refuse', message: `${what} is a WAV file of ${desc}, which is not a session encoding: ${decode}` };
    }
  }
}

// ------------------------------------------------------------------ plausibility

export interface AudioStats {
  samples: number;
  /** RMS level relative to full scale, dB (-Infinity for all zeros). */
  rmsDbfs: number;
  /** Share of samples at or beyond 99% of full scale. */
  clippedShare: number;
  /** Share of samples at or beyond half of full scale: a few percent at most for speech,
   * about half for mu-law bytes read as 16-bit PCM (the high byte of every sample is a
   * mu-law code, near 0x7F or 0xFF in quiet audio, so every other sample is near +32767). */
  loudShare: number;
  /** Normalised lag-1 autocorrelation of the mean-removed signal: sound sampled at 8 kHz
   * and up is low-pass, so neighbours are alike (speech about 0.6 to 0.99); the noise a
   * wrong decoding makes is not (about 0 or below). 0 for a constant signal. */
  lag1: number;
}

const CLIP_LEVEL = 32767 * 0.99;
const LOUD_LEVEL = 16384;

export function audioStats(samples: Int16Array): AudioStats {
  const n = samples.length;
  if (n === 0) return { samples: 0, rmsDbfs: -Infinity, clippedShare: 0, loudShare: 0, lag1: 0 };
  let sum = 0;
  let sumSq = 0;
  let clipped = 0;
  let loud = 0;
  for (let i = 0; i < n; i++) {
    const s = samples[i]!;
    sum += s;
    sumSq += s * s;
    if (Math.abs(s) >= CLIP_LEVEL) clipped++;
    if (Math.abs(s) >= LOUD_LEVEL) loud++;
  }
  const mean = sum / n;
  let c0 = 0;
  let c1 = 0;
  for (let i = 0; i < n; i++) {
    const d = samples[i]! - mean;
    c0 += d * d;
    if (i > 0) c1 += d * (samples[i - 1]! - mean);
  }
  const rms = Math.sqrt(sumSq / n);
  return {
    samples: n,
    rmsDbfs: rms === 0 ? -Infinity : 20 * Math.log10(rms / 32768),
    clippedShare: clipped / n,
    loudShare: loud / n,
    lag1: c0 === 0 ? 0 : c1 / c0,
  };
}

/** Below this the window is silence for any practical purpose (a muted line, zeros). */
export const SILENCE_DBFS = -70;
/** Sound, judged by its statistics: some level, few full-scale samples, smooth. */
// Measured on the sample clips (docs/ingest.md): read right, RMS -21 to -28 dBFS, loud share
// at most 0.1%, lag-1 0.84 to 0.98; mu-law read as PCM, RMS about -6 dBFS, loud share 39 to
// 48%; PCM read as mu-law, RMS about -5 dBFS, loud share 32 to 40%, lag-1 -0.41 to -0.17.
const looksLikeSound = (s: AudioStats) =>
  s.rmsDbfs > SILENCE_DBFS && s.rmsDbfs < -10 && s.loudShare < 0.05 && s.clippedShare < 0.01 && s.lag1 >= 0.4;
/** What a wrong decoding makes: loud, rough noise, or a large share near full scale. */
const looksLikeNoise = (s: AudioStats) => s.rmsDbfs > -30 && (s.lag1 < 0.2 || s.loudShare >= 0.2 || s.clippedShare >= 0.05);

export type Implausibility =
  | { kind: 'wrong-encoding'; likely: string; message: string; declared: AudioStats; alternative: AudioStats }
  | { kind: 'silence'; message: string; declared: AudioStats }
  | { kind: 'clipping'; message: string; declared: AudioStats };

/** The other reading of the same bytes to compare with: mu-law as 16-bit PCM and back. */
function alternativeReading(encoding: InputEncodingName): { encoding: InputEncodingName; name: string } {
  if (encoding === 'mulaw_8000') return { encoding: 'pcm_s16le_8000', name: '16-bit PCM (--encoding pcm_s16le_RATE at its sample rate)' };
  return { encoding: 'mulaw_8000', name: 'G.711 mu-law (--encoding mulaw_8000)' };
}

/** Judge the first seconds of audio in `encoding`: null when it looks like sound. */
export function judgeAudio(bytes: Uint8Array, encoding: InputEncodingName): Implausibility | null {
  const seconds = bytes.length / INPUT_ENCODINGS[encoding].bytesPerSample / INPUT_ENCODINGS[encoding].sampleRateHz;
  const declared = audioStats(decodeToPcm16(encoding, bytes));
  if (declared.samples === 0) return null;
  const alt = alternativeReading(encoding);
  const alternative = audioStats(decodeToPcm16(alt.encoding, bytes));
  const first = `the first ${seconds.toFixed(1)} s of input`;
  const figures = (s: AudioStats) =>
    `RMS ${Number.isFinite(s.rmsDbfs) ? s.rmsDbfs.toFixed(0) : '-inf'} dBFS, ${(s.loudShare * 100).toFixed(0)}% of samples over half scale, ${(s.clippedShare * 100).toFixed(0)}% clipped`;
  if (looksLikeNoise(declared) && looksLikeSound(alternative)) {
    return {
      kind: 'wrong-encoding',
      likely: alt.encoding,
      declared,
      alternative,
      message: `${first} read as ${encoding} is noise (${figures(declared)}) but reads as sound as ${alt.name}: is --encoding wrong?`,
    };
  }
  if (declared.rmsDbfs <= SILENCE_DBFS) {
    return {
      kind: 'silence',
      declared,
      message: `${first} is silence (${figures(declared)}) in ${encoding}: a muted or wrong input, or a wrong --encoding?`,
    };
  }
  if (declared.clippedShare >= 0.2) {
    return {
      kind: 'clipping',
      declared,
      message: `${first} is mostly at full scale (${figures(declared)}) in ${encoding}: a wrong --encoding, or the wrong input?`,
    };
  }
  return null;
}

/** Collects the first seconds of a stream's audio and judges them once (judgeAudio). */
export class FirstSecondsCheck {
  readonly #parts: Uint8Array[] = [];
  #bytes = 0;
  #judged = false;
  readonly #windowBytes: number;
  readonly #minBytes: number;

  constructor(
    readonly encoding: InputEncodingName,
    seconds = 3,
  ) {
    const bytesPerSecond = INPUT_ENCODINGS[encoding].sampleRateHz * INPUT_ENCODINGS[encoding].bytesPerSample;
    this.#windowBytes = Math.round(seconds * bytesPerSecond);
    // Under a quarter of a second says too little either way.
    this.#minBytes = Math.round(0.25 * bytesPerSecond);
  }

  /** Feed audio in order. Returns the verdict (null: plausible) once, when the window has
   * filled; undefined before and after. */
  add(chunk: Uint8Array): Implausibility | null | undefined {
    if (this.#judged) return undefined;
    const take = chunk.subarray(0, this.#windowBytes - this.#bytes);
    this.#parts.push(take);
    this.#bytes += take.length;
    return this.#bytes >= this.#windowBytes ? this.#judge() : undefined;
  }

  /** At the end of the input: the verdict on what came, if not given yet and there was
   * enough to judge; else undefined. */
  finish(): Implausibility | null | undefined {
    if (this.#judged || this.#bytes < this.#minBytes) return undefined;
    return this.#judge();
  }

  #judge(): Implausibility | null {
    this.#judged = true;
    const all = new Uint8Array(this.#bytes);
    let off = 0;
    for (const p of this.#parts.splice(0)) {
      all.set(p, off);
      off += p.length;
    }
    // Whole samples only.
    return judgeAudio(all.subarray(0, all.length - (all.length % INPUT_ENCODINGS[this.encoding].bytesPerSample)), this.encoding);
  }
}
