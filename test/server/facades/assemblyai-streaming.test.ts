// AssemblyAI's Universal-Streaming API (v3) served by scribed, driven by AssemblyAI's own SDK
// (`assemblyai` 4.x, `client.streaming.transcriber`) as an application would: over wss through
// HAProxy terminating TLS with a test certificate (the SDK refuses anything else), the SDK in
// its own process trusting that certificate (NODE_EXTRA_CA_CERTS). Real speech on the store
// under test: partial and end-of-turn Turns with words, formatted turns, ForceEndpoint,
// Terminate answered with Termination, each socket a native session (History row,
// Characters); a temporary token opens one socket and no second, an expired one none; a wrong
// key 20 times in a row on one client is 20 authentication errors; a refused parameter is the
// SDK's input validation error.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capturedLogger, startService, storeDump, tempDir, type TestService } from '../../helpers/service.js';
import { startHaproxy, testCertificate, type Haproxy, type TestCertificate } from '../../helpers/haproxy.js';
import { loadClips } from '../../helpers/audio.js';
import { wordErrorRate } from '../../../src/core/wer.js';
import type { ProvisionedAccount } from '../../../src/accounts/provision.js';

const execFileAsync = promisify(execFile);
const CLIENT = path.resolve(import.meta.dirname, '../../helpers/sdk/assemblyai-streaming.mjs');
const HISTORY = '/sound_clone/api/v1/stt/transcriptions';
const clips = loadClips();
const long = clips.find((c) => c.id === 'librivox-0870')!;
const short = clips.find((c) => c.id === 'librivox-0890')!;

let svc: TestService;
let proxy: Haproxy;
let cert: TestCertificate;
let dir: string;
let alice: ProvisionedAccount;
const logLines: string[] = [];

beforeAll(async () => {
  dir = tempDir('scribed-aai-stream-');
  svc = await startService({ maxDecoders: 2, logger: capturedLogger('info', logLines) });
  alice = await svc.account(10_000n);
  cert = await testCertificate(dir);
  proxy = await startHaproxy({ serverPorts: [Number(new URL(svc.baseUrl).port)], tlsPem: cert.pemFile });
  fs.writeFileSync(path.join(dir, 'long.pcm16'), long.pcm16k);
}, 60_000);
afterAll(async () => {
  await proxy?.stop();
  await svc?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

type Event = Record<string, any> & { type: string; at: number };
interface Refusal {
  message: string;
  code: number | null;
}
interface Outcome {
  events: Event[];
  errors: Refusal[];
  termination: (Record<string, number> & { at: number }) | null;
  firstAudioAt: number;
  forceEndpointAt?: number;
  terminateAt: number;
  token?: string;
  reused?: Refusal;
  expired?: Refusal;
  badParams?: Refusal;
  refusals?: Refusal[];
}

async function sdk(args: Record<string, unknown>, key = alice.accessKey): Promise<Outcome> {
  const { stdout } = await execFileAsync(process.execPath, [CLIENT, JSON.stringify({ baseURL: proxy.url, key, ...args })], {
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, NODE_EXTRA_CA_CERTS: cert.certFile },
  });
  return JSON.parse(stdout.trim().split('\n').pop()!) as Outcome;
}

async function native(p: string, key: string): Promise<any> {
  return (await fetch(`${svc.baseUrl}${p}`, { headers: { accessKey: key } })).json();
}

const turns = (o: Outcome) => o.events.filter((e) => e.type === 'Turn');

describe('AssemblyAI Universal-Streaming through the assemblyai SDK over TLS', () => {
  it('pcm_s16le 16 kHz with format_turns: Begin, partial Turns with words, end-of-turn Turns unformatted then formatted, Termination; a native session with its History row and Characters', async () => {
    const before = BigInt((await native('/sound_clone/api/v1/account', alice.accessKey)).data.characters);
    const o = await sdk({
      mode: 'stream',
      params: {
        sampleRate: 16000,
        encoding: 'pcm_s16le',
        formatTurns: true,
        maxTurnSilence: 600,
        speechModel: 'universal-streaming-english',
      },
      audioFile: path.join(dir, 'long.pcm16'),
      bytesPerSecond: 32_000,
      chunkMs: 100,
      speed: 2,
      trailingSilenceMs: 1500,
      waitMs: 1500,
    });
    expect(o.errors).toEqual([]);
    const begin = o.events.find((e) => e.type === 'Begin')!;
    expect(begin.id).toMatch(/^rts_/);
    expect(begin.expires_at).toBeGreaterThan(Date.now() / 1000 + 3600);
    const all = turns(o);
    const partials = all.filter((t) => !t.end_of_turn);
    const ends = all.filter((t) => t.end_of_turn);
    expect(partials.length).toBeGreaterThan(0);
    // Partials are live: the first came while the audio was still being sent.
    expect(partials[0]!.at).toBeLessThan(o.firstAudioAt + (long.durationSec * 1000) / 2);
    for (const p of partials) {
      expect(p).toMatchObject({ turn_is_formatted: false, end_of_turn_confidence: 0 });
      expect(p.words.length).toBeGreaterThan(0);
      // The transcript is the turn's final words (those two partials agreed on).
      expect(p.transcript).toBe(
        p.words
          .filter((w: any) => w.word_is_final)
          .map((w: any) => w.text)
          .join(' '),
      );
    }
    expect(ends.length).toBeGreaterThan(0);
    // Each end of turn twice: the recognizer's words, then formatted; turn_order counts turns.
    expect(ends.map((t) => t.turn_is_formatted)).toEqual(ends.flatMap(() => [false, true]).slice(0, ends.length));
    const formatted = ends.filter((t) => t.turn_is_formatted);
    expect(formatted.map((t) => t.turn_order)).toEqual(formatted.map((_, i) => i));
    for (const t of ends) {
      expect(t.end_of_turn_confidence).toBe(1);
      expect(t.words.length).toBeGreaterThan(0);
      for (const w of t.words) {
        expect(Object.keys(w).sort()).toEqual(['confidence', 'end', 'start', 'text', 'word_is_final']);
        expect(w.word_is_final).toBe(true);
        expect(w.end).toBeGreaterThanOrEqual(w.start);
      }
    }
    expect(wordErrorRate(long.reference, formatted.map((t) => t.transcript).join(' ')).wer).toBeLessThan(0.5);
    // Terminate (the SDK's close) is answered with Termination: the audio sent, in seconds.
    expect(o.termination).toMatchObject({ type: 'Termination' });
    expect(o.termination!.audio_duration_seconds).toBeGreaterThanOrEqual(Math.floor(long.durationSec));
    expect(o.termination!.audio_duration_seconds).toBeLessThanOrEqual(Math.ceil(long.durationSec + 1.5));
    expect(o.termination!.session_duration_seconds).toBeGreaterThanOrEqual(1);
    // The socket's session is a native one: its History row completed, Characters charged.
    let rows: any[] = [];
    for (let i = 0; i < 50; i++) {
      rows = (await native(`${HISTORY}?limit=100`, alice.accessKey)).data.items.filter((r: any) => r.title === 'AssemblyAI streaming');
      if (rows[0]?.status === 'COMPLETED') break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(rows[0]).toMatchObject({ kind: 'realtime', status: 'COMPLETED', sessionId: begin.id });
    expect(BigInt((await native('/sound_clone/api/v1/account', alice.accessKey)).data.characters)).toBeLessThan(before);
  }, 90_000);

  it('a temporary token on pcm_mulaw with ForceEndpoint: the turn ends at once; the token opens no second socket, an expired one none', async () => {
    const o = await sdk({
      mode: 'stream',
      token: true,
      // A turn would end only after 20 s of silence: the end of turn below is ForceEndpoint's.
      params: { sampleRate: 8000, encoding: 'pcm_mulaw', maxTurnSilence: 20_000 },
      audioFile: short.ulawFile,
      bytesPerSecond: 8000,
      chunkMs: 100,
      speed: 4,
      forceEndpoint: true,
      reuseToken: true,
      expiredToken: true,
    });
    expect(o.errors).toEqual([]);
    const ends = turns(o).filter((t) => t.end_of_turn);
    expect(ends.length).toBe(1);
    expect(ends[0]!.at).toBeGreaterThan(o.forceEndpointAt!);
    expect(ends[0]!.at).toBeLessThan(o.terminateAt);
    expect(ends[0]!.turn_is_formatted).toBe(false);
    expect(wordErrorRate(short.reference, ends[0]!.transcript).wer).toBeLessThan(0.5);
    expect(o.termination).toMatchObject({ type: 'Termination' });
    // Single use: the same token again is not authorized (4001, the SDK's AuthFailed, not retried).
    expect(o.reused).toEqual({ code: 4001, message: 'Not Authorized: this temporary token was already used' });
    expect(o.expired).toEqual({ code: 4001, message: 'Not Authorized: this temporary token has expired' });
    // The token is neither written to the log (the request line's token value is redacted)
    // nor stored anywhere: it is signed, and only its id marks it used.
    const token = o.token!;
    expect(token.length).toBeGreaterThan(40);
    expect(logLines.some((l) => l.includes('/v3/ws?') && l.includes('token=[Redacted]'))).toBe(true);
    expect(logLines.join('\n')).not.toContain(token.slice(0, 30));
    expect(await storeDump(svc)).not.toContain(token.slice(0, 30));
  }, 90_000);

  it('a wrong key 20 times in a row on one client: 20 authentication errors; a refused parameter is an input validation error', async () => {
    const bad = await sdk({ mode: 'badKey', rounds: 20, params: { sampleRate: 16000 } }, 'sk_0000000000000000_not-a-key');
    expect(bad.refusals).toEqual(Array(20).fill({ code: 4001, message: 'Not Authorized' }));
    const refused = await sdk({
      mode: 'badKey',
      rounds: 1,
      params: { sampleRate: 16000, speakerLabels: true },
    });
    expect(refused.refusals).toEqual([{ code: 3006, message: expect.stringMatching(/^Input validation error: speaker_labels: /) }]);
    const rate = await sdk({ mode: 'badKey', rounds: 1, params: { sampleRate: 11025 } });
    expect(rate.refusals![0]).toMatchObject({ code: 3006, message: expect.stringContaining('sample_rate') });
  }, 60_000);
});
