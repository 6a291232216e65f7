// Deepgram's live socket with two channels (`channels=2&multichannel=true`) and A-law, against
// a real server on the store under test: one socket of interleaved stereo becomes a call with a
// leg per channel (docs/calls.md), each channel's words come back with its channel_index, one
// Metadata names both History rows, and a dropped socket pauses both legs. Real speech: a
// different clip on each channel, so a word on the wrong channel shows in the error rates.
import { createClient, LiveTranscriptionEvents, type DeepgramClient } from '@deepgram/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startService, type TestService } from '../../helpers/service.js';
import { chunks, loadClips, type Clip } from '../../helpers/audio.js';
import { rawAlaw } from '../../helpers/speech-fixtures.js';
import { wordErrorRate } from '../../../src/core/wer.js';
import type { ProvisionedAccount } from '../../../src/accounts/provision.js';

const clips = loadClips();
const agentClip = clips.find((c) => c.id === 'librivox-0870')!;
const customerClip = clips.find((c) => c.id === 'librivox-0920')!;
const API = '/sound_clone/api/v1/stt';

let svc: TestService;
let alice: ProvisionedAccount;
let dg: DeepgramClient;

beforeAll(async () => {
  svc = await startService({ maxDecoders: 2 });
  alice = await svc.account(10_000n);
  dg = createClient(alice.accessKey, { global: { url: svc.baseUrl } });
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

async function native(p: string): Promise<any> {
  return (await fetch(`${svc.baseUrl}${p}`, { headers: { accessKey: alice.accessKey } })).json();
}
const balance = async () => BigInt((await native('/sound_clone/api/v1/account')).data.characters);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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

/** Two mono signals of `bytesPerSample` bytes a sample as one interleaved stream, the shorter
 * padded with `silence` bytes. */
function interleave(left: Buffer, right: Buffer, bytesPerSample: number, silence: number): Buffer {
  const frames = Math.max(left.length, right.length) / bytesPerSample;
  const out = Buffer.alloc(frames * bytesPerSample * 2, silence);
  for (let f = 0; f < frames; f++) {
    for (let b = 0; b < bytesPerSample; b++) {
      const at = f * bytesPerSample + b;
      if (at < left.length) out[2 * f * bytesPerSample + b] = left[at]!;
      if (at < right.length) out[(2 * f + 1) * bytesPerSample + b] = right[at]!;
    }
  }
  return out;
}

const transcriptOf = (results: any[], channel: number) =>
  results
    .filter((m) => m.type === 'Results' && m.is_final && m.channel_index[0] === channel)
    .map((m) => m.channel.alternatives[0].transcript)
    .join(' ');

/** Each channel's finals match its own clip and not the other's. `bound`: the recognizer's own
 * accuracy on these clips is 20-35% WER at 16 kHz (docs/engines.md); made 8 kHz G.711 by
 * ffmpeg, librivox-0920 came out at 0.58 both as A-law and as mu-law (librivox-0870: 0.45 and
 * 0.27), the A-law decoding being exact (test/core/audio/alaw-encoding.test.ts). */
function expectRightChannels(results: any[], left: Clip, right: Clip, bound: number): void {
  const ch0 = transcriptOf(results, 0);
  const ch1 = transcriptOf(results, 1);
  const wer = (ref: string, hyp: string) => Number(wordErrorRate(ref, hyp).wer.toFixed(3));
  const figures = `channel 0 ${JSON.stringify(ch0)}, channel 1 ${JSON.stringify(ch1)}`;
  expect(wer(left.reference, ch0), figures).toBeLessThan(bound);
  expect(wer(right.reference, ch1), figures).toBeLessThan(bound);
  // The other party's words would show: each channel's text is far from the other clip.
  expect(wer(right.reference, ch0), figures).toBeGreaterThan(0.8);
  expect(wer(left.reference, ch1), figures).toBeGreaterThan(0.8);
}

describe('GET /v1/listen with channels=2&multichannel=true', () => {
  it('the @deepgram/sdk live client, stereo linear16: a call of two legs, each channel its words, one Metadata, both legs charged', async () => {
    const before = await balance();
    const conn = dg.listen.live({
      encoding: 'linear16',
      sample_rate: 16000,
      channels: 2,
      multichannel: true,
      interim_results: true,
      endpointing: false,
      tag: ['stereo-1'],
    });
    const seen: any[] = [];
    for (const ev of [LiveTranscriptionEvents.Transcript, LiveTranscriptionEvents.Metadata, LiveTranscriptionEvents.Unhandled])
      conn.on(ev, (m: any) => seen.push(m));
    let closed: { code: number } | undefined;
    conn.on(LiveTranscriptionEvents.Close, (e: any) => (closed = e));
    await new Promise<void>((resolve, reject) => {
      conn.on(LiveTranscriptionEvents.Open, () => resolve());
      conn.on(LiveTranscriptionEvents.Error, (e: unknown) => reject(new Error(`live error ${String((e as Error).message ?? e)}`)));
    });
    const stereo = interleave(agentClip.pcm16k, customerClip.pcm16k, 2, 0);
    // 1001-byte messages: frames (4 bytes) and samples split across messages.
    for (const piece of chunks(stereo, 1, 1001)) conn.send(Uint8Array.from(piece).buffer);
    conn.finalize();
    await waitFor(
      () => [0, 1].every((c) => seen.some((m) => m.type === 'Results' && m.from_finalize && m.channel_index[0] === c)),
      60_000,
      'the Finalize Results of both channels',
    );
    conn.requestClose();
    const metadata = await waitFor(() => seen.find((m) => m.type === 'Metadata'), 30_000, 'Metadata');
    await waitFor(() => closed, 10_000, 'the close');
    expect(closed!.code).toBe(1000);

    const results = seen.filter((m) => m.type === 'Results');
    for (const m of results)
      expect([
        [0, 2],
        [1, 2],
      ]).toContainEqual(m.channel_index);
    expectRightChannels(results, agentClip, customerClip, 0.45);
    expect(results.some((m) => !m.is_final)).toBe(true);
    for (const c of [0, 1]) {
      const words = results.filter((m) => m.is_final && m.channel_index[0] === c).flatMap((m) => m.channel.alternatives[0].words);
      expect(words.length).toBeGreaterThan(5);
    }
    expect(seen.filter((m) => m.type === 'Metadata')).toHaveLength(1);
    const seconds = stereo.length / 4 / 16000;
    expect(metadata).toMatchObject({ channels: 2, request_id: results[0].metadata.request_id });
    expect(metadata.duration).toBeCloseTo(seconds, 2);
    expect(metadata.transcription_ids).toHaveLength(2);

    // Behind it: a call whose legs are the two channels, agent first (as pre-recorded).
    const rows = await Promise.all(
      metadata.transcription_ids.map(async (id: string) => (await native(`${API}/transcriptions/${id}`)).data),
    );
    expect(rows.map((r) => [r.title, r.speaker])).toEqual([
      ['Deepgram live: stereo-1: agent', 'agent'],
      ['Deepgram live: stereo-1: customer', 'customer'],
    ]);
    expect(rows[0].callId).toMatch(/^call_/);
    expect(rows[1].callId).toBe(rows[0].callId);
    const call = (await native(`${API}/calls/${rows[0].callId}`)).data;
    expect(call).toMatchObject({ title: 'Deepgram live: stereo-1', status: 'COMPLETED' });
    expect(call.legs.map((l: any) => [l.speaker, l.transcriptionId, l.kind])).toEqual([
      ['agent', metadata.transcription_ids[0], 'realtime'],
      ['customer', metadata.transcription_ids[1], 'realtime'],
    ]);
    const merged = await (
      await fetch(`${svc.baseUrl}${API}/calls/${call.callId}/transcript?format=txt`, { headers: { accessKey: alice.accessKey } })
    ).text();
    expect(merged).toMatch(/\] agent: /);
    expect(merged).toMatch(/\] customer: /);
    // Each leg is charged for its own audio, as two native sockets would be.
    expect(before - (await balance())).toBe(2n * BigInt(Math.ceil(seconds)));
  }, 120_000);

  it('A-law stereo from ffmpeg in the browser form; a dropped socket pauses both legs, transcripts kept', async () => {
    const left = rawAlaw(agentClip.wavFile);
    const right = rawAlaw(customerClip.wavFile);
    const ws = new WebSocket(
      `${svc.wsBase}/v1/listen?encoding=alaw&sample_rate=8000&channels=2&multichannel=true&endpointing=false&tag=alaw-drop`,
      ['token', alice.accessKey],
    );
    const seen: any[] = [];
    ws.on('message', (d) => seen.push(JSON.parse(d.toString())));
    await new Promise<void>((resolve, reject) => {
      ws.on('open', () => resolve());
      ws.on('error', reject);
    });
    for (const piece of chunks(interleave(left, right, 1, 0xd5), 1, 801)) ws.send(piece);
    ws.send(JSON.stringify({ type: 'Finalize' }));
    await waitFor(
      () => [0, 1].every((c) => seen.some((m) => m.type === 'Results' && m.from_finalize && m.channel_index[0] === c)),
      60_000,
      'the Finalize Results of both channels',
    );
    expectRightChannels(seen, agentClip, customerClip, 0.65);
    ws.terminate();

    const items: any[] = (await native(`${API}/transcriptions?limit=100`)).data.items;
    const legs = ['agent', 'customer'].map((speaker) => items.find((i) => i.title === `Deepgram live: alaw-drop: ${speaker}`));
    expect(legs.every((l) => l !== undefined)).toBe(true);
    for (const [channel, leg] of legs.entries()) {
      let status = '';
      for (let i = 0; i < 100 && status !== 'PAUSED'; i++) {
        const session = (await native(`${API}/realtime/sessions/${leg.sessionId}`)).data;
        status = session.status;
        expect(session.effectiveOptions.inputEncoding).toBe('alaw_8000');
        if (status !== 'PAUSED') await sleep(50);
      }
      expect(status).toBe('PAUSED');
      const text = await (
        await fetch(`${svc.baseUrl}${API}/transcriptions/${leg.transcriptionId}/transcript?format=txt`, {
          headers: { accessKey: alice.accessKey },
        })
      ).text();
      expect(text.trim().replace(/\s+/g, ' ')).toBe(transcriptOf(seen, channel).trim().replace(/\s+/g, ' '));
    }
    expect((await native(`${API}/calls/${legs[0].callId}`)).data.status).toBe('ACTIVE');
  }, 120_000);
});

describe('a stereo handshake needs a recognizer per channel', () => {
  it('one decoder, no deferral: stereo is 503 before anything is created, mono opens', async () => {
    const one = await startService({ maxDecoders: 1, maxDeferredSeconds: 0 });
    try {
      const bob = await one.account(1_000n);
      const headers = { Authorization: `Token ${bob.accessKey}` };
      const refused = await new Promise<{ status: number; body: any }>((resolve, reject) => {
        const ws = new WebSocket(`${one.wsBase}/v1/listen?encoding=mulaw&sample_rate=8000&channels=2&multichannel=true`, { headers });
        ws.on('open', () => reject(new Error('upgrade was accepted')));
        ws.on('unexpected-response', (_req, res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
        });
        ws.on('error', () => undefined);
      });
      expect(refused.status).toBe(503);
      expect(refused.body).toMatchObject({ err_code: 'SERVICE_UNAVAILABLE' });
      expect(refused.body.err_msg).toMatch(/one per channel/);
      const list = async (p: string) =>
        (await (await fetch(`${one.baseUrl}${API}/${p}`, { headers: { accessKey: bob.accessKey } })).json()) as any;
      expect((await list('transcriptions?limit=10')).data.items).toEqual([]);
      expect((await list('calls?limit=10')).data.items).toEqual([]);

      const mono = new WebSocket(`${one.wsBase}/v1/listen?encoding=mulaw&sample_rate=8000`, { headers });
      const seen: any[] = [];
      mono.on('message', (d) => seen.push(JSON.parse(d.toString())));
      await new Promise<void>((resolve, reject) => {
        mono.on('open', () => resolve());
        mono.on('error', reject);
      });
      mono.send(JSON.stringify({ type: 'CloseStream' }));
      expect(await waitFor(() => seen.find((m) => m.type === 'Metadata'), 20_000, 'Metadata')).toMatchObject({ channels: 1 });
    } finally {
      await one.stop();
    }
  }, 60_000);
});
