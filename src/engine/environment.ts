// The engine's own settings from the environment, read here and nowhere else in the engine.
// The engine sits below src/config.ts (it reads no service configuration, docs/architecture.md
// "Layers") and its decoders run on worker threads that are handed no configuration, so its
// few operator and measurement knobs are read by this one module (eslint.config.js allows
// `process.env` only here and in src/config.ts). Each is listed in systemd/scribed.env.
import path from 'node:path';
import { packageRoot } from '../threads/package-root.js';

const env = (name: string): string | undefined => {
  const v = process.env[name];
  return v === undefined || v === '' ? undefined : v;
};

/** SCRIBED_POCKETSPHINX_ADDON: the addon file to load, else the checkout's build. */
export function addonPath(): string {
  return env('SCRIBED_POCKETSPHINX_ADDON') ?? path.join(packageRoot(), 'build', 'Release', 'scribed_pocketsphinx.node');
}

/** SCRIBED_DECODER_THREADS as given (validated by the pool), or undefined. */
export function decoderThreadsSetting(): string | undefined {
  return env('SCRIBED_DECODER_THREADS');
}

/** SCRIBED_POCKETSPHINX_SHORT_CMN=0 or 1 forces short-utterance CMN off or on; else undefined. */
export function shortCmnSetting(): boolean | undefined {
  const forced = env('SCRIBED_POCKETSPHINX_SHORT_CMN');
  return forced === '0' || forced === '1' ? forced === '1' : undefined;
}

/** The pocketsphinx sharing switches (measuring only; results are the same either way): each
 * on unless its variable is 0. */
export function pocketsphinxSharingSettings(): { languageModel: boolean; dictionary: boolean; vocabulary: boolean } {
  return {
    languageModel: env('SCRIBED_POCKETSPHINX_SHARE_LM') !== '0',
    dictionary: env('SCRIBED_POCKETSPHINX_SHARE_DICT') !== '0',
    vocabulary: env('SCRIBED_POCKETSPHINX_SHARE_VOCAB') !== '0',
  };
}
