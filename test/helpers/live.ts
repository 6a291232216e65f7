// Shared driving code for live-session option tests: create a session with options, stream
// PCM over the socket, close, and collect the events.
import { randomUUID } from 'node:crypto';
import { StreamClient, type StreamEvent } from './stream-client.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { encodeAudioFrame } from '../../src/core/frame.js';
import { validateCreateSession } from '../../src/core/session-options.js';
import { newId } from '../../src/core/ids.js';
import type { Engine } from '../../src/engine/types.js';
import { createMetrics } from '../../src/obs/metrics.js';
import { openStore } from '../../src/store/index.js';
import { AudioSpoolDir } from '../../src/session/audio-spool.js';
import { DatabaseSpools } from '../../src/session/database-spool.js';
import { storeSettingsFor, testStore, type TestService } from './service.js';
import type { LiveSession, LiveSessionDeps, SessionSocket } from '../../src/session/live-session.js';
import { SessionDriver } from '../../src/session/session-driver.js';
import { nativeBinary, nativeText } from '../../src/server/ws/native-wire.js';
import { SessionRegistry } from '../../src/session/registry.js';

export const SESSIONS = '/sound_clone/api/v1/stt/realtime/sessions';

export async function createSession(
  svc: TestService,
  accessKey: string,
  options: Record<string, unknown>,
  extra: Record<string, unknown> = {},
) {
  const res = await fetch(`${svc.baseUrl}${SESSIONS}`, {
    method: 'POST',
    headers: { accessKey, 'content-type': 'application/json', 'Idempotency-Key': `opt-${randomUUID()}` },
    body: JSON.stringify({ title: 'options test', options, ...extra }),
  });
  const json = (await res.json()) as any;
  if (res.status !== 200) throw new Error(`create session: ${res.status} ${JSON.stringify(json)}`);
  return json.data as { sessionId: string; transcriptionId: string; streamUrl: string; effectiveOptions: Record<string, unknown> };
}

/** 16 kHz PCM samples as little-endian bytes. */
export function pcmBytes(samples: Int16Array): Buffer {
  return Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
}

/** Stream `samples` (16-bit PCM at the session rate) in frames of `frameMs`, then close the
 * session; returns every event the socket saw. */
export async function streamAndClose(
  svc: TestService,
  accessKey: string,
  streamUrl: string,
  samples: Int16Array,
  rate = 16000,
  frameMs = 40,
): Promise<{ client: StreamClient; events: StreamEvent[]; finals: StreamEvent[] }> {
  const client = await StreamClient.connect(`${svc.wsBase}${streamUrl}`, { accessKey });
  await client.next('ready');
  const step = Math.round((rate * frameMs) / 1000);
  for (let at = 0; at < samples.length; at += step) {
    client.audio(1, at, pcmBytes(samples.subarray(at, Math.min(samples.length, at + step))));
  }
  await client.next('ack', (e) => e.sampleOffset === samples.length, 120_000);
  client.control({ type: 'close' });
  await client.next('closed', () => true, 60_000);
  return { client, events: client.events, finals: client.ofType('final') };
}

/** Concatenate PCM parts. */
export function concat(parts: Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

// ------------------------------------------------------------------ a live session, no server

/** A socket that records what the session sends it. */
export class RecordingSocket {
  readonly events: Array<Record<string, any>> = [];
  closed: { code: number; reason: string } | null = null;
  private waiters: Array<() => void> = [];

  send(event: object): void {
    this.events.push(event as Record<string, any>);
    for (const w of this.waiters.splice(0)) w();
  }

  close(code: number, reason: string): void {
    this.closed = { code, reason };
    for (const w of this.waiters.splice(0)) w();
  }

  ofType(type: string): Array<Record<string, any>> {
    return this.events.filter((e) => e.type === type);
  }

  /** Resolves once `pred` holds for some event (or rejects after `ms`). */
  async until(pred: (events: Array<Record<string, any>>) => boolean, ms = 5000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!pred(this.events)) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out; events: ${this.events.map((e) => e.type).join(',')}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }
}

/** A binary audio frame of 16-bit PCM as the wire carries it (src/core/frame.ts). */
export function audioFrame(epoch: number, sampleOffset: number, samples: Int16Array): Uint8Array {
  return encodeAudioFrame({ epoch, sampleOffset, payload: pcmBytes(samples) });
}

/** The session as the native stream socket drives it: wire messages (a binary frame, a control
 * object's text) read at the socket's edge (src/server/ws/native-wire.ts) into the session's
 * typed commands, so these tests send what a client sends and meet the same refusals. */
function onTheWire(session: LiveSession) {
  return Object.assign(session, {
    onBinary: (sink: SessionSocket, bytes: Uint8Array) => nativeBinary(new SessionDriver(session, sink), bytes),
    onText: (sink: SessionSocket, text: string) => nativeText(new SessionDriver(session, sink), text),
  });
}

/** A live session on a real SQLite store in a temp dir, its recognizer the fake engine,
 * with its file spool: everything the session modules use but the server. */
export async function liveSession(engine: Engine, options: Record<string, unknown> = {}, deps: Partial<LiveSessionDeps> = {}) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-live-'));
  // The store of the vitest project: SQLite with the file spool, or (postgres) a database of its
  // own with the shared spool, as a node of a cluster runs.
  const shared = testStore() === 'postgres';
  const store = await openStore(await storeSettingsFor(dataDir));
  const accountId = `acct_${randomUUID().replace(/-/g, '')}`;
  await store.createAccount({
    id: accountId,
    name: 'live test',
    characters: 1_000_000n,
    accessKey: { id: `ak_${randomUUID().replace(/-/g, '')}`, secretHash: Buffer.alloc(32) },
    apiToken: { id: `at_${randomUUID().replace(/-/g, '')}`, secretHash: Buffer.alloc(32) },
    createdAt: new Date().toISOString(),
  });
  const log = pino({ level: process.env.SCRIBED_TEST_LOG ?? 'silent' });
  const registry = new SessionRegistry(
    store,
    {
      store,
      engine,
      metrics: createMetrics(),
      log,
      maxSegmentSeconds: 30,
      maxGapSeconds: 5,
      maxFramePayloadBytes: 131072,
      pausedDecoderHoldMs: 5000,
      spool: shared ? new DatabaseSpools({ store, windowMs: 5, leaseMs: 30_000, log }) : new AudioSpoolDir(dataDir, 5, log),
      ...deps,
    },
    { node: 'node-test', leaseMs: 30_000, shared, log },
  );
  const newSession = async (opts: Record<string, unknown>) => {
    const valid = validateCreateSession({ options: { inputEncoding: 'pcm_s16le_16000', ...opts } });
    const created = await store.createSession({
      accountId,
      idempotencyKey: randomUUID(),
      requestHash: randomUUID(),
      sampleRateHz: valid.effectiveOptions.sampleRateHz,
      session: {
        id: newId('rts', new Date()),
        accountId,
        transcriptionId: newId('stt', new Date()),
        title: 'live test',
        languageHint: null,
        options: valid.effectiveOptions as unknown as Record<string, unknown>,
        createdAt: new Date().toISOString(),
      },
    });
    if (created.kind === 'conflict') throw new Error('session conflict');
    return onTheWire((await registry.take(created.session.id, accountId))!);
  };
  const session = await newSession(options);
  return {
    store,
    registry,
    session,
    dataDir,
    /** Another session of the same account on the same registry (and engine). */
    newSession,
    async close() {
      await registry.shutdown();
      await store.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
