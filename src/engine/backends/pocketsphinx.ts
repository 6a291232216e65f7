// pocketsphinx backend: wraps the native addon (build/Release/scribed_pocketsphinx.node).
// Runs only inside a recognition worker thread; every call here is synchronous.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { createRequire } from 'node:module';
import path from 'node:path';
import { packageRoot } from '../../config.js';
import type { BackendConfig, BackendFactory, BackendWord, DecoderBackend, VocabularyResult } from '../types.js';
import { HINT_WEIGHT, hintArpa, planVocabulary } from '../vocabulary.js';

export const ENGINE_RATE = 16_000;
/** pocketsphinx reports word boundaries in 10 ms frames. */
const FRAMES_PER_SECOND = 100;
export const DEFAULT_MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';
const ADDON_RELATIVE = path.join('build', 'Release', 'scribed_pocketsphinx.node');

interface NativeWord {
  word: string;
  startFrame: number;
  endFrame: number;
  /** Word posterior in [0, 1] from the utterance's lattice (docs/engines.md, "Word
   * confidence"); null when the decoder made no lattice or was built with
   * -scribed_confidence no. */
  prob: number | null;
}
interface NativeDecoder {
  /** Returns undefined when `withHypothesis` is false (no backtrace is made). */
  process(samples: Int16Array, withHypothesis?: boolean): string | undefined;
  endUtterance(): { text: string; words: NativeWord[] };
  resetCmn(): boolean;
  getCmn(): number[] | null;
  setCmn(state: readonly number[]): boolean;
  lookupWord(word: string): string | null;
  addVocabulary(words: Array<{ word: string; phones: string }>, hintLmPath: string, weight: number): number;
  destroy(): void;
}
/** Process-wide counters of the addon's shared language model (docs/engines.md, "Memory per
 * decoder"): every worker thread loads the same library, so these count across threads. */
export interface PocketsphinxSharing {
  /** Language models read from a file to be shared. */
  lmLoads: number;
  /** Shared models held now (one per model file and weights). */
  lmSharedModels: number;
  /** Decoders given a view of a shared model (ever), and those alive now. */
  lmViews: number;
  lmViewsLive: number;
  /** Decoders that read their own model (sharing off, or a vocabulary stream). */
  lmPrivate: number;
  /** Shared models refused by the addon's layout check (then decoders read their own). */
  lmShareRefused: number;
  /** The same for the pronunciation dictionary: dictionaries read from a file to be shared,
   * those held now, decoders given one (ever, and alive now), decoders that read their own
   * (sharing off, language model not shared, or vocabulary hints), and decoders refused by
   * the layout check (they read their own). Absent from an addon build without them. */
  dictLoads?: number;
  dictSharedModels?: number;
  dictUsers?: number;
  dictUsersLive?: number;
  dictPrivate?: number;
  dictShareRefused?: number;
}
interface NativeAddon {
  Decoder: new (options: Record<string, string>) => NativeDecoder;
  stats?: () => PocketsphinxSharing;
}

let addon: NativeAddon | null = null;

export function loadAddon(): NativeAddon {
  if (addon !== null) return addon;
  const tried: string[] = [];
  const candidates: string[] = [];
  candidates.push(path.join(packageRoot(), ADDON_RELATIVE));
  if (process.env.SCRIBED_POCKETSPHINX_ADDON) candidates.unshift(process.env.SCRIBED_POCKETSPHINX_ADDON);
  const require = createRequire(import.meta.url);
  for (const file of candidates) {
    tried.push(file);
    if (!existsSync(file)) continue;
    addon = require(file) as NativeAddon;
    return addon;
  }
  throw new Error(
    `pocketsphinx addon not found; tried: ${tried.join(', ')}. Build it with \`npx node-gyp rebuild\` (or \`npm run build\`).`,
  );
}

/** Fast search settings: one streaming pass, no flat-lexicon second pass, no lattice (ends
 * utterances in well under 0.1 s instead of about 1 s). The HMM cap is 6000, not 3000: on the
 * dev clips 3000 cost 2 words of 71 at 16 kHz and 5 on mu-law on a fresh decoder, 6000 matches
 * the uncapped 30000 there at about 60% of its CPU (bench/engine-rtf.ts). -pl_window 5 is the
 * 5prealpha default, kept explicit.
 * -remove_silence no: the front end's own silence removal shifts word times (ps_seg_frames)
 * by a stream offset that is wrong once a decoder has heard earlier utterances, so every
 * segment after the first on a pooled decoder got word times seconds off. Measured on the dev
 * clips it changes no word (WER 39.4% at 16 kHz, 31.0% mu-law, both ways); silence is left
 * out upstream anyway in segmentCommitMode "vad". */
export const FAST_ARGS: Readonly<Record<string, string>> = {
  '-fwdflat': 'no',
  '-bestpath': 'no',
  '-maxhmmpf': '6000',
  '-pl_window': '5',
  '-remove_silence': 'no',
};

/** The addon's sharing counters, or null for an addon build without them. */
export function pocketsphinxSharing(): PocketsphinxSharing | null {
  const a = loadAddon();
  return typeof a.stats === 'function' ? a.stats() : null;
}

/** Decoders share one language model per process unless SCRIBED_POCKETSPHINX_SHARE_LM=0
 * (for measuring; results are the same either way). */
function shareLanguageModel(): boolean {
  return process.env.SCRIBED_POCKETSPHINX_SHARE_LM !== '0';
}

/** Decoders that share the language model share the pronunciation dictionary too, unless
 * SCRIBED_POCKETSPHINX_SHARE_DICT=0 (same results either way). */
function shareDictionary(): boolean {
  return process.env.SCRIBED_POCKETSPHINX_SHARE_DICT !== '0';
}

export interface PocketsphinxArgs {
  args: Record<string, string>;
  /** Facts the operator should know (e.g. telephony without its generated feat.params). */
  notices: string[];
}

/** The decoder options for a backend config; exported for the bench. */
export function pocketsphinxArgs(config: BackendConfig, extra: Record<string, string> = {}): PocketsphinxArgs {
  const modelDir = config.modelDir ?? DEFAULT_MODEL_DIR;
  const hmm = path.join(modelDir, 'en-us');
  const args: Record<string, string> = {
    '-hmm': hmm,
    '-lm': path.join(modelDir, 'en-us.lm.bin'),
    '-dict': path.join(modelDir, 'cmudict-en-us.dict'),
    '-logfn': '/dev/null',
    '-samprate': String(ENGINE_RATE),
    ...FAST_ARGS,
  };
  const notices: string[] = [];
  if (config.profile === 'telephony') {
    // Measured: the best single switch for mu-law, but it costs accuracy at 16 kHz.
    args['-remove_noise'] = 'no';
    const featParams = config.assetsDir ? path.join(config.assetsDir, 'feat.params') : null;
    if (featParams !== null && existsSync(featParams)) {
      args['-featparams'] = featParams;
    } else {
      notices.push(
        `telephony profile uses the stock wideband feat.params (no ${featParams ?? '<assetsDir>/feat.params'}); ` +
          'run scripts/build-telephony-model.sh for better narrowband accuracy',
      );
    }
  }
  for (const [k, v] of Object.entries(extra)) args[k] = v;
  for (const f of ['-hmm', '-lm', '-dict']) {
    if (!existsSync(args[f]!)) throw new Error(`pocketsphinx model file missing: ${f} ${args[f]}`);
  }
  return { args, notices };
}

export interface PocketsphinxBackend extends DecoderBackend {
  readonly notices: readonly string[];
  /** A new stream starts on this (pooled) decoder: forget the previous stream's channel
   * normalisation so results do not depend on which session used the decoder before. The
   * worker calls this on `open` when a backend has it (not part of DecoderBackend). */
  resetStream(): void;
  /** vocabularyHints: add and boost the hint words (src/engine/vocabulary.ts). Changes the
   * decoder for good: the pool retires it after the stream. */
  setVocabulary(hints: string[]): VocabularyResult;
}

export function createPocketsphinx(config: BackendConfig, extra: Record<string, string> = {}): PocketsphinxBackend {
  const { args, notices } = pocketsphinxArgs(config, extra);
  const { Decoder } = loadAddon();
  // '-scribed_share_lm' and '-scribed_share_dict' are the addon's own options, not pocketsphinx
  // flags (so not in `args`, which the bench also hands to the CLI).
  let decoder: NativeDecoder | null = new Decoder({
    ...args,
    ...(shareLanguageModel() ? {} : { '-scribed_share_lm': 'no' }),
    ...(shareDictionary() ? {} : { '-scribed_share_dict': 'no' }),
  });
  const samplesPerFrame = ENGINE_RATE / FRAMES_PER_SECOND;
  const live = (): NativeDecoder => {
    if (decoder === null) throw new Error('pocketsphinx decoder destroyed');
    return decoder;
  };
  return {
    engineRate: ENGINE_RATE,
    notices,
    process(samples: Int16Array, withPartial = true): string {
      return live().process(samples, withPartial) ?? '';
    },
    endUtterance() {
      const r = live().endUtterance();
      const words: BackendWord[] = r.words.map((w) => ({
        word: w.word,
        startSample: w.startFrame * samplesPerFrame,
        endSample: w.endFrame * samplesPerFrame,
        confidence: w.prob === null ? null : Math.min(1, Math.max(0, w.prob)),
      }));
      return { text: words.map((w) => w.word).join(' '), words };
    },
    resetStream() {
      live().resetCmn();
    },
    getChannelState() {
      return live().getCmn();
    },
    setChannelState(state: readonly number[]) {
      return live().setCmn(state);
    },
    setVocabulary(hints: string[]): VocabularyResult {
      const d = live();
      const plan = planVocabulary(hints, (w) => d.lookupWord(w));
      if (plan.entries.length > 0) {
        const dir = mkdtempSync(path.join(os.tmpdir(), 'scribed-hints-'));
        try {
          const lm = path.join(dir, 'hints.arpa');
          writeFileSync(lm, hintArpa(plan.entries.map((e) => e.word)));
          d.addVocabulary(
            plan.entries.filter((e) => e.phones !== null).map((e) => ({ word: e.word, phones: e.phones! })),
            lm,
            HINT_WEIGHT,
          );
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      }
      return {
        boosted: plan.entries.map((e) => e.word),
        added: plan.entries.filter((e) => e.derived).map((e) => e.word),
        unknown: plan.unknown,
      };
    },
    destroy() {
      if (decoder !== null) {
        decoder.destroy();
        decoder = null;
      }
    },
  };
}

export const createBackend: BackendFactory = (config) => createPocketsphinx(config);
