// Word confidences reach clients through the service: a live session's final and a
// batch job's transcript segments carry a posterior in [0, 1] on every word (pocketsphinx), not
// null as before.
import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';
import { devSetDir, loadClips, pcmSamples } from '../helpers/audio.js';
import { createSession, streamAndClose } from '../helpers/live.js';
import { startService, type TestService } from '../helpers/service.js';

const TRANSCRIPTIONS = '/sound_clone/api/v1/stt/transcriptions';
const clip = loadClips(devSetDir()).find((c) => c.id === 'librivox-0880')!;

let svc: TestService;
let acct: ProvisionedAccount;
beforeAll(async () => {
  svc = await startService();
  acct = await svc.account(100_000n);
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

function expectConfidences(words: Array<{ word: string; confidence: unknown }>): void {
  expect(words.length).toBeGreaterThan(3);
  for (const w of words) {
    expect(typeof w.confidence, `${w.word}: ${String(w.confidence)}`).toBe('number');
    expect(w.confidence).toBeGreaterThanOrEqual(0);
    expect(w.confidence).toBeLessThanOrEqual(1);
  }
  // Posteriors, not a constant: "he was not" is near certain, the misheard middle is not.
  const values = words.map((w) => w.confidence as number);
  expect(Math.max(...values)).toBeGreaterThan(0.9);
  expect(Math.min(...values)).toBeLessThan(0.5);
}

describe('word confidences through the service', () => {
  it('a live session final carries a confidence on every word, and so does its stored transcript', async () => {
    const s = await createSession(svc, acct.accessKey, { readableText: false });
    const { finals } = await streamAndClose(svc, acct.accessKey, s.streamUrl, pcmSamples(clip));
    const words = finals.flatMap((f: any) => f.words as Array<{ word: string; confidence: unknown }>);
    console.log(`live final: ${words.map((w) => `${w.word}:${(w.confidence as number).toFixed(2)}`).join(' ')}`);
    expectConfidences(words);
    const res = await fetch(`${svc.baseUrl}${TRANSCRIPTIONS}/${s.transcriptionId}/transcript?format=json`, {
      headers: { accessKey: acct.accessKey },
    });
    const stored = ((await res.json()) as any).segments.flatMap((seg: any) => seg.words);
    expect(stored.map((w: any) => w.confidence)).toEqual(words.map((w) => w.confidence));
  }, 60_000);

  it('a batch segment carries a confidence on every word', async () => {
    const form = new FormData();
    form.append('options', JSON.stringify({ readableText: false }));
    form.append('file', new Blob([fs.readFileSync(clip.wavFile)]), `${clip.id}.wav`);
    const res = await fetch(`${svc.baseUrl}${TRANSCRIPTIONS}`, {
      method: 'POST',
      headers: { accessKey: acct.accessKey, 'Idempotency-Key': `confidence-${randomUUID()}` },
      body: form,
    });
    const json = (await res.json()) as any;
    expect(res.status, JSON.stringify(json)).toBe(200);
    await svc.service.batch.idle();
    const t = await fetch(`${svc.baseUrl}${TRANSCRIPTIONS}/${json.data.transcriptionId}/transcript?format=json`, {
      headers: { accessKey: acct.accessKey },
    });
    const words = ((await t.json()) as any).segments.flatMap((seg: any) => seg.words);
    console.log(`batch segment: ${words.map((w: any) => `${w.word}:${w.confidence.toFixed(2)}`).join(' ')}`);
    expectConfidences(words);
  }, 60_000);
});
