// POST .../sessions/{id}/close: a session ends without a socket, its held audio
// transcribed first; an attached socket is told `closed`; another account's session does not
// exist; closing twice answers the same.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadClips, pcmSamples } from '../helpers/audio.js';
import { startService, type TestService } from '../helpers/service.js';
import { StreamClient } from '../helpers/stream-client.js';
import { createSession, pcmBytes, SESSIONS } from '../helpers/live.js';
import { wordErrorRate } from '../../src/core/wer.js';

let svc: TestService;
let key: string;
beforeAll(async () => {
  svc = await startService();
  key = (await svc.account(100_000n)).accessKey;
});
afterAll(async () => {
  await svc.stop();
});

async function close(sessionId: string, accessKey = key) {
  const r = await fetch(`${svc.baseUrl}${SESSIONS}/${sessionId}/close`, { method: 'POST', headers: { accessKey } });
  return { status: r.status, json: (await r.json()) as any };
}

async function transcript(transcriptionId: string) {
  const r = await fetch(`${svc.baseUrl}/sound_clone/api/v1/stt/transcriptions/${transcriptionId}/transcript?format=json`, {
    headers: { accessKey: key },
  });
  return (await r.json()) as { status: string; segments: Array<{ text: string; rawText?: string }> };
}

describe('POST .../sessions/{id}/close', () => {
  it('closes a session that never streamed; closing again answers the same', async () => {
    const s = await createSession(svc, key, { inputEncoding: 'mulaw_8000' });
    const first = await close(s.sessionId);
    expect(first.status).toBe(200);
    expect(first.json.data).toMatchObject({ sessionId: s.sessionId, status: 'COMPLETED', capturedSamples: '0' });
    const again = await close(s.sessionId);
    expect(again.status).toBe(200);
    expect(again.json.data.status).toBe('COMPLETED');
    expect((await transcript(s.transcriptionId)).status).toBe('COMPLETED');
    // A closed session takes no socket.
    const refused = await StreamClient.connect(`${svc.wsBase}${s.streamUrl}`, { accessKey: key }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(refused).toBeTruthy();
  });

  it('transcribes the held segment of a session whose client went away', async () => {
    const clip = loadClips()[0]!;
    const samples = pcmSamples(clip);
    const s = await createSession(svc, key, { inputEncoding: 'pcm_s16le_16000' });
    const client = await StreamClient.connect(`${svc.wsBase}${s.streamUrl}`, { accessKey: key });
    await client.next('ready');
    for (let at = 0; at < samples.length; at += 320) client.audio(1, at, pcmBytes(samples.subarray(at, at + 320)));
    await client.next('ack', (e) => e.sampleOffset === samples.length, 60_000);
    client.terminate(); // no close: the session pauses with its segment open
    await client.closed;
    const closed = await close(s.sessionId);
    expect(closed.status).toBe(200);
    expect(closed.json.data).toMatchObject({ status: 'COMPLETED', capturedSamples: String(samples.length) });
    const t = await transcript(s.transcriptionId);
    expect(t.segments).toHaveLength(1);
    expect(wordErrorRate(clip.reference, t.segments[0]!.rawText ?? t.segments[0]!.text).wer).toBeLessThan(0.5);
  }, 60_000);

  it('sends `closed` to an attached socket and closes it with 1000', async () => {
    const s = await createSession(svc, key, { inputEncoding: 'pcm_s16le_16000' });
    const client = await StreamClient.connect(`${svc.wsBase}${s.streamUrl}`, { accessKey: key });
    await client.next('ready');
    const closed = await close(s.sessionId);
    expect(closed.json.data.status).toBe('COMPLETED');
    expect(await client.next('closed')).toMatchObject({ status: 'COMPLETED' });
    expect((await client.closed).code).toBe(1000);
  });

  it("reads another account's session, and an unknown one, as not existing", async () => {
    const s = await createSession(svc, key, { inputEncoding: 'mulaw_8000' });
    const other = (await svc.account(10n)).accessKey;
    const foreign = await close(s.sessionId, other);
    expect(foreign.status).toBe(404);
    expect(foreign.json.code).toBeDefined();
    expect((await close('rts_doesnotexist')).status).toBe(404);
    // Untouched by the refused close.
    const r = await fetch(`${svc.baseUrl}${SESSIONS}/${s.sessionId}`, { headers: { accessKey: key } });
    expect(((await r.json()) as any).data.status).not.toBe('COMPLETED');
  });
});
