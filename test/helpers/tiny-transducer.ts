// The tiny sherpa-onnx streaming transducer (scripts/make-tiny-transducer.py), built once per
// test process into a temp dir: the sherpa-onnx backend's whole path runs in CI without a
// real model. Its words mean nothing; tests assert plumbing, not text.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const GENERATOR = path.resolve(import.meta.dirname, '../../scripts/make-tiny-transducer.py');
/** Debian's interpreter, which has python3-onnx (scripts/setup.sh); the python3 first on PATH
 * may be another one without it. */
const PYTHON = '/usr/bin/python3';

let built: string | null = null;

/** The model directory (encoder.onnx, decoder.onnx, joiner.onnx, tokens.txt). Throws, naming
 * the missing package, when the generator cannot run: the tests that use it must not pass
 * without it. */
export function tinyTransducerDir(): string {
  if (built !== null && fs.existsSync(path.join(built, 'tokens.txt'))) return built;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-tiny-transducer-'));
  try {
    execFileSync(PYTHON, [GENERATOR, dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString() ?? '';
    throw new Error(
      `cannot build the tiny sherpa-onnx model with ${PYTHON} ${GENERATOR} (is Debian's python3-onnx installed? scripts/setup.sh installs it): ${stderr || (err as Error).message}`,
    );
  }
  built = dir;
  process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}
