// `scribed stream` as a newcomer met it: --realtime with an account that runs out
// of Characters gives up within --credit-timeout-ms saying so once; a likely wrong --encoding is
// refused before a session exists; a long file name is cut to the title limit; in a terminal
// stderr holds plain lines, no JSON.
import { execFileSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_BASE } from '../../src/core/protocol.js';
import { tempDir } from '../helpers/service.js';
import { loadClips } from '../helpers/audio.js';
import { CLI, freePort, serve, runStream, streamFinished, type StreamRun } from '../helpers/serve-process.js';

const clip = loadClips().find((c) => c.id === 'librivox-0890')!; // 5.3 s
const children = new Set<ChildProcess>();
let dataDir: string;
let url: string;

beforeAll(async () => {
  dataDir = tempDir();
  const port = await freePort();
  await serve(dataDir, port, children);
  url = `http://127.0.0.1:${port}`;
}, 60_000);

afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
});

function account(characters: number): string {
  const out = execFileSync(
    process.execPath,
    [CLI, 'accounts', 'create', '--name', `c${characters}`, '--characters', String(characters), '--json', '--data-dir', dataDir],
    { encoding: 'utf8' },
  );
  return (JSON.parse(out) as { accessKey: string }).accessKey;
}

type Run = StreamRun;

/** `scribed stream ARGS` with the key in the environment; killed (code null) after `killAfterMs`. */
const stream = (args: string[], accessKey: string, killAfterMs = 60_000): Promise<Run> =>
  runStream(url, args, { children, env: { SCRIBED_ACCESS_KEY: accessKey }, killAfterMs });

async function history(accessKey: string): Promise<Array<{ transcriptionId: string; title: string }>> {
  const res = await fetch(`${url}${API_BASE}/stt/transcriptions?limit=100`, { headers: { accessKey } });
  return ((await res.json()) as { data: { items: Array<{ transcriptionId: string; title: string }> } }).data.items;
}

const finished = streamFinished;

describe('scribed stream: the stumbles a newcomer met', () => {
  it('--realtime whose Characters run out mid-second gives up within --credit-timeout-ms, saying so in one line', async () => {
    // 3 Characters pay for 3 s. The raw file is read in 16 KiB pieces, so frames after the
    // first 2 s straddle the third second: the server holds part of a paid second and says
    // accepting: true at each resume, then refuses the next frame. That used to restart the
    // credit clock at every retry, for ever, logging each refused frame.
    const run = await stream(
      ['--input', clip.ulawFile, '--encoding', 'mulaw_8000', '--realtime', '--credit-timeout-ms', '20000'],
      account(3),
      45_000,
    );
    expect(run.code, run.stderr.slice(-1500)).toBe(1);
    expect(run.wallMs).toBeLessThan(3_000 + 20_000 + 8_000);
    expect(run.stderr).toContain('scribed stream: the account has no Characters left and got none within 20 s');
    expect(run.stderr.split('\n').filter((l) => l.includes('NOT_ACCEPTING'))).toHaveLength(0);
    expect(
      run.stderr.split('\n').filter((l) => l.startsWith('scribed stream: warning: the account has no Characters left: waiting up to 20 s')),
    ).toHaveLength(1);
    expect(run.logs.filter((l) => l.msg === 'session resumed').length).toBeGreaterThanOrEqual(2); // it did ask again
    // Warnings: the server's first refusal, and the one line said to the user; no more.
    const warned = run.logs.filter((l) => l.level >= 40 && l.msg !== 'stream failed').map((l) => String(l.msg));
    expect(warned).toHaveLength(2);
    expect(warned[0]).toBe('server changed accepting');
    expect(warned[1]).toMatch(/^the account has no Characters left: waiting up to 20 s/);
  }, 60_000);

  it('a mu-law file streamed as pcm_s16le_16000 is refused before a session exists (exit 2); --ignore-encoding-check streams it', async () => {
    const key = account(1000);
    const run = await stream(['--input', clip.ulawFile, '--encoding', 'pcm_s16le_16000'], key);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('read as pcm_s16le_16000 is noise');
    expect(run.stderr).toContain('--encoding mulaw_8000');
    expect(run.stderr).toContain('--ignore-encoding-check');
    expect(run.logs.some((l) => l.msg === 'streaming')).toBe(false);
    expect(await history(key)).toEqual([]);

    const forced = await stream(['--input', clip.ulawFile, '--encoding', 'pcm_s16le_16000', '--ignore-encoding-check'], key);
    expect(forced.code).toBe(0);
    expect(
      forced.stderr.split('\n').filter((l) => l.startsWith('scribed stream: warning:') && l.includes('is --encoding wrong?')),
    ).toHaveLength(1);
    expect((await history(key)).map((t) => t.transcriptionId)).toEqual([finished(forced).transcriptionId]);
  }, 60_000);

  it("a file name over the title limit: the title is the file's name cut to 200 characters, never inside a surrogate pair", async () => {
    const key = account(1000);
    const dir = path.join(tempDir(), 'a-directory-whose-name-is-not-the-title');
    fs.mkdirSync(dir);
    const name = `${'a'.repeat(199)}😀${'b'.repeat(20)}.ulaw`; // 225 code points, 226 UTF-16 units
    const file = path.join(dir, name);
    fs.copyFileSync(clip.ulawFile, file);
    const run = await stream(['--input', path.relative(process.cwd(), file), '--encoding', 'mulaw_8000'], key);
    expect(run.code, run.stderr.slice(-800)).toBe(0);
    const [row] = await history(key);
    expect(row!.transcriptionId).toBe(finished(run).transcriptionId);
    expect(row!.title).toBe(`${'a'.repeat(199)}😀`);
  }, 60_000);

  it('in a terminal, stderr holds plain lines: no JSON log lines', async () => {
    const nobody = `http://127.0.0.1:${await freePort()}`;
    const cmd = [
      process.execPath,
      CLI,
      'stream',
      '--url',
      nobody,
      '--input',
      clip.ulawFile,
      '--encoding',
      'mulaw_8000',
      '--connect-timeout-ms',
      '1500',
    ]
      .map((a) => `'${a}'`)
      .join(' ');
    // script(1) runs the command on a pseudo-terminal; its output is the terminal's.
    let screen = '';
    try {
      screen = execFileSync('script', ['-qec', cmd, '/dev/null'], {
        encoding: 'utf8',
        env: { ...process.env, SCRIBED_ACCESS_KEY: 'sk_test_not_a_key_0000000000' },
        timeout: 20_000,
      });
    } catch (err) {
      screen = String((err as { stdout?: string }).stdout ?? '');
    }
    const lines = screen.split(/\r?\n/).filter((l) => l.trim() !== '');
    expect(
      lines.some((l) => l.startsWith(`scribed stream: could not create the session at ${nobody}`)),
      screen,
    ).toBe(true);
    expect(
      lines.filter((l) => l.trimStart().startsWith('{')),
      screen,
    ).toEqual([]);
  }, 30_000);
});
