// The native addon (build/Release/scribed_pocketsphinx.node, from src/engine/pocketsphinx/):
// the pocketsphinx decoder and the streams' resampler. Loaded once per thread, only by the
// recognition workers (and the tools that drive a decoder directly).
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { addonPath } from './environment.js';

/** The addon file this process loads: SCRIBED_POCKETSPHINX_ADDON, else the checkout's build. */
export function addonFile(): string {
  return addonPath();
}

let loaded: unknown = null;

/** The addon's exports, untyped: each user declares the part it uses. */
export function requireAddon(): unknown {
  if (loaded !== null) return loaded;
  const file = addonFile();
  if (!existsSync(file)) {
    throw new Error(`native addon not found at ${file}. Build it with \`npm run build:addon\` (or \`npm run setup\`).`);
  }
  loaded = createRequire(import.meta.url)(file) as unknown;
  return loaded;
}
