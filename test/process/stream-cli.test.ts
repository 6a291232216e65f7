// `scribed stream` as an operator runs it, against a real `scribed serve`: stdin piped from
// sox, mp3 and flac files made with ffmpeg here, the microphone path through
// node-record-lpcm16 (with `sox` on PATH replaced by a script that plays a file: this machine
// has no sound card), the --out files, and --realtime with the client's CPU per audio second.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/service.js';
import { loadClips } from '../helpers/audio.js';
import { CLI, createAccount, freePort, serve } from '../helpers/serve-process.js';

const clip = loadClips().find((c) => c.id === 'librivox-0890')!; // 5.3 s
const second = loadClips().find((c) => c.id === 'librivox-0930')!; // 3.3 s
const children = new Set<ChildProcess>();
let dataDir: string;
let url: string;
let keyFile: string;
let accessKey: string;

beforeAll(async () => {
  dataDir = tempDir();
  const port = await freePort();
  accessKey = createAccount(dataDir);
  keyFile = path.join(dataDir, 'access-key');
  fs.writeFileSync(keyFile, `${accessKey}\n`, { mode: 0o600 });
  await serve(dataDir, port, children);
  url = `http://127.0.0.1:${port}`;
}, 60_000);

afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  wallMs: number;
  logs: Array<Record<string, any>>;
}

/** Run `scribed stream ARGS`, optionally with `shell` feeding its stdin. */
function stream(
  args: string[],
  opts: { stdinFrom?: string[]; env?: Record<string, string>; url?: string; signalAfterMs?: number; signalOnLog?: string } = {},
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const proc = spawn(process.execPath, [CLI, 'stream', '--url', opts.url ?? url, ...args], {
      stdio: [opts.stdinFrom ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...opts.env },
    });
    children.add(proc);
    if (opts.stdinFrom) {
      const feeder = spawn(opts.stdinFrom[0]!, opts.stdinFrom.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
      feeder.stdout.pipe(proc.stdin!);
    }
    let stdout = '';
    let stderr = '';
    proc.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
    proc.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    proc.once('error', reject);
    if (opts.signalAfterMs !== undefined) setTimeout(() => proc.kill('SIGTERM'), opts.signalAfterMs);
    // After a log line rather than a fixed time: on a loaded machine the CLI can take over 2 s
    // to load, and a signal before its handlers exist kills it outright.
    if (opts.signalOnLog !== undefined) {
      const onData = () => {
        if (stderr.includes(`"msg":"${opts.signalOnLog}"`)) {
          proc.stderr!.off('data', onData);
          proc.kill('SIGTERM');
        }
      };
      proc.stderr!.on('data', onData);
    }
    proc.once('close', (code) => {
      children.delete(proc);
      const logs = stderr
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, any>);
      if (process.env.SCRIBED_TEST_LOG) process.stderr.write(stderr);
      resolve({ code, stdout, stderr, logs, wallMs: Date.now() - t0 });
    });
  });
}

function finished(run: Run): Record<string, any> {
  const rec = run.logs.find((l) => l.msg === 'stream finished');
  if (!rec) throw new Error(`no 'stream finished' log; exit ${run.code}; logs: ${JSON.stringify(run.logs.slice(-3))}`);
  return rec;
}

function outFiles(out: string, sessionId: string) {
  const jsonl = fs
    .readFileSync(path.join(out, `${sessionId}.jsonl`), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  const txt = fs.readFileSync(path.join(out, `${sessionId}.txt`), 'utf8');
  return { jsonl, txt, dir: fs.readdirSync(out) };
}

describe('scribed stream as a process', () => {
  it('stdin piped from sox: prints finals, writes --out, key from a file, never on the command line', async () => {
    const out = tempDir();
    // Two sentences with a second of silence between them.
    const twoSentences = path.join(tempDir(), 'two-sentences.wav');
    execFileSync('sox', [clip.wavFile, second.wavFile, twoSentences, 'pad', `1@${clip.durationSec}`]);
    const run = await stream(
      ['--input', '-', '--encoding', 'mulaw_8000', '--access-key-file', keyFile, '--out', out, '--title', 'sox pipe'],
      {
        stdinFrom: ['sox', twoSentences, '-t', 'raw', '-r', '8000', '-e', 'mu-law', '-b', '8', '-c', '1', '-'],
      },
    );
    expect(run.code).toBe(0);
    const done = finished(run);
    expect(done.serverCapturedSamples).toBe(done.capturedSamples);
    const files = outFiles(out, done.sessionId);
    expect(files.dir.sort()).toEqual([`${done.sessionId}.jsonl`, `${done.sessionId}.txt`]);
    // By default one final per utterance (segmentCommitMode vad): several segments, in order,
    // each ended by a pause, none past the audio.
    expect(files.jsonl.length).toBeGreaterThanOrEqual(2);
    expect(files.jsonl.map((s: any) => s.segmentId)).toEqual(files.jsonl.map((_: unknown, i: number) => `seg_${i}`));
    for (let i = 1; i < files.jsonl.length; i++)
      expect(Number(files.jsonl[i].startSample)).toBeGreaterThanOrEqual(Number(files.jsonl[i - 1].endSample));
    expect(Number(files.jsonl.at(-1).endSample)).toBeLessThanOrEqual(done.capturedSamples);
    const text = files.jsonl.map((s: any) => s.text).join(' ');
    expect(text).toContain('rather');
    expect(files.txt.trim().split(/\s+/)).toEqual(text.trim().split(/\s+/));
    for (const seg of files.jsonl) expect(run.stdout).toContain(String(seg.text).trim());
    expect(JSON.stringify(run.logs)).not.toContain(accessKey);
  }, 60_000);

  it('--segment-commit-mode manual gives the API default: one segment to the end of the audio', async () => {
    const out = tempDir();
    const run = await stream([
      '--input',
      clip.ulawFile,
      '--encoding',
      'mulaw_8000',
      '--access-key-file',
      keyFile,
      '--out',
      out,
      '--segment-commit-mode',
      'manual',
    ]);
    expect(run.code).toBe(0);
    const done = finished(run);
    const files = outFiles(out, done.sessionId);
    expect(files.jsonl).toHaveLength(1);
    expect(files.jsonl[0].endSample).toBe(String(done.capturedSamples));
  }, 60_000);

  it('a wrong --url fails within --connect-timeout-ms, exit 1, saying what to check', async () => {
    const nobody = `http://127.0.0.1:${await freePort()}`;
    const run = await stream(
      ['--input', clip.ulawFile, '--encoding', 'mulaw_8000', '--access-key-file', keyFile, '--connect-timeout-ms', '1500'],
      { url: nobody },
    );
    expect(run.code).toBe(1);
    expect(run.wallMs).toBeLessThan(10_000);
    expect(run.stderr).toContain(`scribed stream: could not create the session at ${nobody} within 2 s`);
    expect(run.stderr).toContain('Check --url');
  }, 30_000);

  it('the first SIGTERM while the server was never reached ends the process at once, exit 1', async () => {
    const nobody = `http://127.0.0.1:${await freePort()}`;
    const run = await stream(['--input', clip.ulawFile, '--encoding', 'mulaw_8000', '--access-key-file', keyFile], {
      url: nobody,
      signalOnLog: 'creating the session failed; retrying',
    });
    expect(run.code).toBe(1);
    expect(run.wallMs).toBeLessThan(8_000);
    expect(run.stderr).toContain('stopped by SIGTERM before the session was created: nothing was sent');
  }, 30_000);

  it('an account without Characters fails after --credit-timeout-ms with the command that fixes it', async () => {
    const broke = JSON.parse(
      execFileSync(process.execPath, [CLI, 'accounts', 'create', '--name', 'broke', '--characters', '0', '--json', '--data-dir', dataDir], {
        encoding: 'utf8',
      }),
    ) as { accessKey: string };
    const brokeKey = path.join(tempDir(), 'broke-key');
    fs.writeFileSync(brokeKey, `${broke.accessKey}\n`, { mode: 0o600 });
    const run = await stream([
      '--input',
      clip.ulawFile,
      '--encoding',
      'mulaw_8000',
      '--access-key-file',
      brokeKey,
      '--credit-timeout-ms',
      '1500',
    ]);
    expect(run.code).toBe(1);
    expect(run.wallMs).toBeLessThan(15_000);
    expect(run.stderr).toContain('no Characters left');
    expect(run.stderr).toContain('scribed accounts credit --account');
  }, 30_000);

  it('mp3 and flac files made with ffmpeg are decoded to the session encoding', async () => {
    const dir = tempDir();
    for (const ext of ['mp3', 'flac']) {
      const file = path.join(dir, `call.${ext}`);
      execFileSync('ffmpeg', ['-loglevel', 'error', '-y', '-i', clip.wavFile, file]);
      const out = tempDir();
      const run = await stream(['--input', file, '--encoding', 'mulaw_8000', '--out', out], { env: { SCRIBED_ACCESS_KEY: accessKey } });
      expect(run.code).toBe(0);
      const done = finished(run);
      // Decoders pad or trim a few ms at the ends; the rest of the clip must all be there.
      expect(Math.abs(done.capturedSamples - clip.durationSec * 8000), `${ext}: ${JSON.stringify(done)}`).toBeLessThan(8000 * 0.1);
      const files = outFiles(out, done.sessionId);
      expect(files.txt).toMatch(/rather/);
    }
  }, 90_000);

  it('a file ffmpeg cannot decode fails with exit 1, not a short transcript', async () => {
    const bad = path.join(tempDir(), 'bad.mp3');
    fs.writeFileSync(bad, 'not audio');
    const run = await stream(['--input', bad, '--encoding', 'mulaw_8000'], { env: { SCRIBED_ACCESS_KEY: accessKey } });
    expect(run.code).toBe(1);
    expect(run.logs.find((l) => l.msg === 'stream failed')?.err).toMatch(/ffmpeg could not decode/);
  }, 30_000);

  it('a wrong --encoding is a short usage error pointing to --help, not the whole help', async () => {
    const run = await stream(['--input', '-', '--encoding', 'mulaw_16000', '--access-key-file', keyFile]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('Argument: encoding, Given: "mulaw_16000"');
    expect(run.stderr).toContain('run `scribed stream --help` for the options');
    expect(run.stderr).not.toContain('--buffer-seconds');
    expect(run.stderr.trim().split('\n').length).toBeLessThanOrEqual(4);
  });

  it('refuses to start without an access key (there is no flag for it)', async () => {
    const run = await stream(['--input', '-', '--encoding', 'mulaw_8000'], { env: { SCRIBED_ACCESS_KEY: '' } });
    expect(run.code).toBe(2);
  });

  it('microphone path: node-record-lpcm16 drives `sox` (here a stand-in playing a file)', async () => {
    const bin = tempDir();
    // The stand-in takes node-record-lpcm16's arguments (rate, 16-bit, raw, '-') and plays
    // the clip as the "device" would deliver it.
    fs.writeFileSync(
      path.join(bin, 'sox'),
      `#!/bin/sh\nexec /usr/bin/sox "${clip.wavFile}" -t raw -r 8000 -e signed-integer -b 16 -c 1 -\n`,
      { mode: 0o755 },
    );
    const out = tempDir();
    const run = await stream(['--input', 'mic', '--encoding', 'mulaw_8000', '--out', out], {
      env: { SCRIBED_ACCESS_KEY: accessKey, PATH: `${bin}:${process.env.PATH}` },
    });
    expect(run.code).toBe(0);
    const done = finished(run);
    expect(done.capturedSamples).toBe(Math.round(clip.durationSec * 8000));
    expect(outFiles(out, done.sessionId).txt).toMatch(/rather/);
  }, 60_000);

  it('--realtime paces the input at real time; reports the client CPU per audio second', async () => {
    const t0 = Date.now();
    const run = await stream(['--input', clip.ulawFile, '--encoding', 'mulaw_8000', '--realtime'], {
      env: { SCRIBED_ACCESS_KEY: accessKey },
    });
    const wall = (Date.now() - t0) / 1000;
    expect(run.code).toBe(0);
    const done = finished(run);
    expect(wall).toBeGreaterThanOrEqual(clip.durationSec);
    expect(done.cpuSecondsPerAudioSecond).toBeGreaterThan(0);
    process.stderr.write(
      `client CPU (--realtime, mu-law 8 kHz): ${done.cpuSeconds.toFixed(3)} s CPU for ${done.audioSeconds} s audio = ${done.cpuSecondsPerAudioSecond.toFixed(4)} CPU s per audio s (process total, start-up included)\n`,
    );
  }, 60_000);
});
