// suppressBackgroundSpeech on real speech: a second talker 25 dB below the speaker.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.js';
import { loadClips, pcmSamples } from '../helpers/audio.js';
import { concat, createSession, streamAndClose } from '../helpers/live.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';
import { wordErrorRate } from '../../src/core/wer.js';

const RATE = 16000;
const byId = (id: string) => loadClips().find((c) => c.id === id)!;
const main1 = byId('librivox-0880');
const main2 = byId('librivox-0890');
const background = byId('librivox-0930');
const gain = 10 ** (-25 / 20);
const far = pcmSamples(background).map((v) => Math.round(v * gain));
// speaker, then the background talker alone in the pause, then the speaker again
const audio = concat([
  pcmSamples(main1),
  new Int16Array(0.2 * RATE),
  far,
  new Int16Array(0.2 * RATE),
  pcmSamples(main2),
  new Int16Array(0.5 * RATE),
]);
const mainRef = `${main1.reference} ${main2.reference}`;

let svc: TestService;
let acct: ProvisionedAccount;
beforeAll(async () => {
  svc = await startService();
  acct = await svc.account(100_000n);
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

async function transcribe(options: Record<string, unknown>): Promise<{ text: string; suppressed: number; finals: any[] }> {
  const s = await createSession(svc, acct.accessKey, options);
  const { finals } = await streamAndClose(svc, acct.accessKey, s.streamUrl, audio);
  // The recognizer's words (rawText where readableText changed them): compared word for word.
  return {
    text: finals
      .map((f) => f.rawText ?? f.text)
      .filter(Boolean)
      .join(' '),
    suppressed: finals.reduce((n, f) => n + (f.suppressedWords ?? 0), 0),
    finals,
  };
}

describe('suppressBackgroundSpeech', () => {
  it('drops the quiet talker and keeps the speaker', async () => {
    const plain = await transcribe({});
    const filtered = await transcribe({ suppressBackgroundSpeech: true });
    // words only the background talker said ("might", "even", "made", ...)
    const mainWords = new Set(mainRef.split(' '));
    const backgroundOnly = (t: string) => t.split(' ').filter((w) => background.reference.split(' ').includes(w) && !mainWords.has(w));
    console.log(`background suppression:\n  off: "${plain.text}"\n  on:  "${filtered.text}" (${filtered.suppressed} words dropped)`);
    // without suppression the recognizer writes down words where the background talker spoke
    expect(plain.text.split(' ').length).toBeGreaterThan(filtered.text.split(' ').length);
    expect(filtered.suppressed).toBeGreaterThan(0);
    // with it, the transcript is closer to the speaker's words alone
    expect(wordErrorRate(mainRef, filtered.text).wer).toBeLessThan(wordErrorRate(mainRef, plain.text).wer);
    expect(backgroundOnly(plain.text).length).toBeGreaterThan(0);
    expect(backgroundOnly(filtered.text)).toEqual([]);
    // alignment is off by default with suppression (spec)
    expect(filtered.finals[0]).not.toHaveProperty('words');
  }, 120_000);
});
