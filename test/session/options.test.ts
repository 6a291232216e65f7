// Session options that act on live results: alignment, language, heartbeat. Each test fails
// if its option is ignored.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Worker } from 'node:worker_threads';
import { startService, type TestService } from '../helpers/service.js';
import { loadClips, pcmSamples } from '../helpers/audio.js';
import { concat, createSession, SESSIONS, streamAndClose } from '../helpers/live.js';
import { StreamClient } from '../helpers/stream-client.js';
import { kStall } from '../../src/engine/pool.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';

const clip = loadClips().find((c) => c.id === 'librivox-0880')!;
const pcm = pcmSamples(clip);

let svc: TestService;
let acct: ProvisionedAccount;
beforeAll(async () => {
  svc = await startService();
  acct = await svc.account(100_000n);
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

async function transcriptJson(transcriptionId: string) {
  const res = await fetch(`${svc.baseUrl}/sound_clone/api/v1/stt/transcriptions/${transcriptionId}/transcript?format=json`, {
    headers: { accessKey: acct.accessKey },
  });
  return (await res.json()) as any;
}

describe('includeAlignment', () => {
  it('on (the default): word times on both clocks, and character times inside their words', async () => {
    const s = await createSession(svc, acct.accessKey, {});
    const { finals } = await streamAndClose(svc, acct.accessKey, s.streamUrl, concat([pcm, new Int16Array(8000)]));
    const f = finals[0]!;
    expect(f.words.length).toBeGreaterThan(3);
    const w = f.words[1];
    expect(w.start).toEqual({
      sample: expect.any(String),
      ms: expect.any(Number),
      epoch: 1,
      epochSample: expect.any(Number),
      epochMs: expect.any(Number),
    });
    expect(Number(w.start.sample)).toBe(w.start.epochSample);
    expect(f.characters.map((c: any) => c.char).join('')).toBe(f.words.map((x: any) => x.word).join(' '));
    // the characters of word 1 lie inside it
    const offset = f.words[0].word.length + 1;
    const first = f.characters[offset];
    const last = f.characters[offset + w.word.length - 1];
    expect(first.start.sample).toBe(w.start.sample);
    expect(last.end.sample).toBe(w.end.sample);
    expect((await transcriptJson(s.transcriptionId)).segments[0].words.length).toBe(f.words.length);
  }, 60_000);

  it('off: finals carry no word or character times, and none are stored', async () => {
    const s = await createSession(svc, acct.accessKey, { includeAlignment: false });
    const { finals } = await streamAndClose(svc, acct.accessKey, s.streamUrl, pcm);
    expect(finals[0]!.text.split(' ').length).toBeGreaterThan(3);
    expect(finals[0]).not.toHaveProperty('words');
    expect(finals[0]).not.toHaveProperty('characters');
    const t = await transcriptJson(s.transcriptionId);
    expect(t.segments[0].words ?? []).toEqual([]);
  }, 60_000);
});

describe('language options', () => {
  it('includeDetectedLanguage: effectiveOptions and a notice say the recognizer cannot detect the language', async () => {
    const s = await createSession(svc, acct.accessKey, { includeDetectedLanguage: true });
    expect(s.effectiveOptions).toMatchObject({ includeDetectedLanguage: false, languageDetection: 'unavailable' });
    const { events, finals } = await streamAndClose(svc, acct.accessKey, s.streamUrl, pcm);
    const notices = events.filter((e) => e.type === 'notice');
    expect(notices.map((n) => n.code)).toEqual(['LANGUAGE_DETECTION_UNAVAILABLE']);
    expect(finals[0]).not.toHaveProperty('detectedLanguage');
    // not asked for: no notice, nothing in effectiveOptions
    const plain = await createSession(svc, acct.accessKey, {});
    expect(plain.effectiveOptions).not.toHaveProperty('languageDetection');
  }, 60_000);

  it('languageHint selects the English model; a language no model recognizes is refused', async () => {
    const ok = await createSession(svc, acct.accessKey, {}, { languageHint: 'en-US' });
    expect(ok.effectiveOptions.recognitionLanguage).toBe('en');
    const res = await fetch(`${svc.baseUrl}${SESSIONS}`, {
      method: 'POST',
      headers: { accessKey: acct.accessKey, 'content-type': 'application/json', 'Idempotency-Key': 'lang-hint-fr-0000001' },
      body: JSON.stringify({ languageHint: 'fr' }),
    });
    expect(res.status).toBe(422);
    const body = (await res.json()) as any;
    expect(body.code).toBe(-1);
    expect(body.message).toMatch(/^VALIDATION_FAILED: languageHint: "fr" is not recognized/);
  });

  it('additionalLanguageHints: a supported candidate selects the model, the others are reported', async () => {
    const s = await createSession(svc, acct.accessKey, { additionalLanguageHints: ['de', 'en-GB'] });
    expect(s.effectiveOptions).toMatchObject({ recognitionLanguage: 'en', unsupportedLanguageHints: ['de'] });
    const { events } = await streamAndClose(svc, acct.accessKey, s.streamUrl, pcm.subarray(0, 8000));
    const notice = events.find((e) => e.type === 'notice');
    expect(notice).toMatchObject({ code: 'LANGUAGE_HINTS_NOT_APPLIED' });
    expect(notice!.message).toContain('de');
    expect(events.some((e) => e.type === 'notice' && e.code === 'OPTIONS_NOT_APPLIED')).toBe(false);
  }, 60_000);
});

describe('heartbeatIntervalMs', () => {
  it('a recognition worker that stops answering fails the session with ENGINE_FAILED within the interval', async () => {
    const s = await createSession(svc, acct.accessKey, { heartbeatIntervalMs: 500 });
    const client = await StreamClient.connect(`${svc.wsBase}${s.streamUrl}`, { accessKey: acct.accessKey });
    await client.next('ready');
    const live = svc.service.sessions.served(s.sessionId)!;
    const stream = (live as unknown as { stream: { [kStall](ms: number): Promise<void> } }).stream;
    const t0 = Date.now();
    void stream[kStall](20_000).catch(() => undefined);
    // no audio is in flight: only the heartbeat can notice
    expect(await client.next('error', () => true, 5000)).toMatchObject({ code: 'ENGINE_FAILED' });
    // the interval, one check period, and slack for a loaded machine (measured 650-760 ms)
    expect(Date.now() - t0).toBeLessThan(500 + 1000);
    expect((await client.closed).code).toBe(1011);
  }, 30_000);

  it('a worker that dies is reported at once, without waiting for the next frame', async () => {
    const s = await createSession(svc, acct.accessKey, {});
    const client = await StreamClient.connect(`${svc.wsBase}${s.streamUrl}`, { accessKey: acct.accessKey });
    await client.next('ready');
    const live = svc.service.sessions.served(s.sessionId)!;
    const { kWorker } = await import('../../src/engine/pool.js');
    await (live as unknown as { stream: { [k: symbol]: Worker } }).stream[kWorker]!.terminate();
    expect(await client.next('error', () => true, 5000)).toMatchObject({ code: 'ENGINE_FAILED' });
    expect((await client.closed).code).toBe(1011);
  }, 30_000);
});
