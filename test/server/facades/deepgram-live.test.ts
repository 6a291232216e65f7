// Deepgram's live API (GET /v1/listen as a WebSocket) served by scribed, driven by Deepgram's
// own SDK (`@deepgram/sdk` 4.x `listen.live`, pointed at the server by its base URL) and by the
// `ws` package in the browser's subprotocol form, against a real server on the store under
// test: paced mu-law with interim and final Results, Finalize and CloseStream, endpointing with
// SpeechStarted and UtteranceEnd on PCM sent in odd-sized pieces, refused parameters and keys
// before the upgrade (the key never in a log), and the native session behind each stream
// (History row, transcript, Characters; a dropped socket leaves it paused, transcript kept).
import { createClient, LiveTranscriptionEvents, type DeepgramClient } from '@deepgram/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { capturedLogger, startService, type TestService } from '../../helpers/service.js';
import { chunks, loadClips } from '../../helpers/audio.js';
import { wordErrorRate } from '../../../src/core/wer.js';
import type { ProvisionedAccount } from '../../../src/accounts/provision.js';

const clips = loadClips();
const clip = clips.find((c) => c.id === 'librivox-0870')!;
const second = clips.find((c) => c.id === 'librivox-0920')!;
const HISTORY = '/sound_clone/api/v1/stt/transcriptions';
const SESSIONS = '/sound_clone/api/v1/stt/realtime/sessions';

let svc: TestService;
let alice: ProvisionedAccount;
let dg: DeepgramClient;
const logLines: string[] = [];

beforeAll(async () => {
  svc = await startService({ maxDecoders: 2, logger: capturedLogger('info', logLines) });
  alice = await svc.account(10_000n);
  dg = createClient(alice.accessKey, { global: { url: svc.baseUrl } });
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

async function native(p: string, key: string): Promise<any> {
  return (await fetch(`${svc.baseUrl}${p}`, { headers: { accessKey: key } })).json();
}
const balance = async (key: string) => BigInt((await native('/sound_clone/api/v1/account', key)).data.characters);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every message of one type the SDK connection emitted, in order. */
function collect(conn: ReturnType<DeepgramClient['listen']['live']>) {
  const all: any[] = [];
  for (const ev of [
    LiveTranscriptionEvents.Transcript,
    LiveTranscriptionEvents.Metadata,
    LiveTranscriptionEvents.UtteranceEnd,
    LiveTranscriptionEvents.SpeechStarted,
    LiveTranscriptionEvents.Unhandled,
  ]) {
    conn.on(ev, (m: any) => all.push(m));
  }
  return all;
}

function waitFor<T>(pred: () => T | undefined, ms: number, what: string): Promise<T> {
  const until = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const tick = () => {
      const v = pred();
      if (v !== undefined && v !== false) return resolve(v);
      if (Date.now() > until) return reject(new Error(`timed out waiting for ${what}`));
      setTimeout(tick, 20);
    };
    tick();
  });
}

/** The HTTP answer to a refused upgrade. */
function refusedUpgrade(
  url: string,
  opts: WebSocket.ClientOptions,
  protocols?: string[],
): Promise<{ status: number; body: any; requestId: string | undefined }> {
  return new Promise((resolve, reject) => {
    const ws = protocols ? new WebSocket(url, protocols, opts) : new WebSocket(url, opts);
    ws.on('open', () => reject(new Error('upgrade was accepted')));
    ws.on('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () =>
        resolve({ status: res.statusCode!, body: JSON.parse(text), requestId: res.headers['dg-request-id'] as string | undefined }),
      );
    });
    ws.on('error', () => undefined);
  });
}

describe('GET /v1/listen through the @deepgram/sdk live client', () => {
  it('paced mu-law: interim and final Results, Finalize -> from_finalize, CloseStream -> Metadata and 1000; a session of the account', async () => {
    const before = await balance(alice.accessKey);
    const conn = dg.listen.live({
      model: 'nova-2',
      encoding: 'mulaw',
      sample_rate: 8000,
      channels: 1,
      interim_results: true,
      endpointing: false,
      smart_format: true,
      tag: ['live-crm-7'],
    });
    const seen = collect(conn);
    let closed: { code: number } | undefined;
    conn.on(LiveTranscriptionEvents.Close, (e: any) => (closed = e));
    await new Promise<void>((resolve, reject) => {
      conn.on(LiveTranscriptionEvents.Open, () => resolve());
      conn.on(LiveTranscriptionEvents.Error, (e: unknown) => reject(new Error(`live error ${String((e as Error).message ?? e)}`)));
    });
    // 40 ms pieces at real time.
    const started = Date.now();
    const pieces = chunks(clip.mulaw8k, 1, 320);
    for (let i = 0; i < pieces.length; i++) {
      conn.send(pieces[i]!.buffer.slice(pieces[i]!.byteOffset, pieces[i]!.byteOffset + pieces[i]!.length));
      const due = started + (i + 1) * 40 - Date.now();
      if (due > 0) await sleep(due);
    }
    await waitFor(() => seen.some((m) => m.type === 'Results' && !m.is_final), 20_000, 'an interim Results');
    conn.finalize();
    const finalized = await waitFor(() => seen.find((m) => m.type === 'Results' && m.from_finalize), 60_000, 'the Finalize Results');
    conn.keepAlive();
    conn.requestClose();
    const metadata = await waitFor(() => seen.find((m) => m.type === 'Metadata'), 30_000, 'Metadata');
    await waitFor(() => closed, 10_000, 'the close');
    expect(closed!.code).toBe(1000);

    const interim = seen.filter((m) => m.type === 'Results' && !m.is_final);
    const finals = seen.filter((m) => m.type === 'Results' && m.is_final);
    expect(interim.length).toBeGreaterThan(0);
    for (const m of interim) {
      expect(m).toMatchObject({ channel_index: [0, 1], is_final: false, speech_final: false, from_finalize: false });
      expect(m.channel.alternatives[0].transcript).not.toBe('');
    }
    expect(finalized).toMatchObject({ is_final: true, from_finalize: true, channel_index: [0, 1] });
    const transcript = finals.map((m) => m.channel.alternatives[0].transcript).join(' ');
    // The recognizer's own accuracy on these clips is 20-35% WER (docs/engines.md).
    expect(wordErrorRate(clip.reference, transcript).wer).toBeLessThan(0.45);
    const words = finals.flatMap((m) => m.channel.alternatives[0].words);
    expect(words.length).toBeGreaterThan(10);
    let last = 0;
    for (const w of words) {
      expect(w.start).toBeGreaterThanOrEqual(last - 0.001);
      expect(w.end).toBeGreaterThan(w.start);
      expect(w.confidence).toBeGreaterThanOrEqual(0);
      expect(w.word).toBe(w.word.toLowerCase());
      expect(typeof w.punctuated_word).toBe('string');
      last = w.end;
    }
    // Readable text (smart_format): sentence case.
    expect(finalized.channel.alternatives[0].transcript[0]).toMatch(/[A-Z]/);
    const requestId = finalized.metadata.request_id;
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(metadata).toMatchObject({ type: 'Metadata', request_id: requestId, channels: 1 });
    expect(metadata.duration).toBeCloseTo(clip.mulaw8k.length / 8000, 2);
    expect(Date.parse(metadata.created)).toBeGreaterThan(0);

    // Behind it: a native real-time session of the account, its History row and transcript.
    const [tid] = metadata.transcription_ids;
    const row = (await native(`${HISTORY}/${tid}`, alice.accessKey)).data;
    expect(row).toMatchObject({ title: 'Deepgram live: live-crm-7' });
    const text = await (
      await fetch(`${svc.baseUrl}${HISTORY}/${tid}/transcript?format=txt`, { headers: { accessKey: alice.accessKey } })
    ).text();
    expect(wordErrorRate(clip.reference, text).wer).toBeLessThan(0.45);
    expect((await native(`${SESSIONS}/${row.sessionId}`, alice.accessKey)).data.status).not.toMatch(/RECORDING|PAUSED/);
    expect(before - (await balance(alice.accessKey))).toBe(BigInt(Math.ceil(clip.mulaw8k.length / 8000)));
  }, 90_000);

  it('endpointing on PCM in odd-sized pieces: SpeechStarted, speech_final, UtteranceEnd', async () => {
    const conn = dg.listen.live({
      encoding: 'linear16',
      sample_rate: 16000,
      endpointing: 300,
      vad_events: true,
      utterance_end_ms: 1000,
      interim_results: true,
    });
    const seen = collect(conn);
    await new Promise<void>((resolve) => conn.on(LiveTranscriptionEvents.Open, () => resolve()));
    const silence = Buffer.alloc(16000 * 2 * 2);
    const audio = Buffer.concat([clip.pcm16k, silence, second.pcm16k, silence]);
    // 1001-byte pieces: samples split across messages.
    for (const piece of chunks(audio, 1, 1001)) conn.send(Uint8Array.from(piece).buffer);
    conn.requestClose();
    await waitFor(() => seen.find((m) => m.type === 'Metadata'), 90_000, 'Metadata');
    const types = seen.map((m) => m.type);
    expect(types.filter((t) => t === 'SpeechStarted').length).toBeGreaterThanOrEqual(2);
    const finals = seen.filter((m) => m.type === 'Results' && m.is_final);
    expect(finals.some((m) => m.speech_final)).toBe(true);
    expect(finals.every((m) => !m.from_finalize)).toBe(true);
    const ends = seen.filter((m) => m.type === 'UtteranceEnd');
    expect(ends.length).toBeGreaterThanOrEqual(2);
    expect(ends[0].last_word_end).toBeLessThan(clip.durationSec + 0.5);
    // A SpeechStarted comes before the first Results of its utterance.
    expect(types.indexOf('SpeechStarted')).toBeLessThan(types.indexOf('Results'));
    const transcript = finals.map((m) => m.channel.alternatives[0].transcript).join(' ');
    expect(wordErrorRate(`${clip.reference} ${second.reference}`, transcript).wer).toBeLessThan(0.45);
    const meta = seen.find((m) => m.type === 'Metadata');
    expect(meta.duration).toBeCloseTo(audio.length / 32000, 2);
  }, 120_000);
});

describe('GET /v1/listen handshake and the browser form', () => {
  it('refuses an unsupported parameter before the upgrade, naming it, in Deepgram shape', async () => {
    const rowsBefore = (await native(`${HISTORY}?limit=100`, alice.accessKey)).data.items.length;
    const url = `${svc.wsBase}/v1/listen?encoding=mulaw&sample_rate=8000&diarize=true`;
    const r = await refusedUpgrade(url, { headers: { Authorization: `Token ${alice.accessKey}` } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ err_code: 'INVALID_QUERY_PARAMETER' });
    expect(r.body.err_msg).toMatch(/^diarize: /);
    expect(r.body.request_id).toBe(r.requestId);
    const multi = await refusedUpgrade(`${svc.wsBase}/v1/listen?encoding=linear16&sample_rate=16000&multichannel=true`, {
      headers: { Authorization: `Token ${alice.accessKey}` },
    });
    expect(multi.status).toBe(400);
    expect(multi.body.err_msg).toMatch(/^multichannel: /);
    const mixed = await refusedUpgrade(`${svc.wsBase}/v1/listen?encoding=linear16&sample_rate=16000&channels=2`, {
      headers: { Authorization: `Token ${alice.accessKey}` },
    });
    expect(mixed.body.err_msg).toMatch(/^channels: /);
    const opus = await refusedUpgrade(`${svc.wsBase}/v1/listen?encoding=opus&sample_rate=48000`, {
      headers: { Authorization: `Token ${alice.accessKey}` },
    });
    expect(opus.body.err_msg).toMatch(/^encoding: /);
    const language = await refusedUpgrade(`${svc.wsBase}/v1/listen?encoding=mulaw&sample_rate=8000&language=xx`, {
      headers: { Authorization: `Token ${alice.accessKey}` },
    });
    expect(language.status).toBe(400);
    expect(language.body.err_code).toBe('Bad Request');
    // A plain GET (no upgrade) is answered in Deepgram's shape too.
    const plain = await fetch(`${svc.baseUrl}/v1/listen?encoding=mulaw&sample_rate=8000`, {
      headers: { Authorization: `Token ${alice.accessKey}` },
    });
    expect(plain.status).toBe(400);
    expect(Object.keys((await plain.json()) as object).sort()).toEqual(['err_code', 'err_msg', 'request_id']);
    // Nothing was created by a refused handshake.
    expect((await native(`${HISTORY}?limit=100`, alice.accessKey)).data.items.length).toBe(rowsBefore);
  });

  it('refuses a bad key with 401 INVALID_AUTH, and no key reaches the log', async () => {
    const badKey = 'sk_live_notakey0000000000000000000000000';
    const r = await refusedUpgrade(`${svc.wsBase}/v1/listen?encoding=mulaw&sample_rate=8000`, {
      headers: { Authorization: `Token ${badKey}` },
    });
    expect(r.status).toBe(401);
    expect(r.body.err_code).toBe('INVALID_AUTH');
    const viaProtocol = await refusedUpgrade(`${svc.wsBase}/v1/listen?encoding=mulaw&sample_rate=8000`, {}, ['token', badKey]);
    expect(viaProtocol.status).toBe(401);
    const none = await refusedUpgrade(`${svc.wsBase}/v1/listen?encoding=mulaw&sample_rate=8000`, {});
    expect(none.status).toBe(401);
    const log = logLines.join('\n');
    expect(log).not.toContain(badKey);
    expect(log).not.toContain(alice.accessKey);
  });

  it('the browser form: Sec-WebSocket-Protocol token, <key>; a dropped socket leaves a paused session with its transcript', async () => {
    const ws = new WebSocket(`${svc.wsBase}/v1/listen?encoding=mulaw&sample_rate=8000&endpointing=false&tag=browser-1`, [
      'token',
      alice.accessKey,
    ]);
    const seen: any[] = [];
    ws.on('message', (d) => seen.push(JSON.parse(d.toString())));
    await new Promise<void>((resolve, reject) => {
      ws.on('open', () => resolve());
      ws.on('error', reject);
    });
    expect(ws.protocol).toBe('token');
    for (const piece of chunks(clip.mulaw8k, 1, 800)) ws.send(piece);
    ws.send(JSON.stringify({ type: 'Finalize' }));
    const final = await waitFor(() => seen.find((m) => m.type === 'Results' && m.from_finalize), 60_000, 'the Finalize Results');
    expect(wordErrorRate(clip.reference, final.channel.alternatives[0].transcript).wer).toBeLessThan(0.45);
    ws.terminate();
    const items: any[] = (await native(`${HISTORY}?limit=100`, alice.accessKey)).data.items;
    const row = items.find((i) => i.title === 'Deepgram live: browser-1');
    expect(row).toBeDefined();
    let status = '';
    for (let i = 0; i < 100 && status !== 'PAUSED'; i++) {
      status = (await native(`${SESSIONS}/${row.sessionId}`, alice.accessKey)).data.status;
      if (status !== 'PAUSED') await sleep(50);
    }
    expect(status).toBe('PAUSED');
    const text = await (
      await fetch(`${svc.baseUrl}${HISTORY}/${row.id ?? row.transcriptionId}/transcript?format=txt`, {
        headers: { accessKey: alice.accessKey },
      })
    ).text();
    expect(text.trim()).toBe(final.channel.alternatives[0].transcript.trim());
  }, 90_000);
});

describe('the log', () => {
  it('never holds the access key, whichever way it was sent', () => {
    expect(logLines.length).toBeGreaterThan(0);
    expect(logLines.join('\n')).not.toContain(alice.accessKey);
  });
});
