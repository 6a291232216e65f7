// Browser tests' helpers: Debian's chromium driven by playwright-core (never a downloaded
// browser), and the example backend of docs/console.md, extracted from the doc and run as the
// integrator would run it.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { chromium, type Browser } from 'playwright-core';
import { tempDir } from '../helpers/service.js';
import { freePort } from '../helpers/serve-process.js';

export const CHROMIUM = '/usr/bin/chromium';
/** Without the background-networking flags Chromium's own connections are refused by the
 * closed network and slow the start; a fresh profile per launch (Playwright's default). */
const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export function launchChromium(opts: { fakeAudioFile?: string } = {}): Promise<Browser> {
  const args = [...ARGS];
  if (opts.fakeAudioFile) args.push('--use-fake-device-for-media-stream', `--use-file-for-fake-audio-capture=${opts.fakeAudioFile}`);
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args });
}

export const DOC = path.resolve(import.meta.dirname, '../../docs/console.md');

/** The ```js block of docs/console.md that starts with `// console-backend.mjs`. */
export function backendSnippet(): string {
  const doc = fs.readFileSync(DOC, 'utf8');
  const m = /```js\n(\/\/ console-backend\.mjs\n[\s\S]*?)```/.exec(doc);
  if (!m) throw new Error('docs/console.md has no console-backend.mjs block');
  return m[1]!;
}

export interface Backend {
  url: string;
  proc: ChildProcess;
  stop(): void;
}

/** The doc's backend as a process, pointed at a scribed service with an access key. */
export async function startBackend(scribedUrl: string, accessKey: string): Promise<Backend> {
  const file = path.join(tempDir('scribed-console-'), 'console-backend.mjs');
  fs.writeFileSync(file, backendSnippet());
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc = spawn(process.execPath, [file], {
    env: { ...process.env, SCRIBED_URL: scribedUrl, SCRIBED_ACCESS_KEY: accessKey, PUBLIC_URL: url },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  proc.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  readline
    .createInterface({ input: proc.stdout! })
    .on('line', (l) => process.env.SCRIBED_TEST_LOG && process.stderr.write(`[backend] ${l}\n`));
  // Listening once a request gets an answer.
  for (let i = 0; ; i++) {
    if (proc.exitCode !== null) throw new Error(`backend exited: ${stderr}`);
    try {
      await fetch(`${url}/nothing`);
      break;
    } catch {
      if (i > 100) throw new Error(`backend not listening: ${stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return { url, proc, stop: () => proc.kill('SIGKILL') };
}
