// A voice-agent framework's client against scribed's Deepgram live socket: LiveKit Agents'
// Node Deepgram STT plugin (`@livekit/agents-plugin-deepgram` 1.9), pointed at a real server
// by its `baseUrl` option with the account's access key as the Deepgram key, fed AudioFrames
// of real speech as a room's track would deliver them (no LiveKit room or server: the STT
// stream is the plugin's own object). Its default options send every switch, off ones too
// (`dictation=false`, `diarize=false`, `profanity_filter=false`): scribed accepts a refused
// feature switched off (it asks for nothing scribed does not do) and refuses it switched on.
// With the defaults the plugin streams, and its interim and final transcripts, its end of
// speech and the native session behind it are checked (docs/compat.md).
import { initializeLogger, stt as agentsStt } from '@livekit/agents';
import * as deepgram from '@livekit/agents-plugin-deepgram';
import { AudioFrame } from '@livekit/rtc-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startService, type TestService } from '../../helpers/service.js';
import { loadClips } from '../../helpers/audio.js';
import { wordErrorRate } from '../../../src/core/wer.js';
import type { ProvisionedAccount } from '../../../src/accounts/provision.js';

const clip = loadClips().find((c) => c.id === 'librivox-0870')!;
const HISTORY = '/sound_clone/api/v1/stt/transcriptions';
const SESSIONS = '/sound_clone/api/v1/stt/realtime/sessions';
const RATE = 16000;
/** 20 ms, the frame a LiveKit audio track delivers. */
const FRAME_SAMPLES = 320;

let svc: TestService;

// The plugin's classes log through the framework's logger, which must exist first.
initializeLogger({ pretty: false, level: 'silent' });

beforeAll(async () => {
  svc = await startService({ maxDecoders: 2 });
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

async function native(p: string, key: string): Promise<any> {
  return (await fetch(`${svc.baseUrl}${p}`, { headers: { accessKey: key } })).json();
}
const balance = async (key: string) => BigInt((await native('/sound_clone/api/v1/account', key)).data.characters);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Run {
  events: agentsStt.SpeechEvent[];
  errors: Error[];
}

/** The clip pushed into the plugin's stream at real time in 20 ms frames, then a second of
 * silence, flush (the plugin sends Finalize) and end of input (CloseStream); every event the
 * stream yields until it ends, and every error the STT emitted. */
async function streamClip(account: ProvisionedAccount, options: Partial<deepgram.STTOptions>): Promise<Run> {
  const stt = new deepgram.STT({ apiKey: account.accessKey, baseUrl: svc.wsBase, sampleRate: RATE, ...options });
  const errors: Error[] = [];
  stt.on('error', (e: { error: Error }) => errors.push(e.error));
  const stream = stt.stream();
  const events: agentsStt.SpeechEvent[] = [];
  const reading = (async () => {
    for await (const ev of stream) events.push(ev);
  })();
  const pcm = clip.pcm16k;
  const samples = new Int16Array(pcm.buffer.slice(pcm.byteOffset, pcm.byteOffset + pcm.length));
  const audio = new Int16Array(samples.length + RATE);
  audio.set(samples);
  const started = Date.now();
  for (let i = 0, n = 0; i < audio.length; i += FRAME_SAMPLES, n++) {
    const frame = audio.slice(i, i + FRAME_SAMPLES);
    stream.pushFrame(new AudioFrame(frame, RATE, 1, frame.length));
    const due = started + (n + 1) * 20 - Date.now();
    if (due > 0) await sleep(due);
  }
  stream.flush();
  stream.endInput();
  await Promise.race([reading, sleep(60_000)]);
  await stt.close();
  return { events, errors };
}

/** The HTTP answer to a refused WebSocket upgrade. */
function refusedUpgrade(url: string, key: string): Promise<{ status: number; body: { err_code: string; err_msg: string } }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: { Authorization: `Token ${key}` } });
    ws.on('open', () => reject(new Error('upgrade was accepted')));
    ws.on('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
    });
    ws.on('error', () => undefined);
  });
}

const kinds = (run: Run) => run.events.map((e) => agentsStt.SpeechEventType[e.type]);
const texts = (run: Run, type: agentsStt.SpeechEventType) => run.events.filter((e) => e.type === type).map((e) => e.alternatives![0].text);

describe('LiveKit Agents Deepgram STT plugin (Node) against GET /v1/listen', () => {
  it('a refused feature switched on is still refused before the upgrade, named, nothing created or charged', async () => {
    const account = await svc.account(1_000n);
    const run = await streamClip(account, { dictation: true });
    expect(run.events.filter((e) => e.type !== agentsStt.SpeechEventType.RECOGNITION_USAGE)).toEqual([]);
    expect(run.errors.length).toBeGreaterThan(0);
    expect(run.errors[0]!.message).toMatch(/status 400/);
    expect((await native(`${HISTORY}?limit=100`, account.accessKey)).data.items).toEqual([]);
    expect(await balance(account.accessKey)).toBe(1_000n);
    // The refusal the plugin reports only as "status 400", asked as the plugin asks it: the
    // handshake's answer names the parameter.
    const query =
      'model=nova-3&punctuate=true&smart_format=true&dictation=true&diarize=false&numerals=false&no_delay=true&interim_results=true&encoding=linear16&vad_events=true&sample_rate=16000&channels=1&endpointing=25&filler_words=false&profanity_filter=false&language=en-US&mip_opt_out=false';
    const refusal = await refusedUpgrade(`${svc.wsBase}/v1/listen?${query}`, account.accessKey);
    expect(refusal.status).toBe(400);
    expect(refusal.body.err_code).toBe('INVALID_QUERY_PARAMETER');
    expect(refusal.body.err_msg).toMatch(/^dictation: /);
  }, 60_000);

  it('with its defaults (every switch sent, the unsupported ones false): interim and final transcripts of real speech, end of speech, a completed session of the account', async () => {
    const account = await svc.account(1_000n);
    const run = await streamClip(account, {});
    expect(run.errors).toEqual([]);
    const seen = kinds(run);
    expect(seen[0]).toBe('START_OF_SPEECH');
    expect(seen).toContain('INTERIM_TRANSCRIPT');
    expect(seen).toContain('END_OF_SPEECH');
    const finals = texts(run, agentsStt.SpeechEventType.FINAL_TRANSCRIPT);
    expect(finals.length).toBeGreaterThan(0);
    // The recognizer's own accuracy on these clips is 20-35% WER (docs/engines.md).
    expect(wordErrorRate(clip.reference, finals.join(' ')).wer).toBeLessThan(0.45);
    // smart_format=true (the plugin's default): readable text, sentence case.
    expect(finals[0]![0]).toMatch(/[A-Z]/);
    // Word timings reach the plugin's aligned transcript, in order, inside the clip.
    const words = run.events
      .filter((e) => e.type === agentsStt.SpeechEventType.FINAL_TRANSCRIPT)
      .flatMap((e) => e.alternatives![0].words ?? []);
    expect(words.length).toBeGreaterThan(10);
    let last = 0;
    for (const w of words) {
      const [start, end] = [w.startTime!, w.endTime!];
      expect(start).toBeGreaterThanOrEqual(last - 0.001);
      expect(end).toBeGreaterThan(start);
      last = end;
    }
    expect(last).toBeLessThan(clip.durationSec + 0.5);

    // Behind it: one native real-time session of the account, ended by the plugin's CloseStream.
    const rows = (await native(`${HISTORY}?limit=100`, account.accessKey)).data.items;
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ title: 'Deepgram live' });
    const text = await (
      await fetch(`${svc.baseUrl}${HISTORY}/${rows[0].id ?? rows[0].transcriptionId}/transcript?format=txt`, {
        headers: { accessKey: account.accessKey },
      })
    ).text();
    expect(wordErrorRate(clip.reference, text).wer).toBeLessThan(0.45);
    let status = '';
    for (let i = 0; i < 200 && status !== 'COMPLETED'; i++) {
      status = (await native(`${SESSIONS}/${rows[0].sessionId}`, account.accessKey)).data.status;
      if (status !== 'COMPLETED') await sleep(50);
    }
    expect(status).toBe('COMPLETED');
    // Charged per second of the audio the plugin sent: its energy filter drops silence after a
    // second of quiet, so at most the clip and the second of silence after it.
    const charged = 1_000n - (await balance(account.accessKey));
    expect(charged).toBeGreaterThanOrEqual(BigInt(Math.floor(clip.durationSec)));
    expect(charged).toBeLessThanOrEqual(BigInt(Math.ceil(clip.durationSec + 1)));
  }, 90_000);
});
