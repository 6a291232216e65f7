// The README's Quick start and Batch transcription blocks, run as a newcomer runs them: the
// shell blocks are taken from README.md itself and run by bash, from the checkout's directory,
// against a real `scribed serve`. Only where the server is changes: the host and port in the
// text (a free port instead of 8080) and the data dir (SCRIBED_DATA_DIR, which `scribed
// accounts create` reads, instead of ./data). `scribed` resolves to this checkout's build, as
// set-up links it (test/ops/command-on-path.test.ts checks the link itself). So the README
// cannot rot: an unset variable, a wrong path or flag, a changed response shape fails here.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, freePort, serve } from '../helpers/serve-process.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');

/** The ```sh blocks of the README section headed `## <title>`. */
function shellBlocks(markdown: string, title: string): string[] {
  const start = markdown.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`README has no section "## ${title}"`);
  const next = markdown.indexOf('\n## ', start + 1);
  const section = markdown.slice(start, next < 0 ? undefined : next);
  return [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

const children = new Set<ChildProcess>();
let dataDir: string;
let binDir: string;
let port: number;

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-readme-'));
  binDir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-readme-bin-'));
  fs.symlinkSync(CLI, path.join(binDir, 'scribed'));
  fs.chmodSync(CLI, 0o755);
  port = await freePort();
  await serve(dataDir, port, children);
}, 120_000);

afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
  fs.rmSync(dataDir, { recursive: true, force: true });
  fs.rmSync(binDir, { recursive: true, force: true });
});

/** Runs a script with bash in the checkout; stdout, stderr and exit status. */
function bash(script: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const proc = spawn('bash', ['-c', script], {
      cwd: ROOT,
      env: { ...process.env, PATH: `${binDir}${path.delimiter}${process.env.PATH ?? ''}`, SCRIBED_DATA_DIR: dataDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(proc);
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    proc.on('close', (status) => {
      children.delete(proc);
      resolve({ status, stdout, stderr });
    });
  });
}

describe('README quick start', () => {
  it('has one Quick start block and one Batch transcription block, on 127.0.0.1:8080', () => {
    const quick = shellBlocks(README, 'Quick start');
    const batch = shellBlocks(README, 'Batch transcription');
    expect(quick).toHaveLength(1);
    expect(batch).toHaveLength(1);
    expect(quick[0]).toContain('http://127.0.0.1:8080');
    expect(batch[0]).toContain('http://127.0.0.1:8080');
  });

  it('runs as written: an account, the sample client and scribed stream with their finals, a batch job completed and downloaded', async () => {
    const [quick] = shellBlocks(README, 'Quick start');
    const [batch] = shellBlocks(README, 'Batch transcription');
    const onThisServer = (block: string) => block.replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`);
    // Markers between the blocks (the README's own text is unchanged) tell their outputs apart;
    // `set -u` fails on a variable a block uses without setting, as `$ID` once was.
    const script = ['set -euo pipefail', onThisServer(quick!), 'echo "::batch::"', onThisServer(batch!)].join('\n');
    const r = await bash(script);
    expect(r.status, r.stderr).toBe(0);
    const [quickOut, batchOut] = r.stdout.split('::batch::\n') as [string, string];

    // The sample client's events: its session, partials, a final with words, and the SRT.
    const session = { sessionId: /^session (rts_\S+)/m.exec(quickOut)?.[1] ?? '' };
    expect(session.sessionId).toMatch(/^rts_/);
    expect(quickOut).toMatch(/^final \[\d+-\d+ ms\]: \S+/m);
    expect(quickOut).toMatch(/^\d+\n\d\d:\d\d:\d\d,\d{3} --> \d\d:\d\d:\d\d,\d{3}\n\S/m);
    // scribed stream on the WAV, no --encoding: its finals, timed, with the words of the clip.
    expect(quickOut).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3} --> \d\d:\d\d:\d\d\.\d{3}\] .*dashwood/m);

    // The batch job: its id printed, polled to COMPLETED, its SRT downloaded, History lists it.
    const id = /^transcription (\S+)$/m.exec(batchOut)?.[1];
    expect(id).toMatch(/^[a-z]+_/);
    expect(batchOut).toContain('"status":"COMPLETED"');
    expect(batchOut).toMatch(/^1\n\d\d:\d\d:\d\d,\d{3} --> \d\d:\d\d:\d\d,\d{3}\n\S/m);
    const history = batchOut
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .at(-1)!;
    expect(history).toContain(`"transcriptionId":"${id}"`);
    expect(history).toContain(`"sessionId":"${session.sessionId}"`);
  }, 180_000);
});
