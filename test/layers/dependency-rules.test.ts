// The layer rules (.dependency-cruiser.cjs, run by `npm run lint:deps` in `npm test`) catch
// what they are for: a tiny tree with one breach of each rule is cruised with the project's
// own configuration, as the script runs it, and every breach (and nothing else) is reported.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
const DEPCRUISE = path.join(ROOT, 'node_modules/.bin/depcruise');
const CONFIG = path.join(ROOT, '.dependency-cruiser.cjs');

// file -> its source; imports are NodeNext-style (`./x.js` names `./x.ts`), as in src/.
const TREE: Record<string, string> = {
  'src/core/pure.ts': "import { createHash } from 'node:crypto';\nexport const h = () => createHash('sha256');\n",
  'src/core/clean.ts': "import { h } from './pure.js';\nexport const c = h;\n",
  'src/core/upward.ts': "import type { S } from '../store/s.js';\nexport type U = S;\n",
  'src/core/io.ts': "import fs from 'node:fs';\nexport const r = fs.readFileSync;\n",
  'src/core/net.ts': "import net from 'node:net';\nexport const ip = net.isIP;\n",
  'src/text/t.ts': "import type { S } from '../store/s.js';\nexport type T = S;\n",
  'src/store/s.ts': "import type { X } from '../session/x.js';\nexport type S = X;\n",
  'src/engine/e.ts': "import { settings } from '../config.js';\nexport const e = settings;\n",
  'src/config.ts': 'export const settings = 1;\n',
  'src/session/x.ts':
    "import { a } from '../server/a.js';\nimport { helper } from '../../test/helpers/h.js';\nexport type X = number;\nexport const x = [a, helper];\n",
  'src/server/a.ts': "import { b } from './b.js';\nexport const a = () => b;\n",
  'src/server/b.ts': "import { a } from './a.js';\nexport const b = () => a;\n",
  'src/client/c.ts': "import { settings } from '../config.js';\nexport const c = settings;\n",
  'test/helpers/h.ts': 'export const helper = 1;\n',
  'test/a.test.ts': "import { shared } from './b.test.js';\nexport const a = shared;\n",
  'test/b.test.ts': 'export const shared = 1;\n',
  // vitest: a devDependency of the fixture; pino: installed, but not in its package.json.
  'src/obs/o.ts': "import { describe } from 'vitest';\nimport { pino } from 'pino';\nexport const o = [describe, pino];\n",
};

interface Violation {
  rule: { name: string };
  from: string;
  to: string;
  cycle?: Array<{ name: string }>;
}

let dir: string;
let violations: Violation[];

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-layers-'));
  for (const [file, text] of Object.entries(TREE)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), text);
  }
  fs.copyFileSync(path.join(ROOT, 'tsconfig.json'), path.join(dir, 'tsconfig.json'));
  fs.writeFileSync(
    path.join(dir, 'package.json'),
    JSON.stringify({ name: 'layers-fixture', type: 'module', private: true, devDependencies: { vitest: '*' } }),
  );
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  // Exits non-zero with violations: the output is still the report.
  const out = await run(DEPCRUISE, ['src', 'test', '--config', CONFIG, '--output-type', 'json'], { cwd: dir, maxBuffer: 16 << 20 }).catch(
    (err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }),
  );
  violations = (JSON.parse(out.stdout) as { summary: { violations: Violation[] } }).summary.violations;
}, 120_000);

afterAll(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** A package's files by the package's name. */
const target = (to: string) => to.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//)?.[1] ?? to;
const found = () => violations.map((v) => `${v.rule.name}: ${v.from} -> ${target(v.to)}`).sort();

describe('the layer rules', () => {
  it('fail an import cycle', () => {
    const cycles = violations.filter((v) => v.rule.name === 'no-circular');
    expect(cycles).toHaveLength(1);
    expect(cycles[0]!.cycle!.map((m) => m.name).sort()).toEqual(['src/server/a.ts', 'src/server/b.ts']);
  });

  it('report each breach of a layer, and nothing the layers allow', () => {
    expect(found()).toEqual(
      [
        'client-on-core: src/client/c.ts -> src/config.ts',
        'core-does-no-io: src/core/io.ts -> fs',
        'core-does-no-network-io: src/core/net.ts -> net',
        'core-imports-only-core: src/core/upward.ts -> src/store/s.ts',
        'engine-below-the-service: src/engine/e.ts -> src/config.ts',
        'no-circular: src/server/a.ts -> src/server/b.ts',
        'no-test-code-in-src: src/session/x.ts -> test/helpers/h.ts',
        'no-dev-dependencies-in-src: src/obs/o.ts -> vitest',
        'no-importing-test-files: test/a.test.ts -> test/b.test.ts',
        'no-undeclared-packages: src/obs/o.ts -> pino',
        'only-the-process-imports-the-server: src/session/x.ts -> src/server/a.ts',
        'session-below-the-server: src/session/x.ts -> src/server/a.ts',
        'store-below-the-service: src/store/s.ts -> src/session/x.ts',
        'text-on-core: src/text/t.ts -> src/store/s.ts',
      ].sort(),
    );
  });
});
