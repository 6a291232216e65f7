// The package root: where the checkout's or the installed package's own files are (the native
// addon's build, samples/, models/, the console's assets). A leaf any layer may import; it sits
// here, below the engine, so that the engine need not import the service configuration for it.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export function packageRoot(): string {
  // src/threads/package-root.ts and dist/threads/package-root.js both sit two levels below it.
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
}
