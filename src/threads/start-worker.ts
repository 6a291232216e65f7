// Starting a worker thread from this codebase's own modules, both as built (dist/*.js, plain
// Node) and from TypeScript source (tests and `tsx`), where the thread needs tsx's loader.
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';

/** The URL of a sibling module of `from` (an import.meta.url), as .ts from source, else .js. */
export function siblingModule(from: string, name: string): URL {
  return new URL(`./${name}${from.endsWith('.ts') ? '.ts' : '.js'}`, from);
}

/** Start a worker thread whose entry is `entry` (from siblingModule). */
export function startWorker(entry: URL, options: Omit<WorkerOptions, 'eval' | 'execArgv'> = {}): Worker {
  if (!entry.pathname.endsWith('.ts')) return new Worker(entry, options);
  // Node 20 ignores `execArgv: ['--import', 'tsx']` for a worker's own entry module ("Unknown
  // file extension .ts"), so a tiny bootstrap registers tsx's ESM hooks, then imports the
  // TypeScript entry. The execArgv still lets nested imports resolve under the same loader.
  const tsxDir = path.dirname(createRequire(import.meta.url).resolve('tsx/package.json'));
  const api = pathToFileURL(path.join(tsxDir, 'dist', 'esm', 'api', 'index.mjs')).href;
  const boot = `import(${JSON.stringify(api)}).then((m) => { m.register(); return import(${JSON.stringify(entry.href)}); });`;
  return new Worker(boot, { ...options, eval: true, execArgv: ['--import', 'tsx'] });
}
