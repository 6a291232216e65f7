// OpenAI's Realtime API for transcription served by scribed, driven by OpenAI's own client
// (`openai` 7.x, `OpenAIRealtimeWS` from `openai/realtime/ws` with `intent: 'transcription'`)
// as an application would: over wss through HAProxy terminating TLS with a test certificate
// (the SDK refuses anything else), the SDK in its own process trusting that certificate
// (NODE_EXTRA_CA_CERTS). Real speech on the store under test: server VAD on pcm16 at 24 kHz
// with partial (delta) and completed events, manual commit on G.711 mu-law and A-law, each
// socket a native session (History row, Characters), errors in OpenAI's shape, and a wrong key
// 20 times in a row read as 20 authentication refusals.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, tempDir, type TestService } from '../../helpers/service.js';
import { startHaproxy, testCertificate, type Haproxy, type TestCertificate } from '../../helpers/haproxy.js';
import { loadClips } from '../../helpers/audio.js';
import { wordErrorRate } from '../../../src/core/wer.js';
import type { ProvisionedAccount } from '../../../src/accounts/provision.js';

const execFileAsync = promisify(execFile);
const CLIENT = path.resolve(import.meta.dirname, '../../helpers/sdk/openai-realtime.mjs');
const HISTORY = '/sound_clone/api/v1/stt/transcriptions';
const clips = loadClips();
const long = clips.find((c) => c.id === 'librivox-0870')!;
const short = clips.find((c) => c.id === 'librivox-0890')!;

let svc: TestService;
let proxy: Haproxy;
let cert: TestCertificate;
let dir: string;
let alice: ProvisionedAccount;

beforeAll(async () => {
  dir = tempDir('scribed-openai-rt-');
  svc = await startService({ maxDecoders: 2 });
  alice = await svc.account(10_000n);
  cert = await testCertificate(dir);
  proxy = await startHaproxy({ serverPorts: [Number(new URL(svc.baseUrl).port)], tlsPem: cert.pemFile });
  // The telephony forms and OpenAI's 24 kHz PCM of the clips (sox: resampled, G.711-encoded).
  await execFileAsync('sox', [long.wavFile, '-r', '24000', '-t', 'raw', '-e', 'signed', '-b', '16', path.join(dir, 'long.pcm24')]);
  await execFileAsync('sox', [short.wavFile, '-r', '8000', '-t', 'raw', '-e', 'a-law', path.join(dir, 'short.alaw')]);
}, 60_000);
afterAll(async () => {
  await proxy?.stop();
  await svc?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

type Event = Record<string, any> & { type: string; at: number };
interface Outcome {
  events: Event[];
  errors: string[];
  closed?: { code: number };
  firstAudioAt?: number;
}

async function sdk(args: Record<string, unknown>, key = alice.accessKey): Promise<Outcome & { errors: string[] }> {
  const { stdout } = await execFileAsync(process.execPath, [CLIENT, JSON.stringify({ baseURL: `${proxy.url}/v1`, key, ...args })], {
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, NODE_EXTRA_CA_CERTS: cert.certFile },
  });
  return JSON.parse(stdout.trim().split('\n').pop()!) as Outcome;
}

async function native(p: string, key: string): Promise<any> {
  return (await fetch(`${svc.baseUrl}${p}`, { headers: { accessKey: key } })).json();
}

const bareWords = (text: string) =>
  text
    .split(/\s+/)
    .map((w) => w.toLowerCase().replace(/[^\p{L}\p{N}']/gu, ''))
    .filter((w) => w !== '');
const of = (o: Outcome, type: string) => o.events.filter((e) => e.type === type);
const completedText = (o: Outcome) =>
  of(o, 'conversation.item.input_audio_transcription.completed')
    .map((e) => e.transcript as string)
    .join(' ');

describe('OpenAI Realtime transcription through the openai SDK over TLS', () => {
  it('server VAD on pcm16 24 kHz: speech started, deltas, stopped, committed and completed with the words; a native session with its History row and Characters', async () => {
    const before = BigInt((await native('/sound_clone/api/v1/account', alice.accessKey)).data.characters);
    const o = await sdk({
      mode: 'stream',
      session: {
        type: 'transcription',
        audio: {
          input: {
            format: { type: 'audio/pcm', rate: 24000 },
            transcription: { model: 'gpt-4o-transcribe', language: 'en' },
            turn_detection: { type: 'server_vad', silence_duration_ms: 500 },
          },
        },
      },
      audioFile: path.join(dir, 'long.pcm24'),
      bytesPerSecond: 48_000,
      chunkMs: 100,
      speed: 2,
      trailingSilenceMs: 2000,
      completions: 1,
      waitMs: 30_000,
    });
    expect(o.errors).toEqual([]);
    expect(of(o, 'session.created')[0]!.session).toMatchObject({
      type: 'transcription',
      audio: { input: { format: { type: 'audio/pcm', rate: 24000 } } },
    });
    expect(of(o, 'session.updated')[0]!.session.audio.input).toMatchObject({
      transcription: { model: 'gpt-4o-transcribe', language: 'en' },
      turn_detection: { type: 'server_vad', silence_duration_ms: 500 },
    });
    const started = of(o, 'input_audio_buffer.speech_started');
    const completed = of(o, 'conversation.item.input_audio_transcription.completed');
    expect(started.length).toBeGreaterThan(0);
    expect(completed.length).toBeGreaterThan(0);
    const item = completed[0]!.item_id as string;
    // One item's life in order: started, deltas, stopped, committed, the last deltas, completed.
    const life = o.events.filter((e) => e.item_id === item).map((e) => e.type);
    expect(life[0]).toBe('input_audio_buffer.speech_started');
    expect(life.at(-1)).toBe('conversation.item.input_audio_transcription.completed');
    expect(life.filter((t) => !t.endsWith('.delta'))).toEqual([
      'input_audio_buffer.speech_started',
      'input_audio_buffer.speech_stopped',
      'input_audio_buffer.committed',
      'conversation.item.input_audio_transcription.completed',
    ]);
    expect(life.indexOf('conversation.item.input_audio_transcription.delta')).toBeLessThan(
      life.indexOf('input_audio_buffer.speech_stopped'),
    );
    // The deltas carry the live words of the same speech. They are the recognizer's partial
    // hypothesis, which its final may still revise (docs/compat.md): the completed transcript
    // is what counts, so they are compared by word error rate, not for equality.
    for (const c of completed) {
      const deltas = o.events
        .filter((e) => e.item_id === c.item_id && e.type === 'conversation.item.input_audio_transcription.delta')
        .map((e) => e.delta as string);
      expect(deltas.length).toBeGreaterThan(0);
      expect(wordErrorRate(bareWords(c.transcript).join(' '), bareWords(deltas.join('')).join(' ')).wer).toBeLessThan(0.6);
    }
    expect(of(o, 'input_audio_buffer.speech_started')[0]!.audio_start_ms).toBeGreaterThanOrEqual(0);
    expect(wordErrorRate(long.reference, completedText(o)).wer).toBeLessThan(0.5);
    // Partials are live: the item's first delta came before its speech_stopped (asserted above:
    // the order of its events), not only with the final.
    // The socket's session is a native one: its History row completes when the socket closes.
    let rows: any[] = [];
    for (let i = 0; i < 50; i++) {
      rows = (await native(`${HISTORY}?limit=100`, alice.accessKey)).data.items.filter(
        (r: any) => r.title === 'OpenAI realtime transcription',
      );
      if (rows[0]?.status === 'COMPLETED') break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(rows[0]).toMatchObject({ kind: 'realtime', status: 'COMPLETED' });
    expect(BigInt((await native('/sound_clone/api/v1/account', alice.accessKey)).data.characters)).toBeLessThan(before);
  }, 90_000);

  it('manual commit on G.711 mu-law (telephony) and A-law: committed then completed, no speech events', async () => {
    for (const f of [
      { format: { type: 'audio/pcmu' }, file: short.ulawFile, silence: 0xff },
      { format: { type: 'audio/pcma' }, file: path.join(dir, 'short.alaw'), silence: 0xd5 },
    ]) {
      const o = await sdk({
        mode: 'stream',
        session: { type: 'transcription', audio: { input: { format: f.format, turn_detection: null } } },
        audioFile: f.file,
        bytesPerSecond: 8000,
        chunkMs: 200,
        speed: 4,
        commit: true,
        completions: 1,
        waitMs: 30_000,
      });
      expect(o.errors).toEqual([]);
      expect(of(o, 'session.updated')[0]!.session.audio.input).toMatchObject({ format: f.format, turn_detection: null });
      expect(of(o, 'input_audio_buffer.speech_started')).toEqual([]);
      const committed = of(o, 'input_audio_buffer.committed');
      const trace = JSON.stringify(
        o.events.filter((e) => !e.type.startsWith('session')).map((e) => [e.type, e.item_id, e.transcript ?? e.delta, e.error]),
      );
      const completed = of(o, 'conversation.item.input_audio_transcription.completed');
      expect(committed.length, trace).toBe(1);
      expect(completed.length, trace).toBe(1);
      expect(completed[0]!.item_id).toBe(committed[0]!.item_id);
      expect(completed[0]!.usage).toMatchObject({ type: 'duration' });
      expect(wordErrorRate(short.reference, completed[0]!.transcript).wer).toBeLessThan(0.5);
    }
  }, 120_000);

  it('refusals are OpenAI error events: an unknown event, an empty commit, a format not served, a bad model; the socket stays usable', async () => {
    const o = await sdk({
      mode: 'events',
      send: [
        { type: 'response.create', event_id: 'ev_1' },
        { type: 'input_audio_buffer.commit', event_id: 'ev_2' },
        {
          type: 'session.update',
          event_id: 'ev_3',
          session: { type: 'transcription', audio: { input: { format: { type: 'audio/pcm', rate: 16000 } } } },
        },
        {
          type: 'session.update',
          event_id: 'ev_4',
          session: { type: 'transcription', audio: { input: { transcription: { model: 'whisper-9' } } } },
        },
        { type: 'session.update', event_id: 'ev_5', session: { type: 'realtime' } },
        { type: 'transcription_session.update', event_id: 'ev_6', session: { input_audio_format: 'g711_ulaw', turn_detection: null } },
      ],
    });
    const errors = of(o, 'error').map((e) => e.error);
    for (const e of errors) expect(Object.keys(e).sort()).toEqual(['code', 'event_id', 'message', 'param', 'type']);
    expect(errors.map((e) => [e.event_id, e.code, e.param])).toEqual([
      ['ev_1', 'invalid_value', 'type'],
      ['ev_2', 'input_audio_buffer_commit_empty', null],
      ['ev_3', 'invalid_value', 'session.audio.input.format.rate'],
      ['ev_4', 'model_not_found', 'session.audio.input.transcription.model'],
      ['ev_5', 'invalid_value', 'session.type'],
    ]);
    // The SDK reports each as an error too.
    expect(o.errors.length).toBe(5);
    // The beta form answers in its own shape.
    expect(of(o, 'transcription_session.updated')[0]!.session).toMatchObject({ input_audio_format: 'g711_ulaw', turn_detection: null });
  }, 60_000);

  it('a wrong key 20 times in a row on one client: 20 refusals with 401, nothing opened', async () => {
    const o = await sdk({ mode: 'badKey', rounds: 20 }, 'sk_not_a_key');
    expect(o.errors).toEqual(Array(20).fill('Unexpected server response: 401'));
    // No intent (a speech-to-speech model session) is refused before the key is used.
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(`${svc.baseUrl}/v1/realtime?model=gpt-4o-realtime-preview`, {
        headers: {
          authorization: `Bearer ${alice.accessKey}`,
          connection: 'Upgrade',
          upgrade: 'websocket',
          'sec-websocket-version': '13',
          'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
        },
      });
      req.on('response', (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString('utf8')));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('upgrade', () => reject(new Error('upgraded')));
      req.on('error', reject);
      req.end();
    });
    expect(answer.status).toBe(400);
    expect((JSON.parse(answer.body) as { error: { param: string } }).error.param).toBe('model');
  }, 60_000);
});
