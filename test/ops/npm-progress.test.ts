// `npm start` leaves no spinner characters on the terminal: npm's progress spinner is off for
// this project (.npmrc `progress=false`). npm draws it only when stderr is a terminal, so the
// runs here are in a pseudo-terminal (util-linux `script`): a scratch package without the
// setting shows npm's spinner around its script (the control: this npm draws one), the same
// package with the project's .npmrc shows none, and npm in the checkout reads the setting on a
// terminal (where its default is on).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/service.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
/** The frames of npm's spinner: braille dots (a UTF-8 locale is set below, so npm draws those). */
const SPINNER = /[\u2800-\u28ff]/;
const TERMINAL_ENV = { ...process.env, CI: '', LC_ALL: 'C.UTF-8' };

/** `npm run slow` in a pseudo-terminal; everything npm and the script wrote to it. */
function runInTerminal(dir: string): string {
  return execFileSync('script', ['-qfec', 'npm run slow', '/dev/null'], { cwd: dir, encoding: 'utf8', env: TERMINAL_ENV });
}

function scratchPackage(npmrc: string | null): string {
  const dir = tempDir();
  // A script that stays quiet a while, then writes a line, as the server does at start.
  fs.writeFileSync(path.join(dir, 'slow.js'), 'setTimeout(() => console.log("listening"), 700);\n');
  fs.writeFileSync(
    path.join(dir, 'package.json'),
    JSON.stringify({ name: 'scratch', version: '1.0.0', scripts: { slow: 'node slow.js' } }),
  );
  if (npmrc !== null) fs.writeFileSync(path.join(dir, '.npmrc'), npmrc);
  return dir;
}

describe("npm's spinner", () => {
  it('is drawn around a script without the setting, and not with the project .npmrc', () => {
    expect(runInTerminal(scratchPackage(null))).toMatch(SPINNER);
    const quiet = runInTerminal(scratchPackage(fs.readFileSync(path.join(ROOT, '.npmrc'), 'utf8')));
    expect(quiet).toContain('listening');
    expect(quiet).not.toMatch(SPINNER);
  }, 60_000);

  it('is off for npm run in the checkout (npm start included), on a terminal where it defaults to on', () => {
    // On a terminal npm's default is on (off when stderr is not one, so the answer is read in one).
    const setting = execFileSync('script', ['-qfec', 'npm config get progress', '/dev/null'], {
      cwd: ROOT,
      encoding: 'utf8',
      env: TERMINAL_ENV,
    });
    expect(setting.trim()).toBe('false');
  });
});
