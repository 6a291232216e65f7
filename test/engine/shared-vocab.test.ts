// Decoders over the shared dictionary and language model share their search's vocabulary too
// (src/engine/pocketsphinx/addon.cc "One search vocabulary", docs/engines.md "Memory per
// decoder"). Shown here: decoders reading the shared vocabulary, on several threads at once,
// give exactly the words and times of decoders keeping their own; the vocabulary outlives the
// decoder it was taken from; and vocabulary hints give their decoder a private copy, leaving
// the others' unchanged.
import { afterEach, describe, expect, it } from 'vitest';
import { createPocketsphinx, pocketsphinxSharing } from '../../src/engine/backends/pocketsphinx.js';
import { createEngine } from '../../src/engine/pool.js';
import type { Engine } from '../../src/engine/types.js';
import {
  decodeFirstClip as decodeDirect,
  TELEPHONY_ASSETS as ASSETS,
  TELEPHONY_CONFIG as CONFIG,
  transcribeClips as transcribe,
  type Timed,
} from '../helpers/decoding.js';

const vocabStats = () => {
  const s = pocketsphinxSharing()!;
  return { shared: s.vocabShared!, live: s.vocabUsersLive!, refused: s.vocabShareRefused!, copies: s.vocabCopies! };
};

let engine: Engine | null = null;
afterEach(async () => {
  await engine?.close();
  engine = null;
});

describe('pocketsphinx decoders sharing one search vocabulary', () => {
  it('decoders on two threads reading the shared vocabulary match decoders keeping their own, word for word and time for time', async () => {
    expect(pocketsphinxSharing()!.vocabShared).toBeTypeOf('number');
    const before = vocabStats();
    process.env.SCRIBED_POCKETSPHINX_SHARE_VOCAB = '0';
    let own: Timed[];
    try {
      engine = createEngine({ engine: 'pocketsphinx', maxDecoders: 1, threads: 1, assetsDir: ASSETS });
      const s = await engine.open({ inputRate: 8000, profile: 'telephony' });
      // Sharing off: this decoder holds a vocabulary of its own.
      expect(vocabStats()).toEqual(before);
      own = await transcribe(s);
      await s.release();
      await engine.close();
      engine = null;
    } finally {
      delete process.env.SCRIBED_POCKETSPHINX_SHARE_VOCAB;
    }
    expect(own.flat().length).toBeGreaterThan(5);

    engine = createEngine({ engine: 'pocketsphinx', maxDecoders: 4, threads: 2, assetsDir: ASSETS });
    const streams = await Promise.all([1, 2, 3, 4].map(() => engine!.open({ inputRate: 8000, profile: 'telephony', decodeBatchMs: 200 })));
    const during = vocabStats();
    expect(during.shared).toBe(before.shared + 1);
    expect(during.live - before.live).toBe(4);
    expect(during.refused).toBe(before.refused);
    const results = await Promise.all(streams.map((s) => transcribe(s)));
    for (const r of results) expect(r).toEqual(own);
    await Promise.all(streams.map((s) => s.release()));
    await engine.close();
    engine = null;
    // The last decoder frees the vocabulary.
    expect(vocabStats()).toEqual(before);
  }, 180_000);

  it('the vocabulary outlives the decoder it was taken from', () => {
    const first = createPocketsphinx(CONFIG);
    const second = createPocketsphinx(CONFIG);
    let expected: Timed;
    try {
      expect(vocabStats().live).toBe(2);
      expected = decodeDirect(first);
      expect(expected.length).toBeGreaterThan(3);
      first.destroy();
      expect(vocabStats()).toMatchObject({ shared: 1, live: 1, refused: 0 });
      expect(decodeDirect(second)).toEqual(expected);
      // A decoder made now joins the same vocabulary.
      const third = createPocketsphinx(CONFIG);
      try {
        expect(vocabStats().live).toBe(2);
        expect(decodeDirect(third)).toEqual(expected);
      } finally {
        third.destroy();
      }
    } finally {
      second.destroy();
    }
    expect(vocabStats()).toMatchObject({ shared: 0, live: 0, refused: 0 });
  }, 120_000);

  it('vocabulary hints give their decoder a private copy; the others decode as before', () => {
    const plain = createPocketsphinx(CONFIG);
    const hinted = createPocketsphinx(CONFIG);
    try {
      const expected = decodeDirect(plain);
      const before = vocabStats();
      expect(before).toMatchObject({ shared: 1, live: 2, refused: 0 });
      // ps_load_dict() rebuilds the search's vocabulary in place: the hinted decoder must be
      // given a copy of its own first, or it would rebuild the one the plain decoder reads.
      expect(hinted.setVocabulary(['wallfish']).added).toEqual(['wallfish']);
      expect(vocabStats()).toEqual({ ...before, live: 1, copies: before.copies + 1 });
      expect(decodeDirect(hinted).length).toBeGreaterThan(3);
      expect(decodeDirect(plain)).toEqual(expected);
    } finally {
      hinted.destroy();
      plain.destroy();
    }
    expect(vocabStats()).toMatchObject({ shared: 0, live: 0, refused: 0 });
  }, 120_000);
});
