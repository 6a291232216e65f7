// Decoders of one process share one pronunciation dictionary and its triphone maps
// (src/engine/pocketsphinx/addon.cc "One pronunciation dictionary", docs/engines.md "Memory per
// decoder"). Shown here: decoders reading the shared dictionary, on several threads at once,
// give exactly the words and times of a decoder that reads its own; the dictionary is read once;
// vocabulary hints never reach it; and a decoder whose layout check fails falls back to a
// dictionary of its own with the same results.
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

const dictStats = () => {
  const s = pocketsphinxSharing()!;
  return {
    loads: s.dictLoads!,
    shared: s.dictSharedModels!,
    live: s.dictUsersLive!,
    priv: s.dictPrivate!,
    refused: s.dictShareRefused!,
  };
};

let engine: Engine | null = null;
afterEach(async () => {
  await engine?.close();
  engine = null;
});

describe('pocketsphinx decoders sharing one dictionary', () => {
  it('decoders on two threads reading the shared dictionary match a decoder reading its own, word for word and time for time', async () => {
    expect(pocketsphinxSharing()!.dictLoads).toBeTypeOf('number');
    process.env.SCRIBED_POCKETSPHINX_SHARE_DICT = '0';
    let own: Timed[];
    const before = dictStats();
    try {
      engine = createEngine({ engine: 'pocketsphinx', maxDecoders: 1, threads: 1, assetsDir: ASSETS });
      const s = await engine.open({ inputRate: 8000, profile: 'telephony' });
      own = await transcribe(s);
      await s.release();
      await engine.close();
      engine = null;
    } finally {
      delete process.env.SCRIBED_POCKETSPHINX_SHARE_DICT;
    }
    expect(dictStats().priv).toBe(before.priv + 1);
    expect(dictStats().shared).toBe(0);
    expect(own.flat().length).toBeGreaterThan(5);

    engine = createEngine({ engine: 'pocketsphinx', maxDecoders: 4, threads: 2, assetsDir: ASSETS });
    const streams = await Promise.all([1, 2, 3, 4].map(() => engine!.open({ inputRate: 8000, profile: 'telephony', decodeBatchMs: 200 })));
    const during = dictStats();
    // Four decoders, one dictionary read from the file.
    expect(during.loads - before.loads).toBe(1);
    expect(during.shared).toBe(1);
    expect(during.live - before.live).toBe(4);
    expect(during.refused).toBe(before.refused);
    const results = await Promise.all(streams.map((s) => transcribe(s)));
    for (const r of results) expect(r).toEqual(own);
    await Promise.all(streams.map((s) => s.release()));
    await engine.close();
    engine = null;
    // Closing every decoder frees the shared dictionary.
    expect(dictStats().live).toBe(before.live);
    expect(dictStats().shared).toBe(0);
  }, 180_000);

  it('vocabulary hints add words to a private dictionary, never to the shared one', () => {
    const plain = createPocketsphinx(CONFIG);
    const hinted = createPocketsphinx(CONFIG);
    try {
      const before = dictStats();
      expect(hinted.setVocabulary(['wallfish']).added).toEqual(['wallfish']);
      const after = dictStats();
      expect(after.priv).toBe(before.priv + 1);
      expect(after.live).toBe(before.live - 1);
      expect(after.shared).toBe(1);
      // A decoder on the shared dictionary still lacks the word: it is derived again.
      const third = createPocketsphinx(CONFIG);
      try {
        expect(third.setVocabulary(['wallfish']).added).toEqual(['wallfish']);
      } finally {
        third.destroy();
      }
      // The hinted decoder decodes with its own dictionary; the plain one is unchanged.
      expect(decodeDirect(hinted).length).toBeGreaterThan(3);
      expect(decodeDirect(plain).map((w) => w[0])).not.toContain('wallfish');
    } finally {
      plain.destroy();
      hinted.destroy();
    }
    expect(dictStats().shared).toBe(0);
  }, 120_000);

  it('a decoder whose layout check fails reads its own dictionary and decodes the same', () => {
    const shared = createPocketsphinx(CONFIG);
    const before = dictStats();
    const refused = createPocketsphinx(CONFIG, { '-scribed_share_dict': 'test-refuse' });
    try {
      const after = dictStats();
      expect(after.refused).toBe(before.refused + 1);
      expect(after.priv).toBe(before.priv + 1);
      expect(after.live).toBe(before.live);
      expect(after.shared).toBe(1);
      const a = decodeDirect(shared);
      expect(a.length).toBeGreaterThan(3);
      expect(decodeDirect(refused)).toEqual(a);
    } finally {
      refused.destroy();
      shared.destroy();
    }
    expect(dictStats().shared).toBe(0);
  }, 120_000);
});
