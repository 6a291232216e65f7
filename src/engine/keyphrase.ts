// Phrase spotting (docs/analytics.md, "Phrase spotting"): a pocketsphinx decoder in keyphrase
// search (`-kws`), the search bench/phrase-spotting.ts measured, spotting a list of phrases in
// the audio itself instead of transcribing it. Its "words" are the phrases it detected, with
// the frames each one spans. It is a decoder of the pool like any other (it counts against
// maxDecoders and shows in the pool's capacity), opened with StreamRequest.keyphrases; the
// pool retires it after its stream, since its search serves that list only.
//
// Here: the backend (runs inside a recognition worker) and the dictionary check the API asks
// before it takes a phrase to spot (a word without a pronunciation cannot be searched for).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ENGINE_RATE, loadAddon, pocketsphinxArgs } from './backends/pocketsphinx.js';
import type { BackendConfig, BackendFactory, BackendWord, DecoderBackend, Keyphrase } from './types.js';

/** pocketsphinx reports detections in 10 ms frames. */
const SAMPLES_PER_FRAME = ENGINE_RATE / 100;
/** The most engine-rate samples given to the search in one call (100 ms). */
const MAX_PIECE = ENGINE_RATE / 10;
/** The options a keyphrase search takes from scribed's decoder settings: the same acoustic
 * model, dictionary and front end (for telephony, its feat.params), as the bench runs it. */
const KWS_OPTIONS = ['-hmm', '-dict', '-logfn', '-samprate', '-featparams', '-remove_noise'];

/** A phrase as the keyphrase list takes it: lower-case words separated by one space. */
export function keyphraseText(phrase: string): string {
  return phrase.toLowerCase().trim().split(/\s+/).join(' ');
}

/** The `-kws` list file's text: one phrase a line with its detection threshold. */
export function keyphraseList(phrases: readonly Keyphrase[]): string {
  return phrases.map((p) => `${keyphraseText(p.phrase)} /${p.threshold.toExponential()}/`).join('\n') + '\n';
}

export function createKeyphraseBackend(config: BackendConfig, phrases: readonly Keyphrase[]): DecoderBackend {
  if (phrases.length === 0) throw new Error('a keyphrase search needs at least one phrase');
  const { args } = pocketsphinxArgs(config);
  const options = Object.fromEntries(Object.entries(args).filter(([k]) => KWS_OPTIONS.includes(k)));
  // The search reads its list when the decoder is made; the file is not needed after.
  const dir = mkdtempSync(path.join(os.tmpdir(), 'scribed-kws-'));
  let decoder;
  try {
    const list = path.join(dir, 'keyphrases.txt');
    writeFileSync(list, keyphraseList(phrases));
    decoder = new (loadAddon().Decoder)({ ...options, '-kws': list, '-scribed_confidence': 'no' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  let d: typeof decoder | null = decoder;
  const live = () => {
    if (d === null) throw new Error('keyphrase decoder destroyed');
    return d;
  };
  return {
    engineRate: ENGINE_RATE,
    /** The partial is the detections so far in the open utterance ('' while none). */
    process(samples: Int16Array, withPartial = true): string {
      // In pieces: given seconds of audio in one call, the search reported detections at
      // frames past the audio (or none); in pieces of 100 ms it reports them where they are.
      const d = live();
      let partial: string | undefined;
      for (let i = 0; i < samples.length || i === 0; i += MAX_PIECE) {
        const last = i + MAX_PIECE >= samples.length;
        partial = d.process(samples.subarray(i, i + MAX_PIECE), withPartial && last);
        if (last) break;
      }
      return (partial ?? '').trim();
    },
    endUtterance() {
      const r = live().endUtterance();
      const words: BackendWord[] = r.words
        .map((w) => ({
          word: w.word.trim(),
          startSample: w.startFrame * SAMPLES_PER_FRAME,
          endSample: w.endFrame * SAMPLES_PER_FRAME,
          confidence: null,
        }))
        .filter((w) => w.word !== '');
      return { text: words.map((w) => w.word).join(' '), words };
    },
    destroy() {
      if (d !== null) {
        d.destroy();
        d = null;
      }
    },
  };
}

/** The worker's factory for a keyphrase search (pocketsphinx only). */
export const createBackend: BackendFactory = (config) => {
  if (config.engine !== 'pocketsphinx') throw new Error(`the ${config.engine} engine cannot spot phrases`);
  return createKeyphraseBackend(config, config.keyphrases ?? []);
};

const dictionaries = new Map<string, Promise<Set<string>>>();

/** The words a pronunciation dictionary has (alternates, `word(2)`, fold into `word`). */
function dictionaryWords(file: string): Promise<Set<string>> {
  let words = dictionaries.get(file);
  if (!words) {
    words = readFile(file, 'utf8').then((text) => {
      const set = new Set<string>();
      for (const line of text.split('\n')) {
        const w = line.slice(0, line.indexOf(' ')).replace(/\(\d+\)$/, '');
        if (w !== '') set.add(w);
      }
      return set;
    });
    words.catch(() => dictionaries.delete(file));
    dictionaries.set(file, words);
  }
  return words;
}

/** The words of `phrases` the keyphrase search's dictionary lacks (lower-case, each once). */
export async function missingKeyphraseWords(config: BackendConfig, phrases: readonly string[]): Promise<string[]> {
  const known = await dictionaryWords(pocketsphinxArgs(config).args['-dict']!);
  const missing = new Set<string>();
  for (const p of phrases) for (const w of keyphraseText(p).split(' ')) if (w !== '' && !known.has(w)) missing.add(w);
  return [...missing];
}
