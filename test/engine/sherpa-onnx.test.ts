// sherpa-onnx backend: model-directory checks (always) and real recognition of a dev clip
// (only when SCRIBED_SHERPA_MODEL_DIR points at an installed streaming zipformer).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { wordErrorRate } from '../../src/core/wer.js';
import { createBackend, findTransducerFiles, tokensToWords } from '../../src/engine/backends/sherpa-onnx.js';
import { loadClips, pcmSamples } from '../helpers/audio.js';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'scribed-sherpa-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Files that pass the pre-load screening (ONNX-like header, token table) without being
 * real models. */
function plausible(file: string): string | Buffer {
  if (file === 'tokens.txt') return '<blk> 0\n<sos/eos> 1\n';
  if (file.endsWith('.onnx')) return Buffer.concat([Buffer.from([0x08, 0x07]), Buffer.alloc(2048, 0x3a)]);
  return 'x';
}

function modelDirWith(name: string, files: string[], content: (f: string) => string | Buffer = plausible): string {
  const dir = path.join(tmp, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const f of files) writeFileSync(path.join(dir, f), content(f));
  return dir;
}

function thrown(fn: () => unknown): Error & { code?: string } {
  try {
    fn();
  } catch (err) {
    return err as Error & { code?: string };
  }
  throw new Error('expected a throw');
}

describe('sherpa-onnx backend: model directory', () => {
  it('refuses a missing directory, naming it, with code ENGINE_FAILED', () => {
    const missing = path.join(tmp, 'no-such-model');
    const err = thrown(() => createBackend({ engine: 'sherpa-onnx', profile: 'wideband', modelDir: missing }));
    expect(err.code).toBe('ENGINE_FAILED');
    expect(err.message).toContain(missing);
    expect(err.message).toMatch(/does not exist/);
  });

  it('refuses a config without a model directory', () => {
    const err = thrown(() => createBackend({ engine: 'sherpa-onnx', profile: 'wideband' }));
    expect(err.code).toBe('ENGINE_FAILED');
    expect(err.message).toMatch(/model directory/);
  });

  it('names each missing file (joiner, tokens) and the directory, before touching the addon', () => {
    const dir = modelDirWith('partial', ['encoder-epoch-99-avg-1.onnx', 'decoder-epoch-99-avg-1.onnx', 'README.md']);
    const err = thrown(() => createBackend({ engine: 'sherpa-onnx', profile: 'wideband', modelDir: dir }));
    expect(err.code).toBe('ENGINE_FAILED');
    expect(err.message).toContain(dir);
    expect(err.message).toContain('is missing joiner*.onnx, tokens.txt (');
    expect(err.message).not.toMatch(/check your config/i);
  });

  it('names every file of an empty directory', () => {
    const dir = modelDirWith('empty', []);
    const err = thrown(() => findTransducerFiles(dir));
    for (const f of ['encoder*.onnx', 'decoder*.onnx', 'joiner*.onnx', 'tokens.txt']) expect(err.message).toContain(f);
  });

  it('prefers int8 variants and falls back to fp32 per file', () => {
    const dir = modelDirWith('mixed', [
      'encoder-epoch-99-avg-1-chunk-16-left-128.onnx',
      'encoder-epoch-99-avg-1-chunk-16-left-128.int8.onnx',
      'decoder-epoch-99-avg-1-chunk-16-left-128.onnx',
      'joiner-epoch-99-avg-1-chunk-16-left-128.int8.onnx',
      'joiner-epoch-99-avg-1-chunk-16-left-128.onnx',
      'tokens.txt',
    ]);
    const files = findTransducerFiles(dir);
    expect(path.basename(files.encoder)).toBe('encoder-epoch-99-avg-1-chunk-16-left-128.int8.onnx');
    expect(path.basename(files.decoder)).toBe('decoder-epoch-99-avg-1-chunk-16-left-128.onnx');
    expect(path.basename(files.joiner)).toBe('joiner-epoch-99-avg-1-chunk-16-left-128.int8.onnx');
    expect(files.tokens).toBe(path.join(dir, 'tokens.txt'));
  });

  // onnxruntime aborts the process on a file that is not a model, so these never reach it.
  it('refuses Git LFS pointers, garbage and a bad token table before loading', () => {
    const dir = modelDirWith('garbage', ['encoder.onnx', 'decoder.onnx', 'joiner.onnx', 'tokens.txt'], (f) =>
      f === 'encoder.onnx'
        ? 'version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 1\n'
        : f === 'tokens.txt'
          ? '<html>Not Found</html>'
          : 'x',
    );
    const err = thrown(() => createBackend({ engine: 'sherpa-onnx', profile: 'wideband', modelDir: dir }));
    expect(err.code).toBe('ENGINE_FAILED');
    expect(err.message).toContain(dir);
    expect(err.message).toMatch(/encoder\.onnx is a Git LFS pointer/);
    expect(err.message).toMatch(/decoder\.onnx is not an ONNX model/);
    expect(err.message).toMatch(/joiner\.onnx is not an ONNX model/);
    expect(err.message).toMatch(/tokens\.txt does not look like a token table/);
  });
});

describe('sherpa-onnx backend: BPE tokens to words', () => {
  it('starts a word at each \u2581 token; ends at the next start, the last a frame after its last token', () => {
    const words = tokensToWords(['\u2581HE', '\u2581WA', 'S', '\u2581NOT'], [0.12, 0.4, 0.48, 0.8]);
    expect(words).toEqual([
      { word: 'he', startSample: 1920, endSample: 6400, confidence: null },
      { word: 'was', startSample: 6400, endSample: 12800, confidence: null },
      { word: 'not', startSample: 12800, endSample: 12800 + 640, confidence: null },
    ]);
  });

  it('handles a bare \u2581 token, a leading continuation token and no tokens', () => {
    expect(tokensToWords([], [])).toEqual([]);
    const words = tokensToWords(['S', '\u2581', 'AN', '\u2581ILL'], [0, 0.2, 0.24, 0.5]);
    expect(words.map((w) => w.word)).toEqual(['s', 'an', 'ill']);
    expect(words[1]!.startSample).toBe(3200);
  });
});

const MODEL_DIR = process.env.SCRIBED_SHERPA_MODEL_DIR;
const clip = loadClips().find((c) => c.id === 'librivox-0880')!;

describe('sherpa-onnx backend: real recognition', () => {
  it.skipIf(!MODEL_DIR)(
    `recognizes ${clip.id}${MODEL_DIR ? '' : ' (skipped: set SCRIBED_SHERPA_MODEL_DIR to an installed streaming zipformer, see "scribed models list")'}`,
    () => {
      const samples = pcmSamples(clip);
      const backend = createBackend({ engine: 'sherpa-onnx', profile: 'wideband', modelDir: MODEL_DIR! });
      try {
        expect(backend.engineRate).toBe(16_000);
        let partials = 0;
        for (let i = 0; i < samples.length; i += 320) {
          if (backend.process(samples.subarray(i, i + 320)) !== '') partials++;
        }
        expect(partials).toBeGreaterThan(0);
        const first = backend.endUtterance();
        const wer = wordErrorRate(clip.reference, first.text).wer;
        expect(wer).toBeLessThan(0.3);
        expect(first.words.map((w) => w.word).join(' ')).toBe(first.text);
        let prevEnd = 0;
        for (const w of first.words) {
          expect(w.startSample).toBeGreaterThanOrEqual(prevEnd);
          expect(w.endSample).toBeGreaterThan(w.startSample);
          expect(w.confidence).toBeNull();
          prevEnd = w.startSample;
        }
        expect(first.words.at(-1)!.endSample).toBeLessThanOrEqual(samples.length + 16_000);

        // The stream is reusable: a second utterance decodes as well, times restarting at zero.
        for (let i = 0; i < samples.length; i += 1600) backend.process(samples.subarray(i, i + 1600));
        const second = backend.endUtterance();
        expect(wordErrorRate(clip.reference, second.text).wer).toBeLessThan(0.3);
        expect(second.words[0]!.startSample).toBeLessThan(samples.length);
        expect(backend.endUtterance().text).toBe('');
      } finally {
        backend.destroy();
      }
    },
  );
});
