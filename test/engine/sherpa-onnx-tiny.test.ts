// The sherpa-onnx backend driving a real (tiny, meaningless) streaming transducer built by
// scripts/make-tiny-transducer.py: the addon loads it, streams real speech through it, and the
// backend turns its tokens into partials, finals and word times. Plumbing, not text.
import { beforeAll, describe, expect, it } from 'vitest';
import { createBackend, tokensToWords } from '../../src/engine/backends/sherpa-onnx.js';
import type { BackendWord, DecoderBackend } from '../../src/engine/types.js';
import { loadClips, pcmSamples } from '../helpers/audio.js';
import { tinyTransducerDir } from '../helpers/tiny-transducer.js';

const FRAME = 640; // one encoder output frame of 40 ms at 16 kHz
const clip = loadClips().find((c) => c.id === 'librivox-0880')!;
const samples = pcmSamples(clip);
let modelDir: string;

beforeAll(() => {
  modelDir = tinyTransducerDir();
});

function open(): DecoderBackend {
  return createBackend({ engine: 'sherpa-onnx', profile: 'wideband', modelDir });
}

/** Feed `audio` in pieces of `step` samples; the partials seen, in order, without repeats. */
function feed(backend: DecoderBackend, audio: Int16Array, step: number): string[] {
  const partials: string[] = [];
  for (let i = 0; i < audio.length; i += step) {
    const p = backend.process(audio.subarray(i, i + step));
    if (p !== '' && p !== partials.at(-1)) partials.push(p);
  }
  return partials;
}

function expectSaneWords(words: BackendWord[], audioSamples: number): void {
  let previousStart = 0;
  for (const w of words) {
    expect(w.word).toMatch(/^[a-z]+$/);
    expect(w.startSample).toBeGreaterThanOrEqual(previousStart);
    expect(w.endSample).toBeGreaterThan(w.startSample);
    expect(w.confidence).toBeNull();
    previousStart = w.startSample;
  }
  // The last token lies in the audio (the tail padding is silence); its word ends a frame on.
  expect(words.at(-1)!.startSample).toBeLessThan(audioSamples);
  expect(words.at(-1)!.endSample).toBeLessThanOrEqual(audioSamples + FRAME);
}

describe('sherpa-onnx backend: tokens as the addon returns them', () => {
  it('a token whose word mark sherpa-onnx turned into a space starts a word', () => {
    // sherpa-onnx's symbol table hands "\u2581HE" back as " HE"; without this every final
    // was one long word.
    const words = tokensToWords([' HE', ' WA', 'S', ' NOT'], [0.12, 0.4, 0.48, 0.8]);
    expect(words.map((w) => w.word)).toEqual(['he', 'was', 'not']);
    expect(words.map((w) => w.startSample)).toEqual([1920, 6400, 12800]);
    expect(words[1]!.endSample).toBe(12800);
  });
});

describe('sherpa-onnx backend: a real transducer (the tiny test model)', () => {
  it('loads it, gives growing partials on speech, and a final whose words are timed inside the audio', () => {
    const backend = open();
    try {
      expect(backend.engineRate).toBe(16_000);
      expect((backend as { notices?: readonly string[] }).notices?.[0]).toContain(`encoder.onnx from ${modelDir}`);
      const partials = feed(backend, samples, 320);
      expect(partials.length).toBeGreaterThan(2);
      // Greedy search only appends tokens: each partial extends the one before.
      for (let i = 1; i < partials.length; i++) expect(partials[i]!.startsWith(partials[i - 1]!)).toBe(true);
      const final = backend.endUtterance();
      expect(final.words.length).toBeGreaterThan(2);
      expect(final.words.map((w) => w.word).join(' ')).toBe(final.text);
      expect(final.text.startsWith(partials.at(-1)!)).toBe(true);
      expectSaneWords(final.words, samples.length);
    } finally {
      backend.destroy();
    }
  });

  it('silence gives no partial and an empty final', () => {
    const backend = open();
    try {
      expect(feed(backend, new Int16Array(32_000), 320)).toEqual([]);
      expect(backend.endUtterance()).toEqual({ text: '', words: [] });
    } finally {
      backend.destroy();
    }
  });

  it('decodes the same whatever the frame size, and each utterance starts afresh (times from zero, state reset)', () => {
    const backend = open();
    try {
      feed(backend, samples, 320);
      const first = backend.endUtterance();
      feed(backend, samples, 1600);
      const second = backend.endUtterance();
      expect(second).toEqual(first);
      // An utterance that starts with a second of silence: its times count from the
      // utterance's start, so its words come a second later. (Not the same words: the fbank
      // frame at the seam differs, and one early token changes the decoder's context after.)
      feed(backend, new Int16Array(16_000), 800);
      feed(backend, samples, 800);
      const shifted = backend.endUtterance();
      expect(shifted.words[0]!.startSample).toBeGreaterThanOrEqual(16_000);
      expect(shifted.words.at(-1)!.startSample).toBe(first.words.at(-1)!.startSample + 16_000);
      expectSaneWords(shifted.words, 16_000 + samples.length);
      expect(backend.endUtterance().text).toBe('');
    } finally {
      backend.destroy();
    }
  });
});
