// The previous release of scribed, built beside this checkout for the rolling upgrade test
// (test/process/rolling-upgrade.test.ts; docs/scaling.md, "Rolling upgrades"): the commit
// before the drain work (the parent of the first commit that added src/server/drain.ts),
// checked out in a temporary git worktree under the OS temp dir and compiled with this
// checkout's TypeScript. node_modules, the native addon (build/) and the models are this
// checkout's, linked: that release's package.json names the same dependencies.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');

export interface PreviousRelease {
  commit: string;
  /** Its dist/cli.js. */
  cli: string;
  buildMs: number;
  /** Remove the worktree (and its registration in this repository). */
  remove(): Promise<void>;
}

const git = async (args: string[], cwd = ROOT) => (await execFileAsync('git', args, { cwd, encoding: 'utf8' })).stdout.trim();

/** The commit the previous release is built from. */
export async function previousReleaseCommit(): Promise<string> {
  // A shallow clone (CI's `git clone --depth N`) lacks the history: say so rather than build
  // the wrong commit or fail on a missing parent. `git fetch --unshallow` makes it whole.
  const shallow = await git(['rev-parse', '--is-shallow-repository']).catch((err: Error) => {
    throw new Error(`the rolling upgrade test needs this checkout's git history (git failed: ${err.message})`);
  });
  if (shallow === 'true')
    throw new Error(
      'this clone is shallow: the rolling upgrade test builds the previous release from its commit and needs the full history (git fetch --unshallow)',
    );
  const firstDrain = (await git(['log', '--reverse', '--format=%H', '--', 'src/server/drain.ts'])).split('\n')[0];
  if (!firstDrain)
    throw new Error('this clone has no history of src/server/drain.ts: the rolling upgrade test needs a full clone (not shallow)');
  return git(['rev-parse', `${firstDrain}^`]);
}

export async function buildPreviousRelease(): Promise<PreviousRelease> {
  const commit = await previousReleaseCommit();
  // A build made before (reruns on a slow machine): SCRIBED_TEST_PREVIOUS_CLI=path/to/dist/cli.js.
  const prebuilt = process.env.SCRIBED_TEST_PREVIOUS_CLI;
  if (prebuilt) return { commit, cli: prebuilt, buildMs: 0, remove: async () => undefined };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-previous-'));
  const tree = path.join(dir, 'scribed');
  await git(['worktree', 'add', '--detach', tree, commit]);
  const remove = async () => {
    await git(['worktree', 'remove', '--force', tree]).catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
    await git(['worktree', 'prune']).catch(() => undefined);
  };
  try {
    for (const shared of ['node_modules', 'build', 'models'])
      fs.symlinkSync(fs.realpathSync(path.join(ROOT, shared)), path.join(tree, shared));
    const started = Date.now();
    const tsc = path.join(fs.realpathSync(path.join(ROOT, 'node_modules')), 'typescript/bin/tsc');
    await execFileAsync(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: tree, encoding: 'utf8' });
    return { commit, cli: path.join(tree, 'dist/cli.js'), buildMs: Date.now() - started, remove };
  } catch (err) {
    await remove();
    throw err;
  }
}
