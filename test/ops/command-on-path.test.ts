// The README's commands are written `scribed ...`; set-up (which CI runs before the tests)
// links the command into a directory on PATH. A newcomer's login shell must find it, and it
// must run. The link is one per machine and follows the checkout that ran set-up last, so on a
// machine with several checkouts it may be another's build: the test asks for a scribed build,
// not this one (readme-quickstart.test.ts runs the README against this checkout's).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const CLI = path.join(ROOT, 'dist/cli.js');

describe('the scribed command after set-up', () => {
  it('resolves on PATH in a login shell, to the dist/cli.js of a scribed checkout', () => {
    const r = spawnSync('bash', ['-lc', 'command -v scribed'], { encoding: 'utf8' });
    expect(r.status, 'scribed is not on PATH: scripts/setup.sh links it (README, "Set-up")').toBe(0);
    const target = fs.realpathSync(r.stdout.trim());
    expect(path.basename(target)).toBe('cli.js');
    const pkg = JSON.parse(fs.readFileSync(path.join(path.dirname(target), '../package.json'), 'utf8')) as {
      name: string;
      bin: Record<string, string>;
    };
    expect(pkg.name).toBe('scribed');
    expect(path.resolve(path.dirname(target), '..', pkg.bin.scribed!)).toBe(target);
  });

  it("runs: `scribed --help` lists the README's commands", () => {
    const r = spawnSync('bash', ['-lc', 'scribed --help'], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    for (const command of ['serve', 'accounts', 'stream', 'rtp', 'models']) expect(r.stdout).toContain(`scribed ${command}`);
  });

  it('every `scribed <command>` the README shows is one the CLI has', () => {
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const help = spawnSync(process.execPath, [CLI, '--help'], { encoding: 'utf8' }).stdout;
    const shown = new Set([...readme.matchAll(/(?:^|[\s|`(])scribed ([a-z][a-z-]+)/gm)].map((m) => m[1]!));
    expect(shown.size).toBeGreaterThan(3);
    for (const command of shown) expect(help, `README shows scribed ${command}`).toContain(`scribed ${command}`);
  });
});
