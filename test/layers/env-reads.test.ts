// Configuration is read only in src/config.ts (and, below it, the engine's own
// src/engine/environment.ts): the ESLint rule in eslint.config.js refuses a `process.env` read
// anywhere else in src/. A planted read is linted with the project's own configuration,
// through the same eslint binary `npm run lint` runs (the source given on stdin, named as a
// file of src/): it fails, naming the rule; the allowed files and tests pass.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const ESLINT = path.join(ROOT, 'node_modules/.bin/eslint');

function lint(file: string, source: string): { status: number | null; out: string } {
  const run = spawnSync(ESLINT, ['--stdin', '--stdin-filename', file], { cwd: ROOT, input: source, encoding: 'utf8', timeout: 120_000 });
  return { status: run.status, out: `${run.stdout}${run.stderr}` };
}

const READ = "export const level = process.env.SCRIBED_LOG_LEVEL ?? 'info';\n";
const DESTRUCTURED = 'const { env } = process;\nexport const home = env.HOME;\n';

describe('process.env outside the configuration', () => {
  it('fails lint in any other module of src/, read or destructured, naming the rule', () => {
    for (const [file, source] of [
      ['src/obs/planted.ts', READ],
      ['src/engine/backends/planted.ts', READ],
      ['src/cli/planted.ts', DESTRUCTURED],
    ] as const) {
      const r = lint(file, source);
      expect(r.status, `${file}: ${r.out}`).toBe(1);
      expect(r.out).toContain('no-restricted-properties');
      expect(r.out).toContain('src/config.ts');
    }
  }, 120_000);

  it('passes in src/config.ts, src/engine/environment.ts and outside src/ (tests set the environment)', () => {
    for (const file of ['src/config.ts', 'src/engine/environment.ts', 'test/layers/planted.test.ts']) {
      const r = lint(file, READ);
      expect(r.status, `${file}: ${r.out}`).toBe(0);
    }
  }, 120_000);
});
