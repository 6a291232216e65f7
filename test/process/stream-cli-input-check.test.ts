// `scribed stream` against a real `scribed serve` with the wrong audio: a WAV piped
// as mu-law, an MP3 on stdin, the development set's mu-law sent as PCM and its PCM as mu-law;
// and the History title of a file input.
import { execFileSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/service.js';
import { devSetDir, loadClips } from '../helpers/audio.js';
import { createAccount, freePort, serve, runStream, streamFinished, type StreamRun } from '../helpers/serve-process.js';

const dev = loadClips(devSetDir());
const clip = dev.find((c) => c.id === 'librivox-0880')!; // 3.0 s
const children = new Set<ChildProcess>();
let url: string;
let accessKey: string;

beforeAll(async () => {
  const dataDir = tempDir();
  const port = await freePort();
  accessKey = createAccount(dataDir);
  await serve(dataDir, port, children);
  url = `http://127.0.0.1:${port}`;
}, 60_000);

afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
});

type Run = StreamRun;

/** `scribed stream ARGS`, stdin fed from `stdin` (bytes) when given. */
const stream = (args: string[], stdin?: Buffer): Promise<Run> =>
  runStream(url, args, { children, env: { SCRIBED_ACCESS_KEY: accessKey }, stdin });

const finished = streamFinished;
const warnings = (run: Run) => run.stderr.split('\n').filter((l) => l.startsWith('scribed stream: warning:'));

async function historyTitle(transcriptionId: string): Promise<string> {
  const res = await fetch(`${url}/sound_clone/api/v1/stt/transcriptions/${transcriptionId}`, { headers: { accessKey } });
  return ((await res.json()) as { data: { title: string } }).data.title;
}

describe('scribed stream with the wrong audio', () => {
  it('a WAV piped as mu-law is refused before a session exists, naming the right --encoding (exit 2)', async () => {
    const run = await stream(['--input', '-', '--encoding', 'mulaw_8000'], fs.readFileSync(clip.wavFile));
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      'scribed stream: stdin is a WAV file of 16-bit PCM, mono, 16000 Hz, not mulaw_8000: run again with --encoding pcm_s16le_16000',
    );
    expect(run.logs.some((l) => l.msg === 'streaming')).toBe(false);
  }, 30_000);

  it('a WAV piped in --encoding is read past its header: exactly its data chunk is captured, no warning', async () => {
    const run = await stream(['--input', '-', '--encoding', 'pcm_s16le_16000'], fs.readFileSync(clip.wavFile));
    expect(run.code).toBe(0);
    const done = finished(run);
    expect(done.capturedSamples).toBe(clip.pcm16k.length / 2); // not 22 samples of header more
    expect(run.logs.some((l) => l.msg === 'the input is a WAV file in --encoding: its header is skipped')).toBe(true);
    expect(warnings(run)).toEqual([]);
    expect(run.stdout).toMatch(/young man/);
    // stdin keeps the server's default title.
    expect(await historyTitle(done.transcriptionId)).toBe('Untitled recording');
  }, 60_000);

  it('an MP3 on stdin is refused with the ffmpeg command that decodes it (exit 2)', async () => {
    const mp3 = execFileSync('ffmpeg', ['-loglevel', 'error', '-i', clip.wavFile, '-f', 'mp3', 'pipe:1']);
    const run = await stream(['--input', '-', '--encoding', 'mulaw_8000'], mp3);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('scribed stream: stdin holds an MP3 file (ID3 tag), not raw mulaw_8000 audio');
    expect(run.stderr).toContain(
      'ffmpeg -loglevel error -i pipe:0 -f mulaw -ar 8000 -ac 1 pipe:1 | scribed stream --input - --encoding mulaw_8000',
    );
  }, 30_000);

  it('the dev set mu-law sent as PCM, and its PCM sent as mu-law, with --ignore-encoding-check, warn once naming the likely encoding', async () => {
    // Refused by default before a session exists (test/process/stream-cli-stumbles.test.ts);
    // --ignore-encoding-check streams it with the warning.
    const asPcm = await stream(['--input', clip.ulawFile, '--encoding', 'pcm_s16le_8000', '--ignore-encoding-check']);
    expect(asPcm.code).toBe(0);
    expect(warnings(asPcm)).toHaveLength(1);
    expect(warnings(asPcm)[0]).toContain('read as pcm_s16le_8000 is noise');
    expect(warnings(asPcm)[0]).toContain('--encoding mulaw_8000');
    expect(asPcm.logs.filter((l) => l.likelyEncoding === 'mulaw_8000' && l.level === 40)).toHaveLength(1);

    const raw = path.join(tempDir(), 'call.raw');
    fs.writeFileSync(raw, clip.pcm16k);
    const asMulaw = await stream(['--input', raw, '--encoding', 'mulaw_8000', '--ignore-encoding-check']);
    expect(asMulaw.code).toBe(0);
    expect(warnings(asMulaw)).toHaveLength(1);
    expect(warnings(asMulaw)[0]).toContain('16-bit PCM (--encoding pcm_s16le_RATE');
    expect(asMulaw.logs.filter((l) => l.likelyEncoding === 'pcm_s16le_8000')).toHaveLength(1);
  }, 90_000);

  it('the right encoding gives no warning, and a file names its History row unless --title says otherwise', async () => {
    const run = await stream(['--input', clip.ulawFile, '--encoding', 'mulaw_8000']);
    expect(run.code).toBe(0);
    expect(warnings(run)).toEqual([]);
    expect(await historyTitle(finished(run).transcriptionId)).toBe('librivox-0880.ulaw');
    const titled = await stream(['--input', clip.ulawFile, '--encoding', 'mulaw_8000', '--title', 'Call 7']);
    expect(await historyTitle(finished(titled).transcriptionId)).toBe('Call 7');
  }, 60_000);
});
