// What a newcomer's first hour leaves in the checkout and reads in it: the files the docs'
// examples write into the working directory (an access key, `scribed rtp --out ./rtp-out`'s
// transcripts) are ignored by git, so a `git add .` cannot commit a key; the docs name ids as
// the server makes them; the samples' README needs nothing outside the checkout.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { newId } from '../../src/core/ids.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');

/** The paths of `paths` git ignores in this checkout. */
function ignored(paths: string[]): string[] {
  try {
    return execFileSync('git', ['check-ignore', '--no-index', ...paths], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .filter((l) => l !== '');
  } catch (err) {
    // Exit 1: none is ignored.
    if ((err as { status?: number }).status === 1) return [];
    throw err;
  }
}

describe("the checkout after the docs' examples", () => {
  it('ignores a saved access key and the rtp transcripts, and still tracks the sources', () => {
    expect(ignored(['key', 'demo.key', 'rtp-out/rts_1.txt', 'out/a.txt'])).toEqual(['key', 'demo.key', 'rtp-out/rts_1.txt', 'out/a.txt']);
    expect(ignored(['src/client/access-key.ts', 'docs/rtp.md', 'test/ops/checkout-hygiene.test.ts'])).toEqual([]);
  });

  it("the docs' rtp example writes where git ignores", () => {
    const outs = [...read('docs/rtp.md').matchAll(/--out (\.\/[\w-]+)/g)].map((m) => `${m[1]!.slice(2)}/x.txt`);
    expect(outs.length).toBeGreaterThan(0);
    expect(ignored(outs)).toEqual(outs);
  });

  it('docs/desk.md names account ids as the server makes them', () => {
    const prefix = newId('acc', new Date()).split('_')[0]!;
    const text = read('docs/desk.md');
    expect(text).not.toMatch(/\bacct_/);
    expect(text).toContain(`--account ${prefix}_...`);
  });

  it('samples/README.md points at nothing outside the checkout', () => {
    expect(read('samples/README.md')).not.toMatch(/\.\.\//);
  });
});
