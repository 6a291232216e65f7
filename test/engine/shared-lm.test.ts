// Decoders of one process share one language model (src/engine/pocketsphinx/addon.cc,
// docs/engines.md "Memory per decoder"): each worker thread's decoder scores through its own
// view of the shared model, with its own caches. Shown here: decoders in concurrent worker
// threads on the same audio give exactly the words and times of a lone decoder that reads its
// own model, and the model is read once for all of them (the addon's counters, not RSS).
import { afterAll, describe, expect, it } from 'vitest';
import { pocketsphinxSharing } from '../../src/engine/backends/pocketsphinx.js';
import { createEngine } from '../../src/engine/pool.js';
import type { Engine } from '../../src/engine/types.js';
import { TELEPHONY_ASSETS as ASSETS, transcribeClips as transcribe, type Timed } from '../helpers/decoding.js';

describe('pocketsphinx decoders sharing one language model', () => {
  let engine: Engine | null = null;

  afterAll(async () => {
    await engine?.close();
  });

  it('concurrent decoders in worker threads match a lone decoder with its own model, word for word and time for time', async () => {
    // The reference: one decoder that reads its own language model (sharing off in its worker).
    process.env.SCRIBED_POCKETSPHINX_SHARE_LM = '0';
    let lone: Timed[];
    const privateBefore = pocketsphinxSharing()!.lmPrivate;
    try {
      engine = createEngine({ engine: 'pocketsphinx', maxDecoders: 1, assetsDir: ASSETS });
      const s = await engine.open({ inputRate: 8000, profile: 'telephony' });
      lone = await transcribe(s);
      await s.release();
      await engine.close();
      engine = null;
    } finally {
      delete process.env.SCRIBED_POCKETSPHINX_SHARE_LM;
    }
    expect(pocketsphinxSharing()!.lmPrivate).toBe(privateBefore + 1);
    expect(lone.flat().length).toBeGreaterThan(5);

    const before = pocketsphinxSharing()!;
    expect(before.lmSharedModels).toBe(0);
    engine = createEngine({ engine: 'pocketsphinx', maxDecoders: 4, assetsDir: ASSETS });
    await engine.start(); // a wideband decoder: it shares the same model (same file and weights)
    const streams = await Promise.all([1, 2, 3].map(() => engine!.open({ inputRate: 8000, profile: 'telephony' })));
    const during = pocketsphinxSharing()!;
    // Four decoders, one model read from the file, four views of it alive.
    expect(during.lmLoads - before.lmLoads).toBe(1);
    expect(during.lmSharedModels).toBe(1);
    expect(during.lmViewsLive - before.lmViewsLive).toBe(4);
    expect(during.lmShareRefused).toBe(before.lmShareRefused);
    expect(during.lmPrivate).toBe(before.lmPrivate);

    // The three streams decode the same audio at the same time, each in its own thread.
    const results = await Promise.all(streams.map((s) => transcribe(s)));
    for (const r of results) expect(r).toEqual(lone);
    for (const s of streams) await s.release();
    await engine.close();
    engine = null;

    // Closing every decoder frees the views and then the shared model.
    const after = pocketsphinxSharing()!;
    expect(after.lmViewsLive).toBe(before.lmViewsLive);
    expect(after.lmSharedModels).toBe(0);
  }, 180_000);

  it('a decoder given vocabulary hints reads its own model first (words are never added to the shared one)', async () => {
    engine = createEngine({ engine: 'pocketsphinx', maxDecoders: 2, assetsDir: ASSETS });
    const plain = await engine.open({ inputRate: 8000, profile: 'telephony' });
    const before = pocketsphinxSharing()!;
    const hinted = await engine.open({ inputRate: 8000, profile: 'telephony', vocabularyHints: ['dashwood', 'zorblax'] });
    const after = pocketsphinxSharing()!;
    expect(after.lmPrivate).toBe(before.lmPrivate + 1);
    expect(after.lmSharedModels).toBe(1);
    // The other decoder still decodes through the shared model, unchanged.
    const words = (await transcribe(plain)).flat().map((w) => w[0]);
    expect(words).not.toContain('zorblax');
    expect(words.length).toBeGreaterThan(5);
    await hinted.release();
    await plain.release();
    await engine.close();
    engine = null;
  }, 180_000);
});
