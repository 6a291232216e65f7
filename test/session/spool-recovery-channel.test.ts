// Crash recovery in a LATER segment gives the words of an uninterrupted run. The decoder that
// replays the open segment after a restart is a fresh one; without the channel state spooled
// at the last final (pocketsphinx live CMN) it would normalise that segment from the initial
// mean instead of the one adapted over the earlier segments, and words could differ.
// Same audio twice: once streamed and closed without interruption, once with the data dir
// copied mid-way through the third segment (what a kill -9 leaves) and finished by a second
// service started on the copy.
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeSpoolRecords } from '../../src/session/audio-spool.js';
import { startService, tempDir, type TestService } from '../helpers/service.js';
import { StreamClient } from '../helpers/stream-client.js';
import { loadClips } from '../helpers/audio.js';

const audio = Buffer.concat(
  loadClips()
    .slice(0, 3)
    .map((c) => c.mulaw8k),
);
const BOUND_SECONDS = 4;
/** Streamed before the "crash": two full 4 s segments and 3 s of the third. */
const CUT = 8000 * (2 * BOUND_SECONDS + 3);
const services: TestService[] = [];
afterEach(async () => {
  for (const s of services.splice(0)) await s.stop();
});

async function createSession(svc: TestService, accessKey: string, key: string): Promise<any> {
  return (
    (await (
      await fetch(`${svc.baseUrl}/sound_clone/api/v1/stt/realtime/sessions`, {
        method: 'POST',
        headers: { accessKey, 'content-type': 'application/json', 'Idempotency-Key': key },
        body: JSON.stringify({ options: { inputEncoding: 'mulaw_8000' } }),
      })
    ).json()) as any
  ).data;
}

/** Audio [from, to) in 800-sample frames, in `epoch`, whose offsets count from `epochBase`. */
function send(ws: StreamClient, from: number, to: number, epoch = 1, epochBase = 0): void {
  for (let off = from; off < to; off += 800) ws.audio(epoch, off - epochBase, audio.subarray(off, Math.min(to, off + 800)));
}

async function segmentTexts(svc: TestService, accessKey: string, transcriptionId: string): Promise<string[]> {
  const t = (await (
    await fetch(`${svc.baseUrl}/sound_clone/api/v1/stt/transcriptions/${transcriptionId}/transcript?format=json`, {
      headers: { accessKey },
    })
  ).json()) as any;
  return (t.segments as Array<{ text: string }>).map((s) => s.text);
}

describe('spool recovery in a later segment', () => {
  it('a crash during the third segment gives the same words as an uninterrupted run', async () => {
    expect(audio.length).toBeGreaterThan(CUT + 8000);
    const a = await startService({ maxSegmentSeconds: BOUND_SECONDS });
    services.push(a);
    const { accessKey } = await a.account(1_000_000n);

    // Uninterrupted.
    const plain = await createSession(a, accessKey, 'spool-channel-plain-0001');
    const wp = await StreamClient.connect(`${a.wsBase}${plain.streamUrl}`, { accessKey });
    await wp.next('ready');
    send(wp, 0, audio.length);
    await wp.next('ack', (e) => e.capturedSamples === String(audio.length), 60_000);
    wp.control({ type: 'close' });
    await wp.next('closed', () => true, 60_000);
    const expected = await segmentTexts(a, accessKey, plain.transcriptionId);
    expect(expected.length).toBeGreaterThanOrEqual(4);

    // Interrupted in the third segment.
    const crashed = await createSession(a, accessKey, 'spool-channel-crash-0001');
    const ws = await StreamClient.connect(`${a.wsBase}${crashed.streamUrl}`, { accessKey });
    await ws.next('ready');
    send(ws, 0, CUT);
    await ws.next('ack', (e) => e.capturedSamples === String(CUT), 60_000);
    // Acks do not wait for decoding: the two finals of the bound follow.
    await ws.next('final', (e) => e.segmentId === 'seg_1', 60_000);
    expect(ws.ofType('final').length).toBe(2);
    // The spool holds the channel state of the last final ahead of the open segment's audio.
    const spooled = decodeSpoolRecords(fs.readFileSync(`${a.dataDir}/spool/${crashed.sessionId}.spool`));
    expect(spooled.channelState).toHaveLength(27);
    expect(spooled.records.length).toBeGreaterThan(0);
    const copy = tempDir();
    fs.cpSync(a.dataDir, copy, { recursive: true });
    ws.terminate();

    const b = await startService({ dataDir: copy, maxSegmentSeconds: BOUND_SECONDS });
    services.push(b);
    const resumed = (await (
      await fetch(`${b.baseUrl}/sound_clone/api/v1/stt/realtime/sessions/${crashed.sessionId}/resume`, {
        method: 'POST',
        headers: { accessKey, 'content-type': 'application/json' },
        body: JSON.stringify({ capturedSamples: String(CUT) }),
      })
    ).json()) as any;
    expect(resumed.data.capturedSamples).toBe(String(CUT));
    const ws2 = await StreamClient.connect(`${b.wsBase}${crashed.streamUrl}`, { accessKey });
    const ready = await ws2.next('ready');
    expect(ready.openSegmentId).toBe('seg_2');
    expect(ready.sampleOffset).toBe(0);
    send(ws2, CUT, audio.length, ready.epoch, CUT);
    await ws2.next('ack', (e) => e.capturedSamples === String(audio.length), 60_000);
    ws2.control({ type: 'close' });
    await ws2.next('closed', () => true, 60_000);

    const got = await segmentTexts(b, accessKey, crashed.transcriptionId);
    expect(got).toEqual(expected);
  }, 180_000);
});
