// `scribed stream --channels 2` as an operator runs it, against a real `scribed serve`: a
// stereo WAV (agent left, customer right, real speech on each, made with sox) decoded by ffmpeg
// keeping both channels, streamed as a call of two legs (docs/calls.md "Stereo"). Each leg's
// words equal its channel streamed alone; the merged call transcript puts each party's line in
// time order with its label; a stereo file streamed without --channels 2 is warned about; bad
// flags exit 2 before anything is sent.
import { execFileSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/service.js';
import { loadClips } from '../helpers/audio.js';
import { createAccount, freePort, serve, runStream, streamFinished, type StreamRun } from '../helpers/serve-process.js';

const agentClip = loadClips().find((c) => c.id === 'librivox-0870')!; // 7.1 s
const customerClip = loadClips().find((c) => c.id === 'librivox-0920')!; // 6.05 s
const children = new Set<ChildProcess>();
let dataDir: string;
let url: string;
let keyFile: string;
let accessKey: string;
const dir = tempDir('scribed-stereo-');
const files = { left: path.join(dir, 'agent.wav'), right: path.join(dir, 'customer.wav'), stereo: path.join(dir, 'call.wav') };

type Json = any;

beforeAll(async () => {
  const gap = 0.5;
  execFileSync('sox', [agentClip.wavFile, files.left, 'pad', '0', String(customerClip.durationSec + gap)]);
  execFileSync('sox', [customerClip.wavFile, files.right, 'pad', String(agentClip.durationSec + gap), '0']);
  execFileSync('sox', ['-M', files.left, files.right, files.stereo]);
  dataDir = tempDir();
  const port = await freePort();
  accessKey = createAccount(dataDir);
  keyFile = path.join(dataDir, 'access-key');
  fs.writeFileSync(keyFile, `${accessKey}\n`, { mode: 0o600 });
  // Both legs of the call stream at once from one account (docs/calls.md).
  await serve(dataDir, port, children, ['--max-streams-per-account', '0']);
  url = `http://127.0.0.1:${port}`;
}, 60_000);

afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
});

type Run = StreamRun;

const stream = (args: string[]): Promise<Run> => runStream(url, ['--access-key-file', keyFile, ...args], { children });

async function get(p: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${url}/sound_clone/api/v1${p}`, { headers: { accessKey } });
  return { status: res.status, text: await res.text() };
}

const finished = (run: Run): Json => streamFinished(run);

/** The recognizer's words of a session's server-side transcript. */
async function sessionWords(transcriptionId: string): Promise<string[]> {
  const t = JSON.parse((await get(`/stt/transcriptions/${transcriptionId}/transcript?format=json`)).text);
  return t.segments.flatMap((s: Json) =>
    String(s.rawText ?? s.text)
      .toLowerCase()
      .split(/\s+/)
      .filter(Boolean),
  );
}

describe('scribed stream --channels 2', () => {
  it('streams a stereo file as a two-leg call whose per-speaker words equal each channel streamed alone', async () => {
    const out = tempDir();
    const run = await stream([
      '--input',
      files.stereo,
      '--encoding',
      'pcm_s16le_16000',
      '--channels',
      '2',
      '--out',
      out,
      '--title',
      'support call',
    ]);
    expect(run.code, run.stderr.slice(-1500)).toBe(0);
    const done = finished(run);
    expect(done.callId).toMatch(/^call_/);
    expect(done.legs.map((l: Json) => l.speaker)).toEqual(['agent', 'customer']);
    const samples = Math.round((agentClip.durationSec + customerClip.durationSec + 0.5) * 16_000);
    for (const leg of done.legs) {
      expect(leg.capturedSamples).toBe(samples);
      expect(leg.acknowledgedSamples).toBe(samples);
    }

    const call = JSON.parse((await get(`/stt/calls/${done.callId}`)).text).data;
    expect(call.externalId).not.toBeNull(); // the stream id: a rerun lands on the same call
    expect(call.title).toBe('support call');
    expect(call.status).toBe('COMPLETED');
    expect(call.legs.map((l: Json) => [l.speaker, l.kind])).toEqual([
      ['agent', 'realtime'],
      ['customer', 'realtime'],
    ]);

    // Each channel alone, through the same command, mono.
    const alone: Record<string, string[]> = {};
    for (const [speaker, file] of [
      ['agent', files.left],
      ['customer', files.right],
    ] as const) {
      const mono = await stream(['--input', file, '--encoding', 'pcm_s16le_16000']);
      expect(mono.code).toBe(0);
      expect(mono.stderr).not.toContain('--channels 2');
      alone[speaker] = await sessionWords(finished(mono).transcriptionId);
    }
    const agentWords = await sessionWords(done.legs[0].transcriptionId);
    const customerWords = await sessionWords(done.legs[1].transcriptionId);
    expect(agentWords.length).toBeGreaterThan(10);
    expect(customerWords.length).toBeGreaterThan(10);
    expect(agentWords).toEqual(alone.agent);
    expect(customerWords).toEqual(alone.customer);
    expect(agentWords.join(' ')).toContain('dashwood');
    expect(customerWords.join(' ')).toContain('amiable');

    // stdout labels each final; --out holds each leg's files and the merged call transcript.
    expect(run.stdout).toMatch(/\] agent: /);
    expect(run.stdout).toMatch(/\] customer: /);
    const names = fs.readdirSync(out).sort();
    for (const leg of done.legs) expect(names).toEqual(expect.arrayContaining([`${leg.sessionId}.jsonl`, `${leg.sessionId}.txt`]));
    expect(names).toContain(`${done.callId}.txt`);
    const merged = fs
      .readFileSync(path.join(out, `${done.callId}.txt`), 'utf8')
      .trim()
      .split('\n');
    expect(merged.join('\n')).toBe((await get(`/stt/calls/${done.callId}/transcript?format=txt`)).text.trim());
    expect(merged[0]).toMatch(/^\[00:00:0\d\.\d{3}\] agent: /);
    expect(merged.findIndex((l) => l.includes('] customer: '))).toBeGreaterThan(merged.findLastIndex((l) => l.includes('] agent: ')));
  }, 240_000);

  it('an 8 kHz stereo call recording: --encoding pcm_s16le_16000 is refused by name before a session exists; without --encoding it streams as two 8 kHz legs heard right', async () => {
    const call8k = path.join(dir, 'call-8k.wav');
    execFileSync('sox', [files.stereo, '-r', '8000', call8k]);
    const refused = await stream(['--input', call8k, '--encoding', 'pcm_s16le_16000', '--channels', '2']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('is 8000 Hz audio: --encoding pcm_s16le_16000 (16000 Hz) would upsample it');
    expect(refused.stderr).toContain('Run with --encoding pcm_s16le_8000');
    expect(refused.stdout).toBe('');

    const run = await stream(['--input', call8k]);
    expect(run.code, run.stderr.slice(-1500)).toBe(0);
    const done = finished(run);
    expect(done.legs.map((l: Json) => l.speaker)).toEqual(['agent', 'customer']);
    const samples = Math.round((agentClip.durationSec + customerClip.durationSec + 0.5) * 8000);
    for (const leg of done.legs) expect(Math.abs(leg.capturedSamples - samples)).toBeLessThanOrEqual(8);
    const session = JSON.parse((await get(`/stt/realtime/sessions/${done.legs[0].sessionId}`)).text).data;
    expect(session.effectiveOptions.inputEncoding).toBe('pcm_s16le_8000');
    expect((await sessionWords(done.legs[0].transcriptionId)).join(' ')).toContain('dashwood');
    expect((await sessionWords(done.legs[1].transcriptionId)).join(' ')).toContain('amiable');
  }, 240_000);

  it('warns when a stereo file is streamed without --channels 2', async () => {
    const run = await stream(['--input', files.stereo, '--encoding', 'pcm_s16le_16000']);
    expect(run.code).toBe(0);
    expect(run.stderr).toContain(
      'has 2 channels; they are mixed down to one. If each channel is one party (agent and customer), run with --channels 2',
    );
  }, 120_000);

  it('refuses flags that cannot make a call, exit 2, before anything is sent', async () => {
    const cases: Array<[string[], string]> = [
      [['--input', files.stereo, '--encoding', 'mulaw_8000', '--channels', '2'], '--channels 2 takes 16-bit PCM'],
      [
        ['--input', files.stereo, '--encoding', 'pcm_s16le_16000', '--channel-speakers', 'a,b'],
        '--channel-speakers applies only with --channels 2',
      ],
      [
        ['--input', files.stereo, '--encoding', 'pcm_s16le_16000', '--channels', '2', '--channel-speakers', 'agent'],
        '--channel-speakers: must be an array of 2',
      ],
      [
        ['--input', files.stereo, '--encoding', 'pcm_s16le_16000', '--channels', '2', '--channel-speakers', 'rep,rep'],
        '--channel-speakers: must name a different speaker',
      ],
    ];
    for (const [args, message] of cases) {
      const run = await stream(args);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr).toContain(message);
    }
  }, 120_000);
});
