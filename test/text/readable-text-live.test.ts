// readableText end to end: real speech through a live session and a batch job, on by default,
// off on request. Prints the recognizer's text and the readable text of each clip (the
// examples in docs/options.md come from these lines).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import { startService, type TestService } from '../helpers/service.js';
import { createSession, streamAndClose } from '../helpers/live.js';
import { fillerClip, moneyClip, rawPcm } from '../helpers/speech-fixtures.js';
import { loadClips, pcmSamples } from '../helpers/audio.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';

const TRANSCRIPTIONS = '/sound_clone/api/v1/stt/transcriptions';
const SPOKEN_AMOUNT = /twenty (one|two|three|four|five|six|seven|eight|nine) dollars?\b/;
const WRITTEN_AMOUNT = /\$2\d\b/;

let svc: TestService;
let acct: ProvisionedAccount;
beforeAll(async () => {
  svc = await startService();
  acct = await svc.account(100_000n);
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

function samples(pcm: Buffer): Int16Array {
  return new Int16Array(pcm.buffer.slice(pcm.byteOffset, pcm.byteOffset + pcm.byteLength));
}

async function transcriptJson(transcriptionId: string) {
  const res = await fetch(`${svc.baseUrl}${TRANSCRIPTIONS}/${transcriptionId}/transcript?format=json`, {
    headers: { accessKey: acct.accessKey },
  });
  return (await res.json()) as any;
}

describe('readableText on live sessions', () => {
  const money = samples(rawPcm(moneyClip(), 8000));

  it('is on by default: numerals, sentence case, rawText, entities on the readable text, words that match it', async () => {
    const s = await createSession(svc, acct.accessKey, { inputEncoding: 'pcm_s16le_8000', entityCategories: ['money'] });
    expect(s.effectiveOptions.readableText).toBe(true);
    const { finals } = await streamAndClose(svc, acct.accessKey, s.streamUrl, money, 8000);
    const f = finals[0]!;
    console.log(`readableText (Allison prompts "20" "5" "dollars", 8 kHz): "${f.rawText}" -> "${f.text}"`);
    // pocketsphinx hears "twenty nine dollar(s)" or "twenty five dollars" in these prompts.
    expect(f.rawText).toMatch(SPOKEN_AMOUNT);
    expect(f.text).toMatch(WRITTEN_AMOUNT);
    expect(f.text).not.toMatch(/twenty|dollar/);
    expect(f.text[0]).toBe(f.text[0]!.toUpperCase());
    // Each word is one word of the text; "$25" spans "twenty" to "dollars".
    expect(f.words.map((w: any) => w.word).join(' ')).toBe(f.text);
    expect(f.characters.map((c: any) => c.char).join('')).toBe(f.text);
    const dollars = f.words.find((w: any) => w.word.startsWith('$'));
    expect(Number(dollars.end.sample) - Number(dollars.start.sample)).toBeGreaterThan(8000 * 0.5);
    const e = f.entities.find((x: any) => x.category === 'money');
    expect(e.value).toMatch(/^USD 2\d\.00$/);
    expect(f.text.slice(e.start, e.end)).toBe(e.text);
    expect(e.text).toMatch(/^\$2\d$/);
    // The stored segment is the same, with rawText.
    const seg = (await transcriptJson(s.transcriptionId)).segments[0];
    expect(seg).toMatchObject({ text: f.text, rawText: f.rawText });
  }, 60_000);

  it('off on request: the recognizer text as it was, no rawText', async () => {
    const s = await createSession(svc, acct.accessKey, { inputEncoding: 'pcm_s16le_8000', readableText: false });
    expect(s.effectiveOptions.readableText).toBe(false);
    const { finals } = await streamAndClose(svc, acct.accessKey, s.streamUrl, money, 8000);
    expect(finals[0]!.text).toMatch(SPOKEN_AMOUNT);
    expect(finals[0]).not.toHaveProperty('rawText');
  }, 60_000);

  it('real examples: espeak hesitations with an amount and a phone number, and the LibriVox dev clips', async () => {
    const clips = [
      { id: 'espeak-fillers', pcm: samples(rawPcm(fillerClip(), 16000)) },
      ...loadClips().map((c) => ({ id: c.id, pcm: pcmSamples(c) })),
    ];
    for (const c of clips) {
      const s = await createSession(svc, acct.accessKey, {});
      const { finals } = await streamAndClose(svc, acct.accessKey, s.streamUrl, c.pcm);
      for (const f of finals) {
        console.log(`readableText ${c.id}: "${f.rawText ?? f.text}" -> "${f.text}"`);
        expect(f.text[0]).toBe(f.text[0]!.toUpperCase());
        if (f.rawText !== undefined) expect(f.text).not.toBe(f.rawText);
        expect(f.words.map((w: any) => w.word).join(' ')).toBe(f.text);
      }
    }
  }, 180_000);
});

describe('readableText on batch jobs', () => {
  it('is on by default and can be turned off', async () => {
    const upload = async (options: Record<string, unknown>) => {
      const form = new FormData();
      form.append('options', JSON.stringify(options));
      form.append('file', new Blob([fs.readFileSync(moneyClip())]), 'money.wav');
      const res = await fetch(`${svc.baseUrl}${TRANSCRIPTIONS}`, {
        method: 'POST',
        headers: { accessKey: acct.accessKey, 'Idempotency-Key': `readable-${randomUUID()}` },
        body: form,
      });
      const json = (await res.json()) as any;
      expect(res.status, JSON.stringify(json)).toBe(200);
      return json.data;
    };
    const on = await upload({});
    const off = await upload({ readableText: false });
    expect(on.effectiveOptions.readableText).toBe(true);
    expect(off.effectiveOptions.readableText).toBe(false);
    await svc.service.batch.idle();
    const a = (await transcriptJson(on.transcriptionId)).segments;
    const b = (await transcriptJson(off.transcriptionId)).segments;
    expect(a.map((s: any) => s.text).join(' ')).toMatch(WRITTEN_AMOUNT);
    expect(a.map((s: any) => s.rawText).join(' ')).toMatch(SPOKEN_AMOUNT);
    expect(b.map((s: any) => s.text).join(' ')).toMatch(SPOKEN_AMOUNT);
    expect(b.every((s: any) => s.rawText === undefined)).toBe(true);
  }, 60_000);
});
