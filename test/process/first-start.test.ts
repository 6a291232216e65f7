// The first start as a newcomer sees it (docs/install.md): `npm start` on a terminal, with the
// set-up already done and a fresh data dir. npm start is `bash scripts/setup.sh && node
// dist/cli.js serve`; set-up itself is not run here (it would rebuild into the checkout), so the
// command is set-up's own summary line as setup.sh ends it when every step is up to date (its
// `setup_summary` call, read from setup.sh), then the built CLI, in a pseudo-terminal (util-linux
// `script`) so the server writes the readable lines a terminal gets. Asserted: the first line
// is the short set-up summary; the server measures its capacity (the first start's cost) and says
// so in short lines, no JSON blob and no line over MAX_LINE characters, nothing at warn or above;
// the last line before Ctrl-C is the one-line "ready at ..." summary; /readyz answers 200; Ctrl-C
// stops it cleanly.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/service.js';
import { CLI, freePort } from '../helpers/serve-process.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
/** A readable line longer than this is a blob, not a sentence (the calibration record was 1.5 KB). */
const MAX_LINE = 400;

const children = new Set<ChildProcess>();
afterEach(async () => {
  // The server runs in the pseudo-terminal's own session: Ctrl-C on it stops the server (a
  // killed `script` would leave it running, since SIGHUP reloads settings rather than stopping).
  for (const c of children) {
    if (c.exitCode === null && c.signalCode === null) {
      c.stdin?.write('\u0003');
      await Promise.race([new Promise((r) => c.once('exit', r)), new Promise((r) => setTimeout(r, 15_000))]);
    }
    c.kill('SIGKILL');
  }
  children.clear();
});

/** setup.sh's closing call, as it stands in setup.sh. */
function summaryCall(): string {
  const call = fs
    .readFileSync(path.join(ROOT, 'scripts/setup.sh'), 'utf8')
    .split('\n')
    .find((l) => l.startsWith('setup_summary '));
  if (!call) throw new Error('setup.sh no longer ends with setup_summary');
  return call;
}

describe('the first start', () => {
  it('prints the set-up summary, short lines while it measures, one "ready at" line, and answers /readyz', async () => {
    const dataDir = path.join(tempDir(), 'data'); // fresh: nothing measured, nothing stored
    const port = await freePort();
    const command = [
      `cd ${JSON.stringify(ROOT)}`,
      'source scripts/up-to-date.sh',
      'SETUP_STARTED_NS=$(date +%s%N)',
      'SETUP_DONE=()',
      summaryCall(),
      `exec node ${JSON.stringify(CLI)} serve --data-dir ${JSON.stringify(dataDir)} --port ${port}`,
    ].join('; ');
    const proc = spawn('script', ['-qfec', `bash -c '${command.replaceAll("'", "'\\''")}'`, '/dev/null'], {
      stdio: ['pipe', 'pipe', 'inherit'],
      // `script` runs its command with $SHELL -c. CI's environment has no SHELL, and sh (dash)
      // does not exec its one command: it stays the terminal's foreground process beside the
      // server, dies of the Ctrl-C itself, and `script -e` reports 130 while the server is
      // still stopping cleanly. bash execs it, as a user's login shell on a terminal would.
      env: { ...process.env, SHELL: '/bin/bash', SCRIBED_LOG_LEVEL: '', CI: '' },
    });
    children.add(proc);
    let output = '';
    proc.stdout!.on('data', (b: Buffer) => (output += b.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
    const lines = () =>
      stripVTControlCharacters(output)
        .split(/\r?\n/)
        .map((l) => l.trimEnd())
        .filter((l) => l !== '');

    // The first start measures the node's capacity (about 10 s on a quiet machine; a loaded one
    // takes longer), then listens.
    const until = Date.now() + 170_000;
    while (!lines().some((l) => l.includes(' ready at http://'))) {
      if (Date.now() > until || proc.exitCode !== null) throw new Error(`no "ready at" line:\n${lines().join('\n')}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(ready.status).toBe(200);

    const seen = lines();
    expect(seen[0]).toMatch(/^setup: up to date \(\d+\.\d s\)$/);
    const server = seen.slice(1);
    expect(server[0]).toMatch(/INFO: capacity: measuring what a real-time stream costs on this node/);
    for (const line of server) {
      expect(line.length, line).toBeLessThanOrEqual(MAX_LINE);
      expect(line, 'a JSON blob').not.toMatch(/^\s*\{/);
      expect(line, 'a warning or worse').not.toMatch(/\] (WARN|ERROR|FATAL):/);
    }
    expect(server.some((l) => l.includes('capacity-calibration') && l.length > MAX_LINE)).toBe(false);
    expect(server.at(-1)).toMatch(
      new RegExp(
        `INFO: ready at http://127\\.0\\.0\\.1:${port}: data in .*data, embedded SQLite store, up to \\d+ recognizer\\(s\\) at once\\.`,
      ),
    );
    // What it measured is kept for the next start.
    expect(fs.existsSync(path.join(dataDir, 'capacity-calibration.json'))).toBe(true);

    // Ctrl-C on the terminal: the server stops and exits 0.
    proc.stdin!.write('\u0003');
    const code = await exited;
    // The whole terminal in the message: an exit by the signal itself (130) with or without the
    // "stopped" line tells a stop that never ran from one that ran and then died.
    expect(lines().at(-1), lines().slice(-8).join('\n')).toMatch(/INFO: stopped$/);
    expect(code, lines().slice(-8).join('\n')).toBe(0);
  }, 200_000);
});
