// scripts/setup.sh runs before every `npm start` and `npm test`, so each of its steps must be
// skipped while its output is up to date and redone when an input changes. The checks live in
// scripts/up-to-date.sh; here they run, as setup.sh runs them, on files in a temp dir. Then
// setup.sh itself: no build or install command outside an up-to-date guard, and each guard
// names the inputs its step reads.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const LIBRARY = path.join(ROOT, 'scripts/up-to-date.sh');
const SETUP = fs.readFileSync(path.join(ROOT, 'scripts/setup.sh'), 'utf8');

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-setup-'));
  fs.mkdirSync(path.join(dir, 'src/sub'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'src/a.ts'), 'a');
  fs.writeFileSync(path.join(dir, 'src/sub/b.ts'), 'b');
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), '{}');
  fs.writeFileSync(path.join(dir, 'out.js'), 'built');
  // Inputs written a minute ago: a build that starts now is after them.
  const past = new Date(Date.now() - 60_000);
  for (const f of ['src/a.ts', 'src/sub/b.ts', 'src/sub', 'src', 'tsconfig.json']) fs.utimesSync(path.join(dir, f), past, past);
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Runs bash with the library sourced, in the temp dir; returns status and output. */
function sh(script: string): { status: number | null; out: string } {
  const r = spawnSync('bash', ['-c', `set -euo pipefail; . ${JSON.stringify(LIBRARY)}; ${script}`], { cwd: dir, encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

const check = (key = 'k1') => sh(`if up_to_date st/dist ${key} out.js src tsconfig.json; then echo fresh; else echo stale; fi`).out.trim();
const build = (key = 'k1') => expect(sh(`begin_step st/dist; end_step st/dist ${key}`).status).toBe(0);

/** An edit now, after the last build. */
function edit(rel: string): void {
  const now = new Date();
  fs.utimesSync(path.join(dir, rel), now, now);
}

describe('scripts/up-to-date.sh', () => {
  it('a step never built is stale; once built it is skipped', () => {
    expect(check()).toBe('stale');
    build();
    expect(check()).toBe('fresh');
  });

  it('an edited source, a source deep in a directory, or the compiler settings rebuild', () => {
    build();
    edit('src/sub/b.ts');
    expect(check()).toBe('stale');
    build();
    expect(check()).toBe('fresh');
    edit('tsconfig.json');
    expect(check()).toBe('stale');
  });

  it('an added or deleted source rebuilds (its directory changed)', () => {
    build();
    fs.writeFileSync(path.join(dir, 'src/sub/c.ts'), 'c');
    expect(check()).toBe('stale');
    build();
    fs.rmSync(path.join(dir, 'src/a.ts'));
    edit('src'); // the deletion's mtime may fall in the build's own clock tick
    expect(check()).toBe('stale');
  });

  it('a missing output, a missing input or another key rebuilds', () => {
    build();
    expect(check('k2')).toBe('stale');
    fs.rmSync(path.join(dir, 'out.js'));
    expect(check()).toBe('stale');
    fs.writeFileSync(path.join(dir, 'out.js'), 'built');
    fs.rmSync(path.join(dir, 'tsconfig.json'));
    expect(check()).toBe('stale');
  });

  it('a source saved while the step ran still rebuilds next time', () => {
    const r = sh(`begin_step st/dist; sleep 0.05; touch src/a.ts; end_step st/dist k1`);
    expect(r.status).toBe(0);
    expect(check()).toBe('stale');
  });

  it('a failed build leaves the step stale', () => {
    build();
    edit('src/a.ts');
    expect(sh(`begin_step st/dist; false; end_step st/dist k1`).status).not.toBe(0);
    expect(check()).toBe('stale');
  });

  it("links the command, replaces another checkout's link, and leaves a real file alone", () => {
    const bin = path.join(dir, 'bin');
    const target = path.join(dir, 'out.js');
    let r = sh(`link_command ${target} scribed ${bin}`);
    expect(r.status).toBe(0);
    expect(r.out).toContain(`linked ${bin}/scribed -> ${target}`);
    expect(fs.readlinkSync(path.join(bin, 'scribed'))).toBe(target);
    // Again: nothing to do, nothing said.
    expect(sh(`link_command ${target} scribed ${bin}`)).toEqual({ status: 0, out: '' });
    fs.rmSync(path.join(bin, 'scribed'));
    fs.symlinkSync('/elsewhere/dist/cli.js', path.join(bin, 'scribed'));
    r = sh(`link_command ${target} scribed ${bin}`);
    expect(r.out).toContain('(was -> /elsewhere/dist/cli.js)');
    expect(fs.readlinkSync(path.join(bin, 'scribed'))).toBe(target);
    fs.rmSync(path.join(bin, 'scribed'));
    fs.writeFileSync(path.join(bin, 'scribed'), '#!/bin/sh\n');
    r = sh(`link_command ${target} scribed ${bin}`);
    expect(r.status).toBe(1);
    expect(r.out).toContain('not a link; left alone');
    expect(fs.lstatSync(path.join(bin, 'scribed')).isSymbolicLink()).toBe(false);
  });

  it('puts the command in SCRIBED_BIN_DIR, else /usr/local/bin when writable, else ~/.local/bin', () => {
    expect(sh('SCRIBED_BIN_DIR=/x/y command_bin_dir').out.trim()).toBe('/x/y');
    let writable = true;
    try {
      fs.accessSync('/usr/local/bin', fs.constants.W_OK);
    } catch {
      writable = false;
    }
    expect(sh('command_bin_dir').out.trim()).toBe(writable ? '/usr/local/bin' : path.join(os.homedir(), '.local/bin'));
  });
});

describe('quiet steps (step_run, setup_summary)', () => {
  it("keeps a step's output in its log file, not on the screen", () => {
    const r = sh(
      'SETUP_LOG_DIR=logs; step_run gyp "recognizer addon" bash -c "echo gyp info it worked if it ends with ok; echo npm warn deprecated >&2"',
    );
    expect(r.status).toBe(0);
    expect(r.out).toBe('setup: recognizer addon ...\n');
    expect(fs.readFileSync(path.join(dir, 'logs/gyp.log'), 'utf8')).toBe('gyp info it worked if it ends with ok\nnpm warn deprecated\n');
  });

  it('shows the end of the log and stops when a step fails', () => {
    const r = sh(
      `SETUP_LOG_DIR=logs; step_run npm "npm packages" bash -c 'for i in $(seq 1 100); do echo line $i; done; echo ERESOLVE could not resolve >&2; exit 3'; echo not reached`,
    );
    expect(r.status).toBe(3);
    expect(r.out).toContain('setup: npm packages failed (exit 3)');
    expect(r.out).toContain('  | ERESOLVE could not resolve');
    expect(r.out).toContain('  | line 100');
    expect(r.out).not.toContain('  | line 50\n');
    expect(r.out).toContain('the whole log is logs/npm.log');
    expect(r.out).not.toContain('not reached');
  });

  it('sums up what ran, with times, and what was up to date', () => {
    const r = sh(
      'SETUP_LOG_DIR=logs; step_run a "npm packages" true >/dev/null; step_run b "TypeScript build" sleep 0.2 >/dev/null; setup_summary "Debian packages" "npm packages" "TypeScript build" "telephony model"',
    );
    expect(r.out.trim()).toMatch(
      /^setup: done in \d+\.\d s: npm packages 0\.\d s, TypeScript build 0\.[2-9] s; up to date: Debian packages, telephony model \(logs: logs\)$/,
    );
    expect(sh('setup_summary "npm packages" "TypeScript build"').out.trim()).toMatch(/^setup: up to date \(\d+\.\d s\)$/);
  });
});

describe('scripts/setup.sh', () => {
  /** The body of each `if ! up_to_date "$STAMPS/<step>" ...; then ... fi` guard. */
  const guards = [...SETUP.matchAll(/^if ! up_to_date "\$STAMPS\/(\w+)" ([^\n]*(?:\\\n[^\n]*)*); then\n([\s\S]*?)^fi$/gm)].map((m) => ({
    step: m[1]!,
    args: m[2]!.replace(/\\\n/g, ' '),
    body: m[3]!,
  }));
  const guarded = (step: string) => guards.find((g) => g.step === step);

  it('runs every install and build inside an up-to-date guard', () => {
    const unguarded = SETUP.replace(/^if ! up_to_date [\s\S]*?^fi$/gm, '');
    for (const command of [
      'apt-get',
      'npm install',
      'npm rebuild',
      'npm run',
      'node-gyp',
      'tsc',
      'build-telephony-model.sh models',
      'build-adapted-model.sh models',
    ]) {
      expect(
        unguarded.split('\n').filter((l) => !l.trim().startsWith('#') && l.includes(command)),
        command,
      ).toEqual([]);
    }
  });

  it('runs every install and build quietly, through step_run, and ends with the summary', () => {
    const commands = SETUP.split('\n').filter(
      (l) => !l.trim().startsWith('#') && /apt-get (update|install)|npm (install|rebuild|run)|build-\w+-model\.sh models/.test(l),
    );
    expect(commands.length).toBeGreaterThanOrEqual(8);
    for (const l of commands) expect(l, l).toMatch(/step_run \S+ "[^"]+" /);
    expect(SETUP.trimEnd().split('\n').at(-1)).toMatch(/^setup_summary /);
  });

  // npm gives a package with a binding.gyp and no install script an implicit `node-gyp
  // rebuild`, the root project included: `npm install` built the addon and the addon step
  // built it again. Here npm installs a project with the package's own settings and a
  // binding.gyp that cannot build: it must not try.
  it('npm install leaves the addon to its own step (no implicit node-gyp rebuild)', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(
      path.join(dir, 'package.json'),
      JSON.stringify({ name: 'gyp-probe', version: '1.0.0', private: true, gypfile: pkg.gypfile, scripts: pkg.scripts }),
    );
    fs.writeFileSync(path.join(dir, 'binding.gyp'), '{ this is not gyp');
    const r = spawnSync('npm', ['install', '--offline', '--no-audit', '--no-fund'], { cwd: dir, encoding: 'utf8' });
    expect(`${r.stdout}${r.stderr}`).not.toContain('node-gyp');
    expect(r.status).toBe(0);
  });

  it('guards each step with the inputs it reads', () => {
    expect(guards.map((g) => g.step)).toEqual(['apt', 'npm', 'addon', 'dist', 'telephony', 'adapted']);
    expect(guarded('apt')!.args).toContain('/var/lib/dpkg/status');
    expect(guarded('npm')!.args).toMatch(/node_modules\/\.package-lock\.json package\.json package-lock\.json/);
    expect(guarded('addon')!.args).toMatch(
      /build\/Release\/scribed_pocketsphinx\.node .*binding\.gyp src\/engine\/pocketsphinx node_modules\/node-addon-api\/package\.json/,
    );
    expect(guarded('addon')!.body).toContain('build:addon');
    expect(guarded('dist')!.args).toMatch(/dist\/cli\.js src tsconfig\.json package-lock\.json/);
    expect(guarded('dist')!.body).toContain('build:ts');
    expect(guarded('telephony')!.args).toContain('models/telephony/feat.params');
    // the adapted model is rebuilt when the telephony feat.params it copies changes
    expect(guarded('adapted')!.args).toContain('models/telephony-adapted/en-us-adapted/sendump');
    expect(SETUP).toMatch(/ADAPT_INPUTS=\([^)]*models\/telephony\/feat\.params/);
    // The addon's sources are all under the directory the guard names.
    const gyp = JSON.parse(fs.readFileSync(path.join(ROOT, 'binding.gyp'), 'utf8')) as { targets: { sources: string[] }[] };
    for (const source of gyp.targets.flatMap((t) => t.sources)) expect(source.startsWith('src/engine/pocketsphinx/'), source).toBe(true);
    // Each step stamps only after it succeeded.
    for (const g of guards) expect(g.body.trimEnd().split('\n').at(-1), g.step).toMatch(/^\s*end_step "\$STAMPS\/\w+"/);
  });

  it('keys native builds on the Node version', () => {
    expect(SETUP).toMatch(/NODE_KEY="node=\$\(node --version\)"/);
    expect(guarded('npm')!.args).toContain('"$NODE_KEY"');
    expect(guarded('addon')!.args).toContain('"$ADDON_KEY"');
    expect(SETUP).toMatch(/ADDON_KEY="\$NODE_KEY /);
  });
});
