// SessionStreamer against a real service: socket cuts mid-stream lose and duplicate nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { SessionStreamer, StreamFatalError, describeFetchError, idempotencyKeyFor } from '../../src/client/session-streamer.js';
import { freePort } from '../helpers/serve-process.js';
import { ClientMetrics } from '../../src/client/metrics.js';
import { startService, type TestService } from '../helpers/service.js';
import { chunks, loadClips } from '../helpers/audio.js';
import { serverEvent } from '../../src/core/protocol.js';

const clips = loadClips();
const audio = Buffer.concat(clips.slice(0, 3).map((c) => c.mulaw8k));
const logger = pino({ level: process.env.SCRIBED_TEST_LOG ?? 'silent' });
let svc: TestService;
let accessKey: string;

beforeAll(async () => {
  svc = await startService();
  accessKey = (await svc.account(1_000_000n)).accessKey;
});
afterAll(() => svc?.stop(), 120_000);

function words(finals: Array<{ text: string }>): string[] {
  return finals.flatMap((f) => f.text.split(/\s+/).filter(Boolean));
}

async function stream(
  opts: { cutsAt?: number[]; metrics?: ClientMetrics; streamId?: string; reconnectAt?: number[]; logger?: typeof logger } = {},
) {
  const streamer = new SessionStreamer({
    url: svc.baseUrl,
    accessKey,
    encoding: 'mulaw_8000',
    streamId: opts.streamId ?? randomUUID(),
    bufferSamples: 16000,
    logger: opts.logger ?? logger,
    metrics: opts.metrics,
    backoff: { baseMs: 20, maxMs: 200 },
  });
  const finals: unknown[] = [];
  streamer.on('final', (f) => finals.push(f));
  const { sessionId } = await streamer.start();
  const cuts = new Set(opts.cutsAt ?? []);
  const moves = new Set(opts.reconnectAt ?? []);
  let i = 0;
  for (const c of chunks(audio, 1, 160)) {
    await streamer.write(c);
    if (moves.has(i)) {
      // What a draining node sends (src/server/drain.ts): here the one node takes the resume.
      const told = svc.service.sessions
        .served(sessionId)
        ?.tellSocket(
          serverEvent.reconnect({ reason: 'NODE_DRAINING', withinMs: 60_000, deadline: new Date(Date.now() + 60_000).toISOString() }),
        );
      expect(told).toBe(true);
    }
    if (cuts.has(i++)) streamer.cutSocket();
  }
  const summary = await streamer.end();
  return { sessionId, summary, finals };
}

describe('SessionStreamer', () => {
  it('derives a stable, valid Idempotency-Key from the stream id', () => {
    const k = idempotencyKeyFor('call-7f3a');
    expect(k).toBe(idempotencyKeyFor('call-7f3a'));
    expect(k).not.toBe(idempotencyKeyFor('call-7f3b'));
    expect(k).toMatch(/^[\x21-\x7e]{16,64}$/);
  });

  it('tells network failures (retried) from requests that cannot be built (fatal), from real fetch errors', async () => {
    const refused = await fetch(`http://127.0.0.1:${await freePort()}/`).catch((e: unknown) => e);
    expect(describeFetchError(refused)).toEqual({ network: true, reason: 'network error (ECONNREFUSED)' });
    const badHeader = await fetch(svc.baseUrl, { headers: { accessKey: 'sk_secret\n# note' } }).catch((e: unknown) => e);
    expect(badHeader).toBeInstanceOf(TypeError);
    const d = describeFetchError(badHeader);
    expect(d.network).toBe(false);
    expect(d.reason).not.toContain('sk_secret');
    const timedOut = await fetch('http://10.255.255.1/', { signal: AbortSignal.timeout(1) }).catch((e: unknown) => e);
    expect(describeFetchError(timedOut).network).toBe(true);
  });

  it('an access key that is not a valid header value fails start() at once, and the key is never logged', async () => {
    const key = 'sk_secret_0123456789\n# rotated by ops';
    const lines: string[] = [];
    const captured = pino({ level: 'debug' }, { write: (l: string) => lines.push(l) });
    const streamer = new SessionStreamer({
      url: svc.baseUrl,
      accessKey: key,
      encoding: 'mulaw_8000',
      streamId: randomUUID(),
      bufferSamples: 8000,
      logger: captured,
      backoff: { baseMs: 20, maxMs: 50 },
    });
    // Before: a "Headers.append: <key> is an invalid header value" warning and a retry, for ever.
    const outcome = await Promise.race([
      streamer.start().then(
        () => 'started',
        (e: unknown) => e,
      ),
      new Promise((r) => setTimeout(() => r('still retrying'), 3000)),
    ]);
    expect(outcome).toBeInstanceOf(StreamFatalError);
    expect((outcome as Error).message).not.toContain('sk_secret');
    expect(lines.join('')).not.toContain('sk_secret');
    await streamer.abort();
  });

  it('streams a clip, and with socket cuts mid-stream the server holds every sample once and the words match', async () => {
    const clean = await stream();
    expect(clean.summary.serverCapturedSamples).toBe(audio.length);
    expect(clean.summary.reconnects).toBe(0);
    const cleanWords = words(clean.summary.finals);
    expect(cleanWords.length).toBeGreaterThan(10);

    const metrics = new ClientMetrics({ defaults: false });
    const cut = await stream({ cutsAt: [100, 300, 301, 700], metrics });
    expect(cut.summary.reconnects).toBeGreaterThanOrEqual(3);
    expect(cut.summary.resumes).toBe(cut.summary.reconnects);
    expect(cut.summary.capturedSamples).toBe(audio.length);
    expect(cut.summary.acknowledgedSamples).toBe(audio.length);
    expect(cut.summary.serverCapturedSamples).toBe(audio.length);
    expect(cut.summary.overflowSamples).toBe(0);
    const session = (await (
      await fetch(`${svc.baseUrl}/sound_clone/api/v1/stt/realtime/sessions/${cut.sessionId}`, { headers: { accessKey } })
    ).json()) as any;
    expect(session.data.capturedSamples).toBe(String(audio.length));
    expect(words(cut.summary.finals)).toEqual(cleanWords);
    const text = await metrics.registry.metrics();
    const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    expect(value('scribed_client_audio_captured_seconds_total')).toBeCloseTo(audio.length / 8000, 6);
    expect(value('scribed_client_audio_acknowledged_seconds_total')).toBeCloseTo(audio.length / 8000, 6);
    expect(value('scribed_client_audio_buffered_seconds')).toBeCloseTo(0, 6);
    expect(text).toMatch(/scribed_client_resumes_total [3-9]/);
  }, 180_000);

  it('a reconnect event moves the stream make-before-break: resume, new socket, old one let go; nothing lost or sent twice, the same words', async () => {
    const clean = await stream();
    const lines: Array<Record<string, unknown>> = [];
    const capture = pino(
      { level: 'info' },
      {
        write: (line: string) => {
          if (process.env.DEBUG_MOVE) process.stderr.write(line);
          lines.push(JSON.parse(line) as Record<string, unknown>);
        },
      },
    );
    const moved = await stream({ reconnectAt: [200, 600], logger: capture });
    expect(moved.summary.resumes).toBe(2);
    expect(moved.summary.capturedSamples).toBe(audio.length);
    expect(moved.summary.acknowledgedSamples).toBe(audio.length);
    expect(moved.summary.serverCapturedSamples).toBe(audio.length);
    expect(moved.summary.gapSamples).toBe(0);
    expect(words(moved.summary.finals)).toEqual(words(clean.summary.finals));
    const gaps = lines.filter((l) => l.msg === 'moved to another node: first ack there');
    expect(gaps).toHaveLength(2);
    for (const g of gaps) expect(g.ackGapMs).toBeGreaterThanOrEqual(0);
  }, 180_000);

  it('abort() while a resume is in flight leaves the session open (no socket, no close)', async () => {
    // The resume is held on its way to the real server, so abort() lands inside it.
    const realFetch = globalThis.fetch;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let resumeSeen!: () => void;
    const resumeStarted = new Promise<void>((r) => (resumeSeen = r));
    globalThis.fetch = (async (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
      if (String(input).endsWith('/resume')) {
        resumeSeen();
        await held;
      }
      return realFetch(input, init);
    }) as typeof fetch;
    try {
      const streamer = new SessionStreamer({
        url: svc.baseUrl,
        accessKey,
        encoding: 'mulaw_8000',
        streamId: randomUUID(),
        bufferSamples: 16000,
        logger,
        backoff: { baseMs: 10, maxMs: 20 },
      });
      const { sessionId } = await streamer.start();
      await streamer.write(audio.subarray(0, 8000));
      for (let i = 0; i < 300 && streamer.stats().acknowledged < 8000; i++) await new Promise((r) => setTimeout(r, 10));
      expect(streamer.stats().acknowledged).toBe(8000);
      streamer.cutSocket();
      await resumeStarted;
      const aborting = streamer.abort();
      release();
      await aborting;
      await new Promise((r) => setTimeout(r, 300));
      const session = (await (
        await realFetch(`${svc.baseUrl}/sound_clone/api/v1/stt/realtime/sessions/${sessionId}`, { headers: { accessKey } })
      ).json()) as any;
      expect(['RECORDING', 'PAUSED']).toContain(session.data.status);
    } finally {
      globalThis.fetch = realFetch;
    }
  }, 30_000);

  it('abort() ends a start() that is still retrying to create the session', async () => {
    const streamer = new SessionStreamer({
      url: `http://127.0.0.1:${await freePort()}`,
      accessKey,
      encoding: 'mulaw_8000',
      streamId: randomUUID(),
      bufferSamples: 8000,
      logger,
      backoff: { baseMs: 50, maxMs: 100 },
    });
    const starting = streamer.start().then(
      () => 'started',
      (e: unknown) => e,
    );
    await new Promise((r) => setTimeout(r, 300));
    await streamer.abort();
    const outcome = await Promise.race([starting, new Promise((r) => setTimeout(() => r('still retrying'), 2000))]);
    expect(outcome).toBeInstanceOf(StreamFatalError);
    expect((outcome as StreamFatalError).code).toBe('ABORTED');
  });

  it('the streams gauge counts a stream once: abort() before start(), and abort() after end() failed', async () => {
    const metrics = new ClientMetrics({ defaults: false });
    const gauge = async () => Number(/^scribed_client_streams (\S+)$/m.exec(await metrics.registry.metrics())?.[1]);
    const opts = { url: svc.baseUrl, accessKey, encoding: 'mulaw_8000' as const, bufferSamples: 16000, logger, metrics };
    await new SessionStreamer({ ...opts, streamId: randomUUID() }).abort();
    expect(await gauge()).toBe(0);
    const streamer = new SessionStreamer({ ...opts, streamId: randomUUID() });
    await streamer.start();
    expect(await gauge()).toBe(1);
    await streamer.write(audio.subarray(0, 1600));
    // An abort while end() waits for `closed` makes end() fail; the caller then aborts again,
    // as RtpIngest and `scribed stream` do after a failed end.
    const ending = streamer.end().then(
      () => 'ended',
      (e: unknown) => e,
    );
    await streamer.abort();
    expect(await ending).toBeInstanceOf(Error);
    await streamer.abort();
    expect(await gauge()).toBe(0);
  });

  it('a frame lost on the server side: the gap over sent audio is logged at error and counted, and a resume goes on without sending anything twice', async () => {
    // Drop the 5th audio frame on its way out, as a server that failed to take it would
    // (the next frame then lands past a hole, which the server fills with silence).
    const realSend = WebSocket.prototype.send;
    let binaryFrames = 0;
    WebSocket.prototype.send = function (this: WebSocket, data: any, ...rest: any[]) {
      if (typeof data !== 'string' && ++binaryFrames === 5) return;
      return (realSend as (...a: unknown[]) => void).call(this, data, ...rest);
    } as typeof realSend;
    const records: Array<Record<string, any>> = [];
    const captured = pino({ level: 'info' }, { write: (l: string) => records.push(JSON.parse(l)) });
    const metrics = new ClientMetrics({ defaults: false });
    try {
      const streamer = new SessionStreamer({
        url: svc.baseUrl,
        accessKey,
        encoding: 'mulaw_8000',
        streamId: randomUUID(),
        bufferSamples: 16000,
        logger: captured,
        metrics,
        backoff: { baseMs: 20, maxMs: 100 },
      });
      const { sessionId } = await streamer.start();
      const part = audio.subarray(0, 24_000);
      for (const c of chunks(part, 1, 800)) await streamer.write(c);
      const summary = await streamer.end();
      expect(summary.gapSamples).toBe(800);
      expect(summary.reconnects).toBeGreaterThanOrEqual(1);
      expect(summary.serverCapturedSamples).toBe(part.length);
      const session = (await (
        await fetch(`${svc.baseUrl}/sound_clone/api/v1/stt/realtime/sessions/${sessionId}`, { headers: { accessKey } })
      ).json()) as any;
      expect(session.data.capturedSamples).toBe(String(part.length));
      const gapLog = records.find((r) => r.msg === 'the server filled audio this client sent with silence; reconnecting to resume');
      expect(gapLog).toMatchObject({ level: 50, fromSample: 3200, toSample: 4000, samples: 800 });
      expect(await metrics.registry.metrics()).toMatch(/^scribed_client_gap_samples_total 800$/m);
    } finally {
      WebSocket.prototype.send = realSend;
    }
  }, 60_000);

  it('a restarted client with the same stream id re-attaches and continues the timeline', async () => {
    const streamId = randomUUID();
    const first = new SessionStreamer({ url: svc.baseUrl, accessKey, encoding: 'mulaw_8000', streamId, bufferSamples: 16000, logger });
    const { sessionId } = await first.start();
    await first.write(audio.subarray(0, 8000));
    // Wait until the server holds it, then "crash" (no close).
    for (let i = 0; i < 200 && first.stats().acknowledged < 8000; i++) await new Promise((r) => setTimeout(r, 10));
    await first.abort();
    const second = new SessionStreamer({ url: svc.baseUrl, accessKey, encoding: 'mulaw_8000', streamId, bufferSamples: 16000, logger });
    expect((await second.start()).sessionId).toBe(sessionId);
    await second.write(audio.subarray(8000, 16000));
    const summary = await second.end();
    expect(summary.capturedThisRun).toBe(8000);
    expect(summary.serverCapturedSamples).toBe(16000);
  }, 60_000);
});
