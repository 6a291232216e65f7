// pocketsphinx backend: wraps the native addon's Decoder (src/engine/native.ts).
// Runs only inside a recognition worker thread; every call here is synchronous.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AudioProfile, BackendConfig, BackendFactory, BackendWord, DecoderBackend, VocabularyResult } from '../types.js';
import { HINT_WEIGHT, hintArpa, planVocabulary } from '../vocabulary.js';
import { requireAddon } from '../native.js';
import { pocketsphinxSharingSettings, shortCmnSetting } from '../environment.js';

export const ENGINE_RATE = 16_000;
/** pocketsphinx reports word boundaries in 10 ms frames. */
const FRAMES_PER_SECOND = 100;
export const DEFAULT_MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';

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
  /** The search's vocabulary over a shared dictionary and model (docs/engines.md, "Memory per
   * decoder"): vocabularies held now, searches reading one now, searches refused by the
   * layout check (they keep their own), private copies made for vocabulary hints (ever).
   * Absent from an addon build without them. */
  vocabShared?: number;
  vocabUsersLive?: number;
  vocabShareRefused?: number;
  vocabCopies?: number;
}
interface NativeAddon {
  Decoder: new (options: Record<string, string>) => NativeDecoder;
  stats?: () => PocketsphinxSharing;
}

export function loadAddon(): NativeAddon {
  return requireAddon() as NativeAddon;
}

/** Fast search settings: one streaming pass and no flat-lexicon second pass (ends utterances
 * in well under 0.1 s instead of about 1 s), then the best path through the word lattice at the
 * end of an utterance (-bestpath yes; partials stay the streaming pass's). The lattice pass was
 * chosen per profile on the tune half of the Asterisk prompts (the CLI, same flags otherwise):
 * 16 kHz 50.0% to 45.1% WER, mu-law 73.5% to 62.1%; the flat-lexicon pass on top gives 16 kHz
 * another 3 points (41.9%) and mu-law none (63.4%) for about a second per utterance end, so it
 * stays off. The word confidences reuse the lattice passes it runs (docs/engines.md, "Search
 * settings" and "Word confidence"). The HMM cap is 6000, not 3000: on the
 * dev clips 3000 cost 2 words of 71 at 16 kHz and 5 on mu-law on a fresh decoder, 6000 matches
 * the uncapped 30000 there at about 60% of its CPU (bench/engine-rtf.ts). -pl_window 5 is the
 * 5prealpha default, kept explicit.
 * -remove_silence no: the front end's own silence removal shifts word times (ps_seg_frames)
 * by a stream offset that is wrong once a decoder has heard earlier utterances, so every
 * segment after the first on a pooled decoder got word times seconds off. Measured on the dev
 * clips it changes no word (WER 39.4% at 16 kHz, 31.0% mu-law, both ways); silence is left
 * out upstream anyway in segmentCommitMode "vad".
 * -pbeam 1e-35 -lpbeam 1e-35 (5prealpha defaults 1e-48 and 1e-40): the phone-transition and
 * last-phone beams, narrowed for density (more streams a core). Chosen on the tune half with
 * bench/search-settings.ts (1052 words each way): mu-law 63.7% to 63.8% WER, 16 kHz 37.2% to
 * 37.7%, at 0.73-0.75x the decoder CPU; on the untouched half mu-law 67.2% to 65.8%, 16 kHz
 * 39.8% to 40.2%. Narrowing -beam instead cost 7 points for the same CPU (docs/engines.md,
 * "Search settings"). */
export const FAST_ARGS: Readonly<Record<string, string>> = {
  '-fwdflat': 'no',
  '-bestpath': 'yes',
  '-maxhmmpf': '6000',
  '-pl_window': '5',
  '-pbeam': '1e-35',
  '-lpbeam': '1e-35',
  '-remove_silence': 'no',
};

/** The addon's sharing counters, or null for an addon build without them. */
export function pocketsphinxSharing(): PocketsphinxSharing | null {
  const a = loadAddon();
  return typeof a.stats === 'function' ? a.stats() : null;
}

/** Whether short first utterances are decoded again with their own CMN (ShortUtteranceCmn):
 * chosen per profile on the tuning half of the Asterisk prompts (bench/accuracy.ts
 * BENCH_SPLITS=tune): wideband 49.0% to 41.5% WER, telephony 73.9% to 76.3%, so wideband
 * only. The telephony profile's -cmninit is already a narrowband mean, the stock wideband one
 * is not. SCRIBED_POCKETSPHINX_SHORT_CMN=0 or 1 overrides it for both (for measuring). */
function shortUtteranceCmn(profile: AudioProfile): boolean {
  return shortCmnSetting() ?? profile === 'wideband';
}

/** Decoders share one language model per process unless SCRIBED_POCKETSPHINX_SHARE_LM=0
 * (for measuring; results are the same either way). */
function shareLanguageModel(): boolean {
  return pocketsphinxSharingSettings().languageModel;
}

/** Decoders that share the language model share the pronunciation dictionary too, unless
 * SCRIBED_POCKETSPHINX_SHARE_DICT=0 (same results either way). */
function shareDictionary(): boolean {
  return pocketsphinxSharingSettings().dictionary;
}

/** Decoders that share both share the search's vocabulary over them too, unless
 * SCRIBED_POCKETSPHINX_SHARE_VOCAB=0 (same results either way). */
function shareVocabulary(): boolean {
  return pocketsphinxSharingSettings().vocabulary;
}

/** An adapted telephony acoustic model's folder inside an assets dir. */
export const ADAPTED_MODEL = 'en-us-adapted';

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
    // An assets dir with an adapted acoustic model (scripts/build-adapted-model.sh builds one
    // into models/telephony-adapted) decodes with it; the default dir has none.
    const adapted = config.assetsDir ? path.join(config.assetsDir, ADAPTED_MODEL) : null;
    if (adapted !== null && existsSync(path.join(adapted, 'sendump'))) args['-hmm'] = adapted;
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

/** Short first utterances (a command said as a call begins is heard badly): live CMN starts a stream from the profile's -cmninit and
 * moves towards the channel's own mean only as frames arrive (the prior weighs 500 frames), so
 * a 2-second command at the start of a call is normalised by a mean that is mostly someone
 * else's. Such an utterance, once ended, is decoded again from a CMN state whose mean is the
 * utterance's own (what batch CMN would use), and that result is the final; the partials stay
 * the streamed pass's, and the live CMN then goes on from where the streamed pass left it.
 * Only for an utterance of at most `MAX_SECONDS` that begins before the stream has heard
 * `FIRST_SECONDS`, so at most about 8 s of a stream's audio is decoded twice
 * (docs/engines.md, "Short first utterances").
 * The utterance's mean comes from the live CMN state before and after the streamed pass
 * ([mean x13, sum x13, nframe], NativeDecoder.getCmn): the pass adds each frame's cepstra to
 * the sum, and the update at its end only rescales when the count passes 800 frames, which
 * 500 + 300 frames of a 3-second utterance do not reach. */
export class ShortUtteranceCmn {
  static readonly MAX_SECONDS = 3;
  static readonly FIRST_SECONDS = 5;
  /** pocketsphinx's CMN_WIN: the weight cmn_live_set gives a mean. */
  static readonly PRIOR_FRAMES = 500;
  private readonly maxSamples = ShortUtteranceCmn.MAX_SECONDS * ENGINE_RATE;
  private readonly firstSamples = ShortUtteranceCmn.FIRST_SECONDS * ENGINE_RATE;
  private heard = 0;
  private utterance: Int16Array[] = [];
  private utteranceSamples = 0;
  private before: readonly number[] | null = null;
  private active: boolean;

  constructor(private readonly enabled = true) {
    this.active = enabled;
  }

  /** A new stream: `fresh` when its CMN starts from -cmninit, false for a restored state. */
  reset(fresh: boolean): void {
    this.heard = 0;
    this.active = fresh && this.enabled;
    this.utterance = [];
    this.utteranceSamples = 0;
    this.before = null;
  }

  /** An utterance begins; `cmn` reads the live CMN state (only asked while it matters). */
  start(cmn: () => readonly number[] | null): void {
    this.utterance = [];
    this.utteranceSamples = 0;
    this.before = this.active ? cmn() : null;
  }

  hear(samples: Int16Array): void {
    if (this.before === null) return;
    this.utteranceSamples += samples.length;
    if (this.utteranceSamples > this.maxSamples) this.utterance = [];
    else this.utterance.push(samples.slice());
  }

  /** After the streamed pass: the utterance's samples and the CMN state to decode them again
   * from, with the state to put back after; null when this utterance is not decoded again. */
  take(cmn: () => readonly number[] | null): { samples: Int16Array; state: number[]; after: readonly number[] } | null {
    const before = this.before;
    const length = this.utteranceSamples;
    const parts = this.utterance;
    this.before = null;
    this.utterance = [];
    this.utteranceSamples = 0;
    if (before === null) return null;
    this.heard += length;
    if (this.heard >= this.firstSamples) this.active = false;
    if (length === 0 || length > this.maxSamples) return null;
    const after = cmn();
    const state = after === null ? null : ShortUtteranceCmn.ownMeanState(before, after);
    return state === null ? null : { samples: concat(parts, length), state, after: after! };
  }

  /** The CMN state whose mean is the frames' own between `before` and `after`, weighted as
   * cmn_live_set weighs a mean; null when the states do not allow it (no frame, a rescale). */
  static ownMeanState(before: readonly number[], after: readonly number[]): number[] | null {
    const n = (before.length - 1) / 2;
    if (!Number.isInteger(n) || after.length !== before.length) return null;
    const frames = after[2 * n]! - before[2 * n]!;
    if (frames <= 0) return null;
    const mean = Array.from({ length: n }, (_, i) => (after[n + i]! - before[n + i]!) / frames);
    return [...mean, ...mean.map((m) => m * ShortUtteranceCmn.PRIOR_FRAMES), ShortUtteranceCmn.PRIOR_FRAMES];
  }
}

function concat(parts: Int16Array[], length: number): Int16Array {
  const out = new Int16Array(length);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
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
  // '-scribed_share_lm', '-scribed_share_dict' and '-scribed_share_vocab' are the addon's own
  // options, not pocketsphinx flags (so not in `args`, which the bench also hands to the CLI).
  let decoder: NativeDecoder | null = new Decoder({
    ...args,
    ...(shareLanguageModel() ? {} : { '-scribed_share_lm': 'no' }),
    ...(shareDictionary() ? {} : { '-scribed_share_dict': 'no' }),
    ...(shareVocabulary() ? {} : { '-scribed_share_vocab': 'no' }),
  });
  const samplesPerFrame = ENGINE_RATE / FRAMES_PER_SECOND;
  const live = (): NativeDecoder => {
    if (decoder === null) throw new Error('pocketsphinx decoder destroyed');
    return decoder;
  };
  const firstUtterance = new ShortUtteranceCmn(shortUtteranceCmn(config.profile));
  let inUtterance = false;
  return {
    engineRate: ENGINE_RATE,
    notices,
    process(samples: Int16Array, withPartial = true): string {
      const d = live();
      if (!inUtterance) {
        firstUtterance.start(() => d.getCmn());
        inUtterance = true;
      }
      firstUtterance.hear(samples);
      return d.process(samples, withPartial) ?? '';
    },
    endUtterance() {
      const d = live();
      inUtterance = false;
      let r = d.endUtterance();
      const again = firstUtterance.take(() => d.getCmn());
      if (again !== null && r.words.length > 0) {
        // The same utterance once more, normalised by its own mean from the first frame; then
        // the live CMN goes on from where the streamed pass left it.
        d.setCmn(again.state);
        d.process(again.samples, false);
        r = d.endUtterance();
        d.setCmn(again.after);
      }
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
      firstUtterance.reset(true);
      inUtterance = false;
    },
    getChannelState() {
      return live().getCmn();
    },
    setChannelState(state: readonly number[]) {
      const set = live().setCmn(state);
      // A restored channel state has heard the channel: no second pass after it.
      if (set) firstUtterance.reset(false);
      return set;
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
