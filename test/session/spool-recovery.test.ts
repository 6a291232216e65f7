// Crash recovery from the audio spool, in-process: the data dir of a running service is
// copied while a session is mid-segment (what a kill -9 leaves behind: SQLite files plus the
// spool), and a second service started on the copy must restore the open segment, know every
// acknowledged sample, and finish the transcript without gaps or overlaps.
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { startService, tempDir, type TestService } from '../helpers/service.js';
import { StreamClient } from '../helpers/stream-client.js';
import { createSession } from '../helpers/live.js';
import { loadClips } from '../helpers/audio.js';
import { kStall } from '../../src/engine/pool.js';

const audio = Buffer.concat(
  loadClips()
    .slice(0, 2)
    .map((c) => c.mulaw8k),
); // about 10 s
const services: TestService[] = [];
afterEach(async () => {
  for (const s of services.splice(0)) await s.stop();
});

describe('spool recovery', () => {
  it('restores the open segment after a crash: captured count from the spool, transcript contiguous', async () => {
    const a = await startService({ maxSegmentSeconds: 4 });
    services.push(a);
    const { accessKey } = await a.account(1_000_000n);
    const h = { accessKey, 'content-type': 'application/json' };
    const created = await createSession(a, accessKey, { inputEncoding: 'mulaw_8000' });
    const sessionId = created.sessionId;
    const ws = await StreamClient.connect(`${a.wsBase}${created.streamUrl}`, { accessKey });
    await ws.next('ready');
    for (let off = 0; off < audio.length; off += 800) ws.audio(1, off, audio.subarray(off, Math.min(audio.length, off + 800)));
    await ws.next('ack', (e) => e.capturedSamples === String(audio.length), 60_000);
    // Acks do not wait for decoding: the finals of the 4 s bound follow (segments 0 and 1
    // final, 2 s still open).
    await ws.next('final', (e) => e.segmentId === 'seg_1', 60_000);
    const finals = ws.ofType('final');
    expect(finals.length).toBe(2);
    const spoolFile = `${a.dataDir}/spool/${sessionId}.spool`;
    // The spool holds only the open segment: finalized audio was dropped from it.
    expect(fs.statSync(spoolFile).size).toBeGreaterThan(0);
    expect(fs.statSync(spoolFile).size).toBeLessThan((audio.length - 64000 + 8000) * 2 + 20 * 40);

    // "kill -9": the files as they are now, with no graceful shutdown.
    const crashed = tempDir();
    fs.cpSync(a.dataDir, crashed, { recursive: true });
    ws.terminate();

    const b = await startService({ dataDir: crashed, maxSegmentSeconds: 4 });
    services.push(b);
    const resumed = (await (
      await fetch(`${b.baseUrl}/sound_clone/api/v1/stt/realtime/sessions/${sessionId}/resume`, {
        method: 'POST',
        headers: h,
        body: JSON.stringify({ capturedSamples: String(audio.length) }),
      })
    ).json()) as any;
    expect(resumed.data.capturedSamples).toBe(String(audio.length));
    expect(resumed.data.missingSamples).toBe('0');
    const ws2 = await StreamClient.connect(`${b.wsBase}${created.streamUrl}`, { accessKey });
    const ready = await ws2.next('ready');
    expect(ready.openSegmentId).toBe('seg_2');
    ws2.control({ type: 'close' });
    const closed = await ws2.next('closed', () => true, 60_000);
    expect(closed.capturedSamples).toBe(String(audio.length));
    const last = ws2.ofType('final').at(-1)!;
    expect(last.segmentId).toBe('seg_2');
    expect(last.text.split(' ').length).toBeGreaterThan(2);
    expect(fs.existsSync(`${crashed}/spool/${sessionId}.spool`)).toBe(false);

    const transcript = (await (
      await fetch(`${b.baseUrl}/sound_clone/api/v1/stt/transcriptions/${created.transcriptionId}/transcript?format=json`, { headers: h })
    ).json()) as any;
    const segs = transcript.segments as Array<{ startSample: string; endSample: string }>;
    expect(segs.map((s) => s.startSample)).toEqual(['0', segs[0]!.endSample, segs[1]!.endSample]);
    expect(segs.at(-1)!.endSample).toBe(String(audio.length));
  }, 120_000);

  it('a crash while bound finals are still being decoded: the restored audio is cut at the bound, as live', async () => {
    const a = await startService({ maxSegmentSeconds: 4 });
    services.push(a);
    const { accessKey } = await a.account(1_000_000n);
    const h = { accessKey, 'content-type': 'application/json' };
    const created = await createSession(a, accessKey, { inputEncoding: 'mulaw_8000' });
    const sessionId = created.sessionId;
    const ws = await StreamClient.connect(`${a.wsBase}${created.streamUrl}`, { accessKey });
    await ws.next('ready');
    // The decoder is held up: every frame is acknowledged (stored), no bound's final is done.
    const live = a.service.sessions.served(sessionId)!;
    const stalled = (live as unknown as { stream: { [kStall](ms: number): Promise<void> } }).stream[kStall](3000);
    for (let off = 0; off < audio.length; off += 800) ws.audio(1, off, audio.subarray(off, Math.min(audio.length, off + 800)));
    await ws.next('ack', (e) => e.capturedSamples === String(audio.length), 60_000);
    expect(ws.ofType('final')).toHaveLength(0);
    const crashed = tempDir();
    fs.cpSync(a.dataDir, crashed, { recursive: true });
    ws.terminate();
    await stalled;

    const b = await startService({ dataDir: crashed, maxSegmentSeconds: 4 });
    services.push(b);
    await fetch(`${b.baseUrl}/sound_clone/api/v1/stt/realtime/sessions/${sessionId}/resume`, {
      method: 'POST',
      headers: h,
      body: JSON.stringify({ capturedSamples: String(audio.length) }),
    });
    const ws2 = await StreamClient.connect(`${b.wsBase}${created.streamUrl}`, { accessKey });
    await ws2.next('ready');
    ws2.control({ type: 'close' });
    expect((await ws2.next('closed', () => true, 60_000)).capturedSamples).toBe(String(audio.length));
    const transcript = (await (
      await fetch(`${b.baseUrl}/sound_clone/api/v1/stt/transcriptions/${created.transcriptionId}/transcript?format=json`, { headers: h })
    ).json()) as any;
    const ends = (transcript.segments as Array<{ startSample: string; endSample: string }>).map((seg) => Number(seg.endSample));
    // 4 s bounds (32000 samples at 8 kHz), then the rest at close: what a live run makes.
    expect(ends).toEqual([32000, 64000, audio.length]);
  }, 120_000);
});
