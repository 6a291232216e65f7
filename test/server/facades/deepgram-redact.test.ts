// Deepgram's `redact` through Deepgram's own SDK (@deepgram/sdk 4.x) against a real server on
// the store under test, with real speech: the spoken test card (test/helpers/card-speech.ts).
// Live (GET /v1/listen, redact=numbers, interim results): no interim or final Results, word or
// transcript shows three digits in a row, and the redacted span is one timed word. Pre-recorded
// (POST /v1/listen, redact=pci&redact=numbers): the same of the response.
import fs from 'node:fs';
import { createClient, LiveTranscriptionEvents, type DeepgramClient } from '@deepgram/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../../helpers/service.js';
import { SPOKEN_RUN, cardClip, longestDigitRun } from '../../helpers/card-speech.js';
import { rawPcm } from '../../helpers/speech-fixtures.js';

let svc: TestService;
let dg: DeepgramClient;
let clip: string;
let accessKey: string;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  clip = cardClip();
  svc = await startService({ maxDecoders: 2 });
  accessKey = (await svc.account(10_000n)).accessKey;
  dg = createClient(accessKey, { global: { url: svc.baseUrl } });
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

function waitFor<T>(pred: () => T | undefined, ms: number, what: string): Promise<T> {
  const until = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const tick = () => {
      const v = pred();
      if (v !== undefined) return resolve(v);
      if (Date.now() > until) return reject(new Error(`timed out waiting for ${what}`));
      setTimeout(tick, 20);
    };
    tick();
  });
}

describe('Deepgram redact= through the SDK', () => {
  it('live, redact=numbers: no interim or final Results shows three digits; the span is one timed [NUMBER] word', async () => {
    const pcm = rawPcm(clip, 8000);
    const conn = dg.listen.live({ encoding: 'linear16', sample_rate: 8000, interim_results: true, redact: 'numbers' });
    const results: any[] = [];
    let metadata: any;
    conn.on(LiveTranscriptionEvents.Transcript, (m: any) => results.push(m));
    conn.on(LiveTranscriptionEvents.Metadata, (m: any) => (metadata = m));
    await new Promise<void>((resolve, reject) => {
      conn.on(LiveTranscriptionEvents.Open, () => resolve());
      conn.on(LiveTranscriptionEvents.Error, (e: unknown) => reject(new Error(`live error ${String((e as Error).message ?? e)}`)));
    });
    // 40 ms pieces at twice real time.
    for (let at = 0; at < pcm.length; at += 640) {
      const piece = pcm.subarray(at, Math.min(pcm.length, at + 640));
      conn.send(piece.buffer.slice(piece.byteOffset, piece.byteOffset + piece.length));
      await sleep(20);
    }
    conn.requestClose();
    await waitFor(() => metadata, 60_000, 'Metadata');
    const interim = results.filter((m) => !m.is_final);
    const finals = results.filter((m) => m.is_final);
    console.log(
      `Deepgram live, redact=numbers: ${finals.map((m) => m.channel.alternatives[0].transcript).join(' | ')} (${interim.length} interim)`,
    );
    expect(interim.length).toBeGreaterThan(0);
    for (const m of results) {
      const alt = m.channel.alternatives[0];
      for (const said of [
        alt.transcript,
        alt.words.map((w: any) => w.word).join(' '),
        alt.words.map((w: any) => w.punctuated_word).join(' '),
      ]) {
        expect(longestDigitRun(said), said).toBeLessThan(3);
        expect(said).not.toMatch(SPOKEN_RUN);
      }
    }
    const tokens = finals.flatMap((m) => m.channel.alternatives[0].words).filter((w: any) => w.punctuated_word === '[NUMBER]');
    expect(tokens.length).toBeGreaterThan(0);
    for (const w of tokens) expect(w.end).toBeGreaterThan(w.start);
    // Behind it: the native session asked for numbers.
    const [tid] = metadata.transcription_ids;
    const row = (await (
      await fetch(`${svc.baseUrl}/sound_clone/api/v1/stt/transcriptions/${tid}`, { headers: { accessKey } })
    ).json()) as any;
    const session = (await (
      await fetch(`${svc.baseUrl}/sound_clone/api/v1/stt/realtime/sessions/${row.data.sessionId}`, { headers: { accessKey } })
    ).json()) as any;
    expect(session.data.effectiveOptions.redact).toEqual(['numbers']);
  }, 90_000);

  it('pre-recorded, redact=pci&redact=numbers: the response holds no three digits', async () => {
    const { result, error } = await dg.listen.prerecorded.transcribeFile(fs.readFileSync(clip), { redact: ['pci', 'numbers'] });
    expect(error).toBeNull();
    const alt = result!.results.channels[0]!.alternatives[0]!;
    console.log(`Deepgram pre-recorded, redact=pci,numbers: ${alt.transcript}`);
    expect(alt.transcript).toMatch(/\[(CARD_NUMBER|NUMBER)\]/);
    const body = JSON.stringify(result);
    expect(body).not.toMatch(SPOKEN_RUN);
    expect(longestDigitRun(`${alt.transcript} ${alt.words.map((w) => w.word).join(' ')}`)).toBeLessThan(3);
  }, 90_000);
});
