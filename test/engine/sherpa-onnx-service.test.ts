// The sherpa-onnx engine's whole path through the real service, with the tiny transducer
// (scripts/make-tiny-transducer.py): load, a real-time session over the socket (partials,
// commit, final with word times), a socket dropped and resumed, a crash whose open segment is
// replayed from the spool into a new decoder, vad commit mode, and a batch upload. The
// model's words mean nothing: these assert events, order and times, and that the words the
// service gives are exactly the ones the backend decodes from the same audio (so no sample is
// lost or decoded twice on the way).
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBackend } from '../../src/engine/backends/sherpa-onnx.js';
import { startService, tempDir, type TestService } from '../helpers/service.js';
import { chunks, loadClips, pcmSamples } from '../helpers/audio.js';
import { createSession, concat, pcmBytes, SESSIONS } from '../helpers/live.js';
import { StreamClient, type StreamEvent } from '../helpers/stream-client.js';
import { tinyTransducerDir } from '../helpers/tiny-transducer.js';

const TRANSCRIPTIONS = '/sound_clone/api/v1/stt/transcriptions';
const RATE = 16_000;
const clips = loadClips();
const clip = clips.find((c) => c.id === 'librivox-0880')!;
const speech = pcmSamples(clip);

let modelDir: string;
let svc: TestService;
let accessKey: string;
const services: TestService[] = [];

beforeAll(async () => {
  modelDir = tinyTransducerDir();
  // One account drives every test: its stream limit (all recognizers but one) is lifted.
  svc = await startService({ engine: 'sherpa-onnx', modelDir, maxStreamsPerAccount: 0 });
  services.push(svc);
  accessKey = (await svc.account(1_000_000n)).accessKey;
}, 60_000);
afterAll(async () => {
  for (const s of services.splice(0)) await s.stop();
});

interface Word {
  word: string;
  start: number;
  end: number;
}

/** What the backend itself decodes from `samples` as one utterance (session times from 0). */
function backendWords(samples: Int16Array): Word[] {
  const backend = createBackend({ engine: 'sherpa-onnx', profile: 'wideband', modelDir });
  try {
    backend.process(samples, false);
    return backend.endUtterance().words.map((w) => ({ word: w.word, start: w.startSample, end: w.endSample }));
  } finally {
    backend.destroy();
  }
}

/** The final's words, lower-cased (the service capitalizes a final's first word). */
function finalWords(final: StreamEvent): Word[] {
  return (final.words as Array<{ word: string; start: { sample: string }; end: { sample: string } }>).map((w) => ({
    word: w.word.toLowerCase(),
    start: Number(w.start.sample),
    end: Number(w.end.sample),
  }));
}

/** Words in order, each inside [from, to] of the session timeline (the last may end one
 * 40 ms output frame past the audio: the engine's tail padding). */
function expectTimedWithin(words: Word[], from: number, to: number): void {
  expect(words.length).toBeGreaterThan(2);
  let previous = from;
  for (const w of words) {
    expect(w.word).toMatch(/^[a-z]+$/i);
    expect(w.start).toBeGreaterThanOrEqual(previous);
    expect(w.end).toBeGreaterThan(w.start);
    expect(w.start).toBeLessThan(to);
    previous = w.start;
  }
  expect(words.at(-1)!.end).toBeLessThanOrEqual(to + 640);
}

async function connect(base: TestService, streamUrl: string): Promise<StreamClient> {
  return StreamClient.connect(`${base.wsBase}${streamUrl}`, { accessKey });
}

/** Send `samples` as 20 ms frames from `offset` in `epoch`, at once; resolves on their ack. */
async function send(client: StreamClient, epoch: number, samples: Int16Array, offset = 0): Promise<number> {
  let at = offset;
  for (const c of chunks(pcmBytes(samples), 2, RATE / 50)) {
    client.audio(epoch, at, c);
    at += c.length / 2;
  }
  await client.next('ack', (e) => e.epoch === epoch && e.sampleOffset === at, 30_000);
  return at;
}

/** An event of `type` matching `pred`, already received or still to come (next() only looks
 * past the events earlier next() calls went over, and a vad final can come between acks). */
async function seen(client: StreamClient, type: string, pred: (e: StreamEvent) => boolean): Promise<StreamEvent> {
  return client.events.find((e) => e.type === type && pred(e)) ?? client.next(type, pred, 20_000);
}

async function waitForStatus(base: TestService, sessionId: string, status: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const res = await fetch(`${base.baseUrl}${SESSIONS}/${sessionId}`, { headers: { accessKey } });
    if (((await res.json()) as any).data.status === status) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`session ${sessionId} never reached ${status}`);
}

async function resume(base: TestService, sessionId: string, capturedSamples: number): Promise<any> {
  const res = await fetch(`${base.baseUrl}${SESSIONS}/${sessionId}/resume`, {
    method: 'POST',
    headers: { accessKey, 'content-type': 'application/json' },
    body: JSON.stringify({ capturedSamples: String(capturedSamples) }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as any).data;
}

async function transcript(base: TestService, transcriptionId: string): Promise<any> {
  const res = await fetch(`${base.baseUrl}${TRANSCRIPTIONS}/${transcriptionId}/transcript?format=json`, { headers: { accessKey } });
  expect(res.status).toBe(200);
  return res.json();
}

describe('sherpa-onnx engine through the service (tiny model)', () => {
  it('a real-time session: partials while the speech streams in, a commit gives a timed final, close completes it', async () => {
    const s = await createSession(svc, accessKey, { inputEncoding: 'pcm_s16le_16000' });
    const client = await connect(svc, s.streamUrl);
    expect(await client.next('ready')).toMatchObject({ epoch: 1, capturedSamples: '0', accepting: true });
    // In real time, 20 ms a frame: partials must come while audio still arrives.
    let at = 0;
    let partialsWhileStreaming = 0;
    const t0 = Date.now();
    for (const c of chunks(pcmBytes(speech), 2, RATE / 50)) {
      client.audio(1, at, c);
      at += c.length / 2;
      const due = t0 + (at * 1000) / RATE - Date.now();
      if (due > 0) await new Promise((r) => setTimeout(r, due));
      partialsWhileStreaming = client.ofType('partial').length;
    }
    await client.next('ack', (e) => e.sampleOffset === at, 30_000);
    expect(partialsWhileStreaming).toBeGreaterThan(0);

    client.control({ type: 'commit' });
    const final = await client.next('final', undefined, 30_000);
    const committed = await client.next('committed');
    expect(committed).toMatchObject({ segmentId: 'seg_0', capturedSamples: String(at) });
    expect(final).toMatchObject({ segmentId: 'seg_0', start: { sample: '0', epoch: 1 }, end: { sample: String(at), epoch: 1 } });
    const words = finalWords(final);
    expectTimedWithin(words, 0, at);
    expect(final.text.toLowerCase()).toBe(words.map((w) => w.word).join(' '));
    // Partials grow toward the final: each extends the one before, the last starts the final.
    const partials = client.ofType('partial');
    expect(partials.every((p) => p.segmentId === 'seg_0')).toBe(true);
    for (let i = 1; i < partials.length; i++) expect(partials[i]!.text.startsWith(partials[i - 1]!.text)).toBe(true);
    expect(final.text.toLowerCase().startsWith(partials.at(-1)!.text.toLowerCase())).toBe(true);
    // No partial of the segment after its final.
    const kinds = client.events.map((e) => e.type);
    expect(kinds.lastIndexOf('partial')).toBeLessThan(kinds.indexOf('final'));
    // The service's words are the backend's own for this audio: nothing lost or doubled.
    expect(words).toEqual(backendWords(speech));

    client.control({ type: 'close' });
    expect(await client.next('closed')).toMatchObject({ status: 'COMPLETED', capturedSamples: String(at), segments: 1 });
    expect(client.ofType('error')).toEqual([]);
    const t = await transcript(svc, s.transcriptionId);
    expect(t.text).toBe(final.text);
    expect(t.segments).toHaveLength(1);
    expect(t.segments[0]).toMatchObject({ id: 'seg_0', startSample: '0', endSample: String(at), text: final.text });
  }, 30_000);

  it('a socket dropped mid-utterance and resumed from capturedSamples: the held decoder goes on, the final is the uninterrupted one', async () => {
    const s = await createSession(svc, accessKey, { inputEncoding: 'pcm_s16le_16000' });
    const one = await connect(svc, s.streamUrl);
    await one.next('ready');
    const cut = 24_000; // mid-utterance, 1.5 s in
    expect(await send(one, 1, speech.subarray(0, cut))).toBe(cut);
    one.terminate();
    await waitForStatus(svc, s.sessionId, 'PAUSED');

    expect(await resume(svc, s.sessionId, cut)).toMatchObject({ epoch: 2, capturedSamples: String(cut), missingSamples: '0' });
    const two = await connect(svc, s.streamUrl);
    expect(await two.next('ready')).toMatchObject({ epoch: 2, sampleOffset: 0, capturedSamples: String(cut), openSegmentId: 'seg_0' });
    const rest = await send(two, 2, speech.subarray(cut));
    expect(cut + rest).toBe(speech.length);
    two.control({ type: 'commit' });
    const final = await two.next('final', undefined, 30_000);
    expect(final).toMatchObject({
      segmentId: 'seg_0',
      start: { sample: '0', epoch: 1 },
      end: { sample: String(speech.length), epoch: 2, epochSample: rest },
    });
    const words = finalWords(final);
    expectTimedWithin(words, 0, speech.length);
    expect(words).toEqual(backendWords(speech));
    two.control({ type: 'close' });
    expect(await two.next('closed')).toMatchObject({ status: 'COMPLETED', capturedSamples: String(speech.length) });
    expect([...one.ofType('error'), ...two.ofType('error')]).toEqual([]);
  }, 30_000);

  it('a crash mid-utterance: a new node replays the open segment from the spool into a new decoder, the resumed final is the uninterrupted one', async () => {
    const a = await startService({ engine: 'sherpa-onnx', modelDir });
    services.push(a);
    const key = (await a.account(1_000_000n)).accessKey;
    const s = await createSession(a, key, { inputEncoding: 'pcm_s16le_16000' });
    const one = await StreamClient.connect(`${a.wsBase}${s.streamUrl}`, { accessKey: key });
    await one.next('ready');
    const cut = 24_000;
    await send(one, 1, speech.subarray(0, cut));
    // "kill -9": the data dir as it is now, no graceful stop (which would finalize).
    const crashed = tempDir();
    fs.cpSync(a.dataDir, crashed, { recursive: true });
    one.terminate();

    const b = await startService({ engine: 'sherpa-onnx', modelDir, dataDir: crashed });
    services.push(b);
    const h = { accessKey: key, 'content-type': 'application/json' };
    const resumed = (await (
      await fetch(`${b.baseUrl}${SESSIONS}/${s.sessionId}/resume`, {
        method: 'POST',
        headers: h,
        body: JSON.stringify({ capturedSamples: String(cut) }),
      })
    ).json()) as any;
    expect(resumed.data).toMatchObject({ epoch: 2, capturedSamples: String(cut), missingSamples: '0' });
    const two = await StreamClient.connect(`${b.wsBase}${s.streamUrl}`, { accessKey: key });
    expect(await two.next('ready')).toMatchObject({ epoch: 2, capturedSamples: String(cut), openSegmentId: 'seg_0' });
    await send(two, 2, speech.subarray(cut));
    two.control({ type: 'commit' });
    const final = await two.next('final', undefined, 30_000);
    expect(final).toMatchObject({ segmentId: 'seg_0', start: { sample: '0' }, end: { sample: String(speech.length) } });
    const words = finalWords(final);
    expectTimedWithin(words, 0, speech.length);
    // The replayed 1.5 s and the live rest decode as the whole clip does in one go.
    expect(words).toEqual(backendWords(speech));
    two.control({ type: 'close' });
    expect(await two.next('closed')).toMatchObject({ status: 'COMPLETED', capturedSamples: String(speech.length) });
    expect(two.ofType('error')).toEqual([]);
  }, 60_000);

  it('vad commit mode: two sentences with a pause between give two finals without a commit, each timed inside its segment', async () => {
    const second = pcmSamples(clips.find((c) => c.id === 'librivox-0930')!);
    const pause = new Int16Array(RATE * 1.5);
    const audio = concat([speech, pause, second, pause]);
    const s = await createSession(svc, accessKey, { inputEncoding: 'pcm_s16le_16000', segmentCommitMode: 'vad', commitSilenceMs: 500 });
    const client = await connect(svc, s.streamUrl);
    await client.next('ready');
    await send(client, 1, audio);
    const f0 = await seen(client, 'final', (e) => e.segmentId === 'seg_0');
    const f1 = await seen(client, 'final', (e) => e.segmentId === 'seg_1');
    expect([f0.trigger, f1.trigger]).toEqual(['vad', 'vad']);
    const start0 = Number(f0.start.sample);
    const end0 = Number(f0.end.sample);
    const start1 = Number(f1.start.sample);
    const end1 = Number(f1.end.sample);
    // Each segment ends in the pause after its sentence; the second starts after the first.
    expect(end0).toBeGreaterThan(speech.length - RATE / 2);
    expect(end0).toBeLessThan(speech.length + pause.length);
    expect(start1).toBeGreaterThanOrEqual(end0);
    expect(start1).toBeLessThan(speech.length + pause.length);
    expect(end1).toBeGreaterThan(speech.length + pause.length + second.length - RATE / 2);
    expect(end1).toBeLessThanOrEqual(audio.length);
    expectTimedWithin(finalWords(f0), start0, end0);
    expectTimedWithin(finalWords(f1), start1, end1);
    // Partials of a segment come before its final, and none of seg_0 after seg_1 began.
    const order = client.events.filter((e) => e.type === 'partial' || e.type === 'final').map((e) => `${e.type}:${e.segmentId}`);
    expect(order.indexOf('final:seg_0')).toBeLessThan(order.indexOf('final:seg_1'));
    expect(order.slice(order.indexOf('final:seg_0') + 1).some((x) => x.endsWith('seg_0'))).toBe(false);
    client.control({ type: 'close' });
    expect(await client.next('closed')).toMatchObject({ status: 'COMPLETED', capturedSamples: String(audio.length) });
    expect(client.ofType('error')).toEqual([]);
  }, 30_000);

  it('a batch upload completes with timed segments', async () => {
    const file = clips.find((c) => c.id === 'librivox-0870')!;
    const form = new FormData();
    form.append('title', 'tiny sherpa batch');
    form.append('file', new Blob([fs.readFileSync(file.wavFile)]), 'clip.wav');
    const res = await fetch(`${svc.baseUrl}${TRANSCRIPTIONS}`, { method: 'POST', headers: { accessKey }, body: form });
    const created = ((await res.json()) as any).data;
    expect(res.status).toBe(200);
    const samples = Number(created.audioSamples);
    expect(samples).toBe(file.pcm16k.length / 2);
    await svc.service.batch.idle();
    const detail = (
      (await (await fetch(`${svc.baseUrl}${TRANSCRIPTIONS}/${created.transcriptionId}`, { headers: { accessKey } })).json()) as any
    ).data;
    expect(detail.status).toBe('COMPLETED');
    const t = await transcript(svc, created.transcriptionId);
    expect(t.segments.length).toBeGreaterThan(0);
    let previousEnd = 0;
    for (const seg of t.segments) {
      const start = Number(seg.startSample);
      const end = Number(seg.endSample);
      expect(start).toBeGreaterThanOrEqual(previousEnd);
      expect(end).toBeGreaterThan(start);
      expect(end).toBeLessThanOrEqual(samples);
      previousEnd = end;
    }
    // The transcript gives word times in ms.
    const toSamples = (ms: number) => (ms * RATE) / 1000;
    const words: Word[] = t.segments.flatMap((seg: any) =>
      seg.words.map((w: any) => ({ word: w.word, start: toSamples(w.startMs), end: toSamples(w.endMs) })),
    );
    expectTimedWithin(words, 0, samples);
    expect(t.text.split(' ').length).toBe(words.length);
  }, 60_000);
});
