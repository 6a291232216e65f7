// The audio spool in segmentCommitMode "vad": silence between segments is dropped from it (a
// long pause does not grow it), a commit inside a frame keeps the acknowledged audio after it,
// and after a crash the detector judges the recovered audio again, so segments still end in
// pauses and nothing acknowledged is lost.
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeSpoolRecords } from '../../src/session/audio-spool.js';
import { wordErrorRate } from '../../src/core/wer.js';
import { startService, tempDir, type TestService } from '../helpers/service.js';
import { StreamClient } from '../helpers/stream-client.js';
import { loadClips, pcmSamples } from '../helpers/audio.js';
import { concat, createSession, pcmBytes } from '../helpers/live.js';

const RATE = 16000;
const [first, second] = ['librivox-0880', 'librivox-0890'].map((id) => loadClips().find((c) => c.id === id)!);
const speechA = pcmSamples(first!);
const speechB = pcmSamples(second!);
const SILENCE = 20 * RATE;
const audio = concat([speechA, new Int16Array(SILENCE), speechB, new Int16Array(RATE)]);
/** The "crash": after the silence and the first half of the second sentence. */
const CUT = speechA.length + SILENCE + Math.floor(speechB.length / 2);
const FRAME = 640; // 40 ms

const services: TestService[] = [];
afterEach(async () => {
  for (const s of services.splice(0)) await s.stop();
});

function send(ws: StreamClient, from: number, to: number, epoch = 1, epochBase = 0): void {
  for (let at = from; at < to; at += FRAME) ws.audio(epoch, at - epochBase, pcmBytes(audio.subarray(at, Math.min(to, at + FRAME))));
}

function spooledSamples(file: string): { from: bigint; samples: number } {
  const { records } = decodeSpoolRecords(fs.readFileSync(file));
  return { from: records[0]?.startSample ?? -1n, samples: records.reduce((n, r) => n + r.samples.length, 0) };
}

describe('spool recovery in vad mode', () => {
  it('drops silence from the spool, and after a crash the detector segments the recovered audio', async () => {
    const a = await startService();
    services.push(a);
    const { accessKey } = await a.account(1_000_000n);
    const s = await createSession(a, accessKey, { segmentCommitMode: 'vad', commitSilenceMs: 500 });
    const spoolFile = `${a.dataDir}/spool/${s.sessionId}.spool`;
    const ws = await StreamClient.connect(`${a.wsBase}${s.streamUrl}`, { accessKey });
    await ws.next('ready');

    // The first sentence and the long silence after it.
    const silenceEnd = speechA.length + SILENCE;
    send(ws, 0, silenceEnd);
    await ws.next('ack', (e) => e.capturedSamples === String(silenceEnd), 60_000);
    // Acks do not wait for recognition, nor recognition for the acks: the final may
    // come before the last ack or after it (acks wait for the node's group debit, the final for
    // the recognizer), and the spool's compaction follows the final.
    const finalBy = Date.now() + 60_000;
    while (ws.ofType('final').length === 0 && Date.now() < finalBy) await new Promise((r) => setTimeout(r, 50));
    expect(ws.ofType('final')).toHaveLength(1);
    // Of 20 s of silence the spool keeps at most the compaction step and the detector's hold.
    const deadline = Date.now() + 60_000;
    while (spooledSamples(spoolFile).samples >= 6 * RATE && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const quiet = spooledSamples(spoolFile);
    expect(quiet.samples).toBeLessThan(6 * RATE);
    expect(quiet.from).toBeGreaterThan(BigInt(speechA.length + 10 * RATE));

    // Half of the second sentence, then the crash.
    send(ws, silenceEnd, CUT);
    await ws.next('ack', (e) => e.capturedSamples === String(CUT), 60_000);
    const copy = tempDir();
    fs.cpSync(a.dataDir, copy, { recursive: true });
    ws.terminate();

    const b = await startService({ dataDir: copy });
    services.push(b);
    const resumed = (await (
      await fetch(`${b.baseUrl}/sound_clone/api/v1/stt/realtime/sessions/${s.sessionId}/resume`, {
        method: 'POST',
        headers: { accessKey, 'content-type': 'application/json' },
        body: JSON.stringify({ capturedSamples: String(CUT) }),
      })
    ).json()) as any;
    expect(resumed.data.capturedSamples).toBe(String(CUT));
    const ws2 = await StreamClient.connect(`${b.wsBase}${s.streamUrl}`, { accessKey });
    const ready = await ws2.next('ready');
    // The detector found the second sentence in the recovered audio: its segment is open.
    expect(ready.openSegmentId).toBe('seg_1');
    send(ws2, CUT, audio.length, ready.epoch, CUT);
    await ws2.next('ack', (e) => e.capturedSamples === String(audio.length), 60_000);
    ws2.control({ type: 'close' });
    await ws2.next('closed', () => true, 60_000);

    const t = (await (
      await fetch(`${b.baseUrl}/sound_clone/api/v1/stt/transcriptions/${s.transcriptionId}/transcript?format=json`, {
        headers: { accessKey },
      })
    ).json()) as any;
    const segs = t.segments as Array<{ text: string; rawText?: string; startSample: string; endSample: string }>;
    expect(segs).toHaveLength(2);
    // The second segment starts in the silence, not where the spool or the last final ended,
    // and holds the second sentence.
    expect(Number(segs[1]!.startSample)).toBeGreaterThan(speechA.length + SILENCE - RATE);
    expect(Number(segs[1]!.startSample)).toBeLessThan(speechA.length + SILENCE + RATE / 2);
    expect(wordErrorRate(second!.reference, segs[1]!.rawText ?? segs[1]!.text).wer).toBeLessThan(0.5);
  }, 180_000);
});
