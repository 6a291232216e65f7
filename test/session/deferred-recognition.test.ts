// Deferred recognition: more live sockets than recognizers. Sockets past the last
// recognizer are served anyway, their audio acknowledged as usual, and transcribed when a
// recognizer frees, with the same text and true times as when they are alone; past the
// node's backlog bound the handshake is refused (ENGINE_BUSY) and a deferred session is held
// with accepting: false until the backlog drains.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadClips, pcmSamples, type Clip } from '../helpers/audio.js';
import { startService, type TestService } from '../helpers/service.js';
import { HandshakeRefused, StreamClient, type StreamEvent } from '../helpers/stream-client.js';
import { createSession, pcmBytes } from '../helpers/live.js';

const TRANSCRIPTIONS = '/sound_clone/api/v1/stt/transcriptions';
const RATE = 16000;
const FRAME = RATE / 50;

let clips: Clip[];
beforeAll(() => {
  clips = loadClips().slice(0, 3);
});

interface Leg {
  client: StreamClient;
  transcriptionId: string;
  samples: Int16Array;
}

async function open(svc: TestService, accessKey: string, samples: Int16Array): Promise<Leg> {
  const s = await createSession(svc, accessKey, { inputEncoding: 'pcm_s16le_16000' });
  const client = await StreamClient.connect(`${svc.wsBase}${s.streamUrl}`, { accessKey });
  await client.next('ready');
  return { client, transcriptionId: s.transcriptionId, samples };
}

/** Send the whole clip as 20 ms frames (as fast as the socket takes them). */
function send(leg: Leg): void {
  for (let at = 0; at < leg.samples.length; at += FRAME) {
    leg.client.audio(1, at, pcmBytes(leg.samples.subarray(at, Math.min(leg.samples.length, at + FRAME))));
  }
}

async function commitAndClose(leg: Leg): Promise<StreamEvent> {
  leg.client.control({ type: 'commit' });
  leg.client.control({ type: 'close' });
  return leg.client.next('closed', () => true, 120_000);
}

async function transcript(svc: TestService, accessKey: string, id: string) {
  const r = await fetch(`${svc.baseUrl}${TRANSCRIPTIONS}/${id}/transcript?format=json`, { headers: { accessKey } });
  expect(r.status).toBe(200);
  return (await r.json()) as {
    segments: Array<{ text: string; startSample: string; endSample: string; words: Array<{ startMs: number; endMs: number }> }>;
  };
}

function fullAck(leg: Leg): Promise<StreamEvent> {
  return leg.client.next('ack', (e) => e.sampleOffset === leg.samples.length, 60_000);
}

describe('deferred recognition', () => {
  let svc: TestService;
  let key: string;
  beforeAll(async () => {
    svc = await startService({ maxDecoders: 1, maxStreamsPerAccount: 0, maxDeferredSeconds: 600 });
    key = (await svc.account(100_000n)).accessKey;
  });
  afterAll(async () => {
    await svc.stop();
  });

  it('serves three sockets on one recognizer: acks at once, transcripts complete, the same text and times as alone', async () => {
    const [a, b, c] = clips.map(pcmSamples);
    const first = await open(svc, key, a!);
    send(first);
    await fullAck(first);
    // first holds the only recognizer; b and c are served, told their recognition waits.
    const second = await open(svc, key, b!);
    const third = await open(svc, key, c!);
    for (const leg of [second, third]) {
      expect(await leg.client.next('notice', (e) => e.code === 'RECOGNITION_DEFERRED')).toBeTruthy();
      send(leg);
    }
    // Acknowledged as usual while no recognizer hears them: the audio is stored.
    await Promise.all([fullAck(second), fullAck(third)]);
    expect(second.client.ofType('final')).toHaveLength(0);
    expect(third.client.ofType('final')).toHaveLength(0);
    // Their commit and close wait behind their audio; the first frees the recognizer.
    const closing = [commitAndClose(second), commitAndClose(third)];
    expect((await commitAndClose(first)).status).toBe('COMPLETED');
    for (const closed of await Promise.all(closing)) expect(closed.status).toBe('COMPLETED');

    for (const leg of [second, third]) {
      expect(leg.client.ofType('error')).toEqual([]);
      expect(leg.client.ofType('committed')).toHaveLength(1);
    }

    // Alone, with the recognizer free, each clip gives the same text at the same times.
    for (const leg of [second, third]) {
      const alone = await open(svc, key, leg.samples);
      expect(alone.client.ofType('notice').map((e) => e.code)).not.toContain('RECOGNITION_DEFERRED');
      send(alone);
      await fullAck(alone);
      await commitAndClose(alone);
      const deferred = await transcript(svc, key, leg.transcriptionId);
      const reference = await transcript(svc, key, alone.transcriptionId);
      expect(deferred.segments.length).toBeGreaterThan(0);
      expect(deferred.segments.map((s) => s.text)).toEqual(reference.segments.map((s) => s.text));
      expect(deferred.segments.map((s) => [s.startSample, s.endSample])).toEqual(
        reference.segments.map((s) => [s.startSample, s.endSample]),
      );
      expect(deferred.segments.at(-1)!.endSample).toBe(String(leg.samples.length));
      const words = (s: typeof deferred) => s.segments.flatMap((x) => x.words.map((w) => [w.startMs, w.endMs]));
      expect(words(deferred)).toEqual(words(reference));
      expect(words(deferred).length).toBeGreaterThan(0);
    }

    const metrics = await (await fetch(`${svc.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/^scribed_recognition_deferred_total 2$/m);
    expect(metrics).toMatch(/^scribed_recognition_lag_seconds_count [1-9]\d*$/m);
    expect(metrics).toMatch(/^scribed_recognition_deferred_backlog_seconds 0$/m);
  }, 180_000);
});

describe('the backlog bound', () => {
  it('refuses a new socket past the bound (ENGINE_BUSY) and holds a deferred session at it until the backlog drains', async () => {
    const svc = await startService({ maxDecoders: 1, maxStreamsPerAccount: 0, maxDeferredSeconds: 1 });
    try {
      const key = (await svc.account(100_000n)).accessKey;
      const samples = pcmSamples(clips[0]!);
      const first = await open(svc, key, samples);
      send(first);
      await fullAck(first);

      const second = await open(svc, key, samples.subarray(0, 3 * RATE));
      await second.client.next('notice', (e) => e.code === 'RECOGNITION_DEFERRED');
      send(second);
      // One second of audio fits the bound; past it the session stops accepting.
      expect(await second.client.next('accepting', (e) => e.accepting === false)).toMatchObject({ reason: 'RECOGNITION_BACKLOG' });
      await second.client.next('error', (e) => e.code === 'NOT_ACCEPTING');

      // The backlog is full: a third socket is refused before the upgrade, as without deferral.
      const s3 = await createSession(svc, key, { inputEncoding: 'pcm_s16le_16000' });
      const refused = await StreamClient.connect(`${svc.wsBase}${s3.streamUrl}`, { accessKey: key }).then(
        () => null,
        (err: unknown) => err,
      );
      expect(refused).toBeInstanceOf(HandshakeRefused);
      expect((refused as HandshakeRefused).status).toBe(503);

      // Exactly the bound's second was taken (its acks follow the spool's sync, so they may
      // come after the refusals).
      const lastAck = () => Math.max(0, ...second.client.ofType('ack').map((e) => e.sampleOffset as number));
      for (const deadline = Date.now() + 20_000; lastAck() < RATE && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 50));
      const acked = lastAck();
      expect(acked).toBe(RATE);

      // The recognizer frees, the backlog drains, the held session accepts again and the rest
      // of its audio (sent again from the last ack, as a client does) is taken.
      await commitAndClose(first);
      await second.client.next('accepting', (e) => e.accepting === true, 30_000);
      expect(second.client.ofType('notice').map((e) => e.code)).toContain('RECOGNITION_CAUGHT_UP');
      const from = acked;
      for (let at = from; at < second.samples.length; at += FRAME) {
        second.client.audio(1, at, pcmBytes(second.samples.subarray(at, Math.min(second.samples.length, at + FRAME))));
      }
      await fullAck(second);
      expect((await commitAndClose(second)).status).toBe('COMPLETED');
      const t = await transcript(svc, key, second.transcriptionId);
      expect(t.segments.at(-1)!.endSample).toBe(String(3 * RATE));
    } finally {
      await svc.stop();
    }
  }, 120_000);
});
