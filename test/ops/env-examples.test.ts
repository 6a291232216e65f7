// The example /etc/scribed/*.env files in systemd/ must say the truth: every variable they
// name is one the code (src/) or the unit's own ExecStart really reads, every variable the
// code reads is in an example (what only `scribed models`, which no unit runs, reads excepted),
// the defaults shown are the defaults the code and the units apply, and the extra flags shown
// are flags the commands accept. A variable added to src/ without a line in an example, or a
// unit added without its examples, fails this test.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const UNIT_DIR = path.join(ROOT, 'systemd');
const CLI = path.join(ROOT, 'dist/cli.js');

function directives(text: string, key: string): string[] {
  return [...text.matchAll(new RegExp(`^${key}=(.*)$`, 'gm'))].map((m) => m[1]!);
}

/** The instance each template unit's per-instance example is written for. */
const INSTANCE: Record<string, string> = {
  'scribed-rtp@.service': '40000',
  'scribed-stream@.service': 'line1',
  'scribed-gateway@.service': '8090',
};
/** Read only by a command no unit runs: `scribed models` (an operator's command), through the
 * one module that reads the environment. */
const NO_UNIT: Record<string, string[]> = { SCRIBED_MODELS_DIR: ['src/cli/models.ts', 'src/config.ts'] };

const units = fs
  .readdirSync(UNIT_DIR)
  .filter((f) => f.endsWith('.service'))
  .sort();

/** For every unit: each EnvironmentFile= (as written) and the example in systemd/ for it. */
const EXAMPLES: Record<string, Record<string, string>> = Object.fromEntries(
  units.map((unit) => {
    const files = directives(fs.readFileSync(path.join(UNIT_DIR, unit), 'utf8'), 'EnvironmentFile').map((f) => f.replace(/^-/, ''));
    return [unit, Object.fromEntries(files.map((f) => [f, path.basename(f).replace('%i', INSTANCE[unit] ?? '%i')]))];
  }),
);

const read = (file: string) => fs.readFileSync(path.join(UNIT_DIR, file), 'utf8');
const namesIn = (text: string) => new Set(text.match(/\bSCRIBED_[A-Z0-9_]+/g) ?? []);

/** `#NAME=value` and `NAME=value` lines of an example: the value each shows. */
function assignments(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of text.matchAll(/^#?(SCRIBED_[A-Z0-9_]+)=(.*)$/gm)) out.set(m[1]!, m[2]!);
  return out;
}

/** SCRIBED_* names in src/, with the files naming each. */
function sourceNames(): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const walk = (dir: string): void => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ts')) {
        for (const name of namesIn(fs.readFileSync(p, 'utf8'))) {
          if (!out.has(name)) out.set(name, new Set());
          out.get(name)!.add(path.relative(ROOT, p));
        }
      }
    }
  };
  walk(path.join(ROOT, 'src'));
  return out;
}

const src = sourceNames();

describe('example env files (systemd/*.env)', () => {
  it('one example per EnvironmentFile= of every unit, and no example without a unit', () => {
    const shipped = fs
      .readdirSync(UNIT_DIR)
      .filter((f) => f.endsWith('.env'))
      .sort();
    expect(shipped).toEqual(
      Object.values(EXAMPLES)
        .flatMap((m) => Object.values(m))
        .sort(),
    );
    for (const [unit, files] of Object.entries(EXAMPLES)) {
      const text = read(unit);
      expect(Object.keys(files).length, `${unit} reads settings from /etc/scribed`).toBeGreaterThan(0);
      for (const file of Object.keys(files)) expect(file, unit).toMatch(/^\/etc\/scribed\/[a-z]+(-%i)?\.env$/);
      // The unit points the operator at its examples.
      for (const example of Object.values(files)) expect(text, `${unit} names systemd/${example}`).toContain(`systemd/${example}`);
    }
    const ops = fs.readFileSync(path.join(ROOT, 'docs/operations.md'), 'utf8');
    for (const example of shipped) expect(ops, `docs/operations.md names systemd/${example}`).toContain(`systemd/${example}`);
  });

  it('names only variables the code or the unit reads', () => {
    for (const [unit, files] of Object.entries(EXAMPLES)) {
      const unitText = read(unit);
      const unitReads = new Set([
        ...namesIn(directives(unitText, 'ExecStart').join(' ')),
        ...namesIn(directives(unitText, 'Environment').join(' ')),
      ]);
      for (const example of Object.values(files)) {
        for (const name of namesIn(read(example)))
          expect(src.has(name) || unitReads.has(name), `${example}: ${name} is read by nothing`).toBe(true);
      }
    }
  });

  it('names every variable the code reads', () => {
    const named = new Set(
      Object.values(EXAMPLES)
        .flatMap((m) => Object.values(m))
        .flatMap((f) => [...namesIn(read(f))]),
    );
    const missing = [...src.keys()].filter((name) => !named.has(name) && !(name in NO_UNIT));
    expect(missing, 'add these to an example in systemd/ (the one whose command reads them)').toEqual([]);
    // The exception is named by its command's file and read through config.ts only, so it cannot hide a daemon's setting.
    for (const [name, files] of Object.entries(NO_UNIT)) expect([...(src.get(name) ?? [])].sort(), name).toEqual(files);
  });

  it("gives every variable of each unit's command line, with the unit's default", () => {
    for (const [unit, files] of Object.entries(EXAMPLES)) {
      const unitText = read(unit);
      const shared = assignments(read(Object.values(files)[0]!));
      for (const name of namesIn(directives(unitText, 'ExecStart').join(' '))) expect(shared.has(name), `${unit}: ${name}`).toBe(true);
      for (const env of directives(unitText, 'Environment')) {
        const [name, value] = env.split(/=(.*)/s) as [string, string];
        expect(shared.get(name), `${unit} sets ${name}=${value}`).toBe(value);
      }
    }
  });

  it('never holds the access key or the PBX token (the units pass them as credentials)', () => {
    for (const file of Object.values(EXAMPLES).flatMap((m) => Object.values(m))) {
      expect(assignments(read(file)).has('SCRIBED_ACCESS_KEY'), file).toBe(false);
      expect(assignments(read(file)).has('SCRIBED_GATEWAY_TOKEN'), file).toBe(false);
      expect(read(file)).not.toMatch(/sk_[A-Za-z0-9]/);
    }
  });

  it('shows extra flags the commands accept', () => {
    for (const [unit, files] of Object.entries(EXAMPLES)) {
      // `... dist/cli.js <command> ... $SCRIBED_<X>_ARGS`: the variable whose words are flags.
      const exec = directives(read(unit), 'ExecStart')[0]!;
      const command = /dist\/cli\.js (\S+)/.exec(exec)![1]!;
      const variable = /\$(SCRIBED_[A-Z]+_ARGS)\b/.exec(exec)?.[1];
      if (!variable) continue;
      const help = execFileSync(process.execPath, [CLI, command, '--help'], { encoding: 'utf8' });
      for (const file of Object.values(files)) {
        const text = read(file);
        // The ARGS value and the flags of the "e.g." comment lines under it.
        const shown = [assignments(text).get(variable) ?? '', ...text.split('\n').filter((l) => /^#\s+--/.test(l))].join(' ');
        const flags = shown.match(/--[a-z][a-z-]*/g) ?? [];
        expect(flags.length, `${file} shows ${variable} flags`).toBeGreaterThan(0);
        for (const flag of flags) expect(help, `${file}: ${command} ${flag}`).toContain(`${flag} `);
      }
    }
  });

  describe('scribed.env shows the defaults `scribed serve` applies', () => {
    const saved = { ...process.env };
    afterEach(() => {
      for (const k of Object.keys(process.env)) if (k.startsWith('SCRIBED_')) delete process.env[k];
      Object.assign(process.env, saved);
    });

    it('loading every value it shows gives the configuration of loading none', () => {
      for (const k of Object.keys(process.env)) if (k.startsWith('SCRIBED_')) delete process.env[k];
      const unitEnv = new Map(directives(read('scribed.service'), 'Environment').map((e) => e.split(/=(.*)/s) as [string, string]));
      for (const [name, value] of unitEnv) process.env[name] = value;
      // nodeId is made afresh by each load.
      const withoutNodeId = ({ nodeId: _, ...rest }: ReturnType<typeof loadConfig>) => rest;
      const defaults = withoutNodeId(loadConfig());
      const shown = assignments(read('scribed.env'));
      expect(shown.size).toBeGreaterThan(30);
      // A line without a value has no fixed default (its comment says what applies); the file
      // tells the operator to leave such a line commented out unless giving a value.
      for (const [name, value] of shown) if (value !== '') process.env[name] = value;
      expect(withoutNodeId(loadConfig())).toEqual(defaults);
    });

    it('a setting left empty (NAME= uncommented) is unset: the default applies', () => {
      for (const k of Object.keys(process.env)) if (k.startsWith('SCRIBED_')) delete process.env[k];
      const withoutNodeId = ({ nodeId: _, ...rest }: ReturnType<typeof loadConfig>) => rest;
      const defaults = withoutNodeId(loadConfig());
      const shown = [...assignments(read('scribed.env')).keys()];
      expect(shown).toEqual(expect.arrayContaining(['SCRIBED_HOST', 'SCRIBED_DATA_DIR', 'SCRIBED_ASSETS_DIR', 'SCRIBED_LOG_LEVEL']));
      for (const name of shown) process.env[name] = '';
      expect(withoutNodeId(loadConfig())).toEqual(defaults);
    });
  });
});
