// sherpa-onnx backend: a streaming zipformer transducer (encoder, decoder, joiner, tokens.txt)
// loaded from a model directory through the sherpa-onnx-node addon.
// Runs only inside a recognition worker thread; every call here is synchronous.
import { closeSync, existsSync, openSync, readSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { ScribedError } from '../../core/errors.js';
import type { BackendConfig, BackendFactory, BackendWord, DecoderBackend } from '../types.js';

export const ENGINE_RATE = 16_000;
/** Zipformer transducers emit one output frame per 4 feature frames of 10 ms. */
const OUTPUT_FRAME_SECONDS = 0.04;
/** Silence appended before closing an utterance so the last chunk reaches the encoder. */
const TAIL_PADDING_SAMPLES = Math.round(0.66 * ENGINE_RATE);
/** SentencePiece marks the start of a word with U+2581; sherpa-onnx's symbol table hands
 * such a token back with the mark replaced by a space (" HE"), so either starts a word. */
const WORD_START = '\u2581';
const startsWord = (token: string): boolean => token.startsWith(WORD_START) || token.startsWith(' ');

// The package ships JavaScript with JSDoc types only; these are the parts used here.
interface SherpaOnlineStream {
  acceptWaveform(obj: { samples: Float32Array; sampleRate: number }): void;
  inputFinished(): void;
}
interface SherpaOnlineResult {
  text: string;
  tokens?: string[];
  timestamps?: number[];
}
interface SherpaOnlineRecognizer {
  createStream(): SherpaOnlineStream;
  isReady(stream: SherpaOnlineStream): boolean;
  decode(stream: SherpaOnlineStream): void;
  reset(stream: SherpaOnlineStream): void;
  getResult(stream: SherpaOnlineStream): SherpaOnlineResult;
}
interface SherpaModule {
  OnlineRecognizer: new (config: Record<string, unknown>) => SherpaOnlineRecognizer;
}

export interface TransducerFiles {
  encoder: string;
  decoder: string;
  joiner: string;
  tokens: string;
}

type Role = 'encoder' | 'decoder' | 'joiner';

/** Pick `<role>*.onnx` in `files`, preferring an int8 variant; null when there is none. */
function pickOnnx(files: string[], role: Role): string | null {
  const candidates = files.filter((f) => f.startsWith(role) && f.endsWith('.onnx')).sort();
  if (candidates.length === 0) return null;
  return candidates.find((f) => f.endsWith('.int8.onnx')) ?? candidates[0]!;
}

function engineError(message: string, cause?: unknown): ScribedError {
  return new ScribedError('ENGINE_FAILED', message, cause === undefined ? undefined : { cause });
}

/** Locate the model files in `modelDir`. Throws an ENGINE_FAILED error naming the directory
 * and every missing file (the recognizer itself only says "Please check your config!"). */
export function findTransducerFiles(modelDir: string | undefined): TransducerFiles {
  if (!modelDir) {
    throw engineError('sherpa-onnx: no model directory given (set --model-dir to a streaming zipformer directory)');
  }
  const dir = path.resolve(modelDir);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw engineError(
      `sherpa-onnx: model directory ${dir} does not exist or is not a directory; install a model with "scribed models pull NAME" or "scribed models install NAME --archive FILE"`,
    );
  }
  const files = readdirSync(dir).filter((f) => {
    try {
      return statSync(path.join(dir, f)).isFile();
    } catch {
      return false;
    }
  });
  const encoder = pickOnnx(files, 'encoder');
  const decoder = pickOnnx(files, 'decoder');
  const joiner = pickOnnx(files, 'joiner');
  const tokens = files.includes('tokens.txt') ? 'tokens.txt' : null;
  const missing: string[] = [];
  if (encoder === null) missing.push('encoder*.onnx');
  if (decoder === null) missing.push('decoder*.onnx');
  if (joiner === null) missing.push('joiner*.onnx');
  if (tokens === null) missing.push('tokens.txt');
  if (missing.length > 0) {
    throw engineError(
      `sherpa-onnx: model directory ${dir} is missing ${missing.join(', ')} (a streaming zipformer transducer needs encoder*.onnx, decoder*.onnx, joiner*.onnx and tokens.txt)`,
    );
  }
  const found: TransducerFiles = {
    encoder: path.join(dir, encoder!),
    decoder: path.join(dir, decoder!),
    joiner: path.join(dir, joiner!),
    tokens: path.join(dir, tokens!),
  };
  const bad = [found.encoder, found.decoder, found.joiner].flatMap((f) => onnxProblem(f) ?? []);
  const tokensBad = tokensProblem(found.tokens);
  if (tokensBad) bad.push(tokensBad);
  if (bad.length > 0) throw engineError(`sherpa-onnx: model directory ${dir} has unusable files: ${bad.join('; ')}`);
  return found;
}

function head(file: string, n: number): Buffer {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(n);
    const got = readSync(fd, buf, 0, n, 0);
    return buf.subarray(0, got);
  } finally {
    closeSync(fd);
  }
}

/** onnxruntime aborts the whole process (an uncaught C++ exception) on a file that is not a
 * model, so screen the usual suspects first: Git LFS pointers, HTML error pages, truncated
 * downloads. A serialized ModelProto starts with field 1 (ir_version, varint): byte 0x08. */
function onnxProblem(file: string): string | null {
  const size = statSync(file).size;
  const start = head(file, 64);
  if (start.toString('latin1').startsWith('version https://git-lfs')) {
    return `${path.basename(file)} is a Git LFS pointer, not the model`;
  }
  if (size < 1024 || start[0] !== 0x08) {
    return `${path.basename(file)} is not an ONNX model (${size} bytes; truncated or wrong download?)`;
  }
  return null;
}

function tokensProblem(file: string): string | null {
  const first = head(file, 256).toString('utf8').split('\n')[0]?.trim() ?? '';
  return /^\S+\s+\d+$/.test(first) ? null : `${path.basename(file)} does not look like a token table ("<token> <id>" per line)`;
}

let sherpa: SherpaModule | null = null;
function loadSherpa(): SherpaModule {
  if (sherpa !== null) return sherpa;
  const require = createRequire(import.meta.url);
  try {
    sherpa = require('sherpa-onnx-node') as SherpaModule;
  } catch (err) {
    throw engineError(`sherpa-onnx: cannot load the sherpa-onnx-node addon: ${(err as Error).message}`, err);
  }
  return sherpa;
}

/** Merge BPE tokens into words. Times are token start times in seconds from the start of the
 * utterance; a word ends where the next one starts, the last one a frame after its last token. */
export function tokensToWords(tokens: readonly string[], timestamps: readonly number[], rate = ENGINE_RATE): BackendWord[] {
  const frame = Math.round(OUTPUT_FRAME_SECONDS * rate);
  const words: { word: string; start: number; last: number }[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const tok = tokens[i]!;
    const t = Math.max(0, Math.round((timestamps[i] ?? 0) * rate));
    const piece = tok.split(WORD_START).join('').trim();
    if (startsWord(tok) || words.length === 0) {
      words.push({ word: piece, start: t, last: t });
    } else {
      const w = words[words.length - 1]!;
      w.word += piece;
      w.last = t;
    }
  }
  const kept = words.filter((w) => w.word !== '');
  return kept.map((w, i) => {
    const next = kept[i + 1];
    const end = next ? Math.max(next.start, w.last) : w.last + frame;
    return { word: w.word.toLowerCase(), startSample: w.start, endSample: Math.max(end, w.start + 1), confidence: null };
  });
}

function toFloat(samples: Int16Array): Float32Array {
  const out = new Float32Array(samples.length);
  for (let i = 0; i < samples.length; i++) out[i] = samples[i]! / 32768;
  return out;
}

class SherpaOnnxBackend implements DecoderBackend {
  readonly engineRate = ENGINE_RATE;
  readonly notices: readonly string[];
  #recognizer: SherpaOnlineRecognizer | null;
  #stream: SherpaOnlineStream | null;

  constructor(files: TransducerFiles, config: BackendConfig) {
    const mod = loadSherpa();
    const notices = [`sherpa-onnx: ${path.basename(files.encoder)} from ${path.dirname(files.encoder)}`];
    if (config.profile === 'telephony') {
      notices.push('sherpa-onnx: telephony audio is decoded with the wideband model after upsampling to 16 kHz');
    }
    this.notices = notices;
    try {
      this.#recognizer = new mod.OnlineRecognizer({
        featConfig: { sampleRate: ENGINE_RATE, featureDim: 80 },
        modelConfig: {
          transducer: { encoder: files.encoder, decoder: files.decoder, joiner: files.joiner },
          tokens: files.tokens,
          numThreads: 1,
          provider: 'cpu',
          debug: 0,
        },
        decodingMethod: 'greedy_search',
        maxActivePaths: 4,
        // Utterances are closed by the session layer, not by the engine's endpointing.
        enableEndpoint: 0,
      });
      this.#stream = this.#recognizer.createStream();
    } catch (err) {
      throw engineError(`sherpa-onnx: cannot load the model in ${path.dirname(files.encoder)}: ${(err as Error).message}`, err);
    }
  }

  #live(): { recognizer: SherpaOnlineRecognizer; stream: SherpaOnlineStream } {
    if (this.#recognizer === null || this.#stream === null) throw engineError('sherpa-onnx: decoder already destroyed');
    return { recognizer: this.#recognizer, stream: this.#stream };
  }

  #decodeReady(recognizer: SherpaOnlineRecognizer, stream: SherpaOnlineStream): void {
    while (recognizer.isReady(stream)) recognizer.decode(stream);
  }

  process(samples: Int16Array, withPartial = true): string {
    const { recognizer, stream } = this.#live();
    if (samples.length > 0) {
      stream.acceptWaveform({ samples: toFloat(samples), sampleRate: ENGINE_RATE });
      this.#decodeReady(recognizer, stream);
    }
    return withPartial ? recognizer.getResult(stream).text.trim().toLowerCase() : '';
  }

  endUtterance(): { text: string; words: BackendWord[] } {
    const { recognizer, stream } = this.#live();
    stream.acceptWaveform({ samples: new Float32Array(TAIL_PADDING_SAMPLES), sampleRate: ENGINE_RATE });
    stream.inputFinished();
    this.#decodeReady(recognizer, stream);
    const result = recognizer.getResult(stream);
    // A stream whose input is finished takes no more audio: the next utterance gets a fresh
    // one (the old one is freed by its finalizer). Encoder state restarts with it, which is
    // what an utterance boundary means here.
    this.#stream = recognizer.createStream();
    const words = tokensToWords(result.tokens ?? [], result.timestamps ?? []);
    const text = words.length > 0 ? words.map((w) => w.word).join(' ') : result.text.trim().toLowerCase();
    return { text, words };
  }

  destroy(): void {
    // The addon frees native handles in its finalizers; dropping the references releases them.
    this.#stream = null;
    this.#recognizer = null;
  }
}

export const createBackend: BackendFactory = (config) => {
  const files = findTransducerFiles(config.modelDir);
  return new SherpaOnnxBackend(files, config);
};
