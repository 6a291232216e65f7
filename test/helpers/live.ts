// Shared driving code for live-session option tests: create a session with options, stream
// PCM over the socket, close, and collect the events.
import { randomUUID } from 'node:crypto';
import type { TestService } from './service.js';
import { StreamClient, type StreamEvent } from './stream-client.js';

export const SESSIONS = '/sound_clone/api/v1/stt/realtime/sessions';

export async function createSession(svc: TestService, accessKey: string, options: Record<string, unknown>, extra: Record<string, unknown> = {}) {
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
