// The redact option end to end with real speech: Allison's digit prompts (Debian's
// asterisk-core-sounds-en-wav) read the test card number 4111 1111 1111 1111, joined with sox.
// First, with redaction off, the recognizer hears a run of number words (so the check below
// has something to miss); then, on a service of its own (so no unredacted job shares its data
// dir), with redact ["pci", "numbers"] no transcript format, History row, store row, log line
// (debug level) or file under the data dir holds three digits in a row, spoken or written.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capturedLogger, startService, storeDump, type TestService } from '../helpers/service.js';
import { SPOKEN_RUN, cardClip, filesUnder, longestDigitRun, withoutNumericValues } from '../helpers/card-speech.js';

const TRANSCRIPTIONS = '/sound_clone/api/v1/stt/transcriptions';

type Json = any;

async function uploadAndWait(s: TestService, key: string, file: string, options: Record<string, unknown>): Promise<string> {
  const form = new FormData();
  form.append('options', JSON.stringify(options));
  form.append('file', new Blob([fs.readFileSync(file)]), 'card.wav');
  const res = await fetch(`${s.baseUrl}${TRANSCRIPTIONS}`, { method: 'POST', headers: { accessKey: key }, body: form });
  const json = (await res.json()) as Json;
  expect(res.status, JSON.stringify(json)).toBe(200);
  await s.service.batch.idle();
  return json.data.transcriptionId as string;
}

async function get(s: TestService, url: string, key: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`${s.baseUrl}${url}`, { headers: { accessKey: key } });
  return { status: res.status, body: await res.text() };
}

let clip: string;
let plain: TestService;
let redacting: TestService;
const logLines: string[] = [];

beforeAll(async () => {
  clip = cardClip();
  plain = await startService();
  redacting = await startService({ logger: capturedLogger('debug', logLines) });
}, 60_000);
afterAll(async () => {
  await plain?.stop();
  await redacting?.stop();
});

describe('redact on batch jobs, with a card number read by a human voice', () => {
  it('without redaction, the recognizer hears a run of number words', async () => {
    const a = await plain.account(10_000n);
    const id = await uploadAndWait(plain, a.accessKey, clip, { entityCategories: ['spelled_digits', 'credit_card'] });
    const t = JSON.parse((await get(plain, `${TRANSCRIPTIONS}/${id}/transcript?format=json`, a.accessKey)).body) as Json;
    expect(t.status).toBe('COMPLETED');
    const spoken = t.segments.map((s: Json) => s.rawText ?? s.text).join(' ');
    console.log(`heard without redaction: ${spoken}`);
    expect(longestDigitRun(spoken)).toBeGreaterThanOrEqual(6);
    expect(spoken).toMatch(SPOKEN_RUN);
  }, 120_000);

  it('with redact ["pci", "numbers"], no format, row, store table or data file holds it', async () => {
    const a = await redacting.account(10_000n);
    const id = await uploadAndWait(redacting, a.accessKey, clip, {
      redact: ['pci', 'numbers'],
      entityCategories: ['spelled_digits', 'credit_card', 'phone_number'],
    });
    const row = await get(redacting, `${TRANSCRIPTIONS}/${id}`, a.accessKey);
    const rowJson = JSON.parse(row.body) as Json;
    expect(rowJson.data.status).toBe('COMPLETED');
    expect(rowJson.data.effectiveOptions.redact).toEqual(['pci', 'numbers']);
    const outputs = [row.body];
    for (const format of ['json', 'txt', 'srt', 'vtt']) {
      const r = await get(redacting, `${TRANSCRIPTIONS}/${id}/transcript?format=${format}`, a.accessKey);
      expect(r.status).toBe(200);
      outputs.push(r.body);
    }
    const t = JSON.parse(outputs[1]!) as Json;
    console.log(`redacted: ${t.text} | redactions ${JSON.stringify(t.segments.flatMap((s: Json) => s.redactions ?? []))}`);
    expect(t.text).toMatch(/\[(CARD_NUMBER|NUMBER)\]/);
    const redactions = t.segments.flatMap((s: Json) => s.redactions ?? []);
    expect(redactions.length).toBeGreaterThan(0);
    for (const r of redactions) {
      expect(Object.keys(r).sort()).toEqual(['endMs', 'startMs', 'type']);
      expect(r.endMs).toBeGreaterThan(r.startMs);
    }
    for (const s of t.segments) for (const e of s.entities ?? []) expect(e.category).not.toMatch(/credit_card|spelled_digits/);
    // Timing kept: every token is a word with a start before its end.
    for (const w of t.segments.flatMap((s: Json) => s.words)) expect(w.endMs).toBeGreaterThan(w.startMs);
    for (const out of outputs) {
      // The text outputs only (formats hold times, which are digits, but never a spoken run).
      expect(out).not.toMatch(SPOKEN_RUN);
      expect(out).not.toMatch(/4111|1111/);
    }
    expect(longestDigitRun(t.segments.map((s: Json) => `${s.text} ${s.rawText ?? ''}`).join(' '))).toBeLessThan(3);
    expect(logLines.length).toBeGreaterThan(0);
    for (const line of logLines) {
      expect(line).not.toMatch(SPOKEN_RUN);
      expect(withoutNumericValues(line)).not.toMatch(/4111|1111/);
    }
    const dump = await storeDump(redacting);
    expect(dump).not.toMatch(SPOKEN_RUN);
    expect(dump).not.toMatch(/4111|1111 1111/);
    for (const file of filesUnder(redacting.dataDir)) {
      const bytes = fs.readFileSync(file).toString('latin1');
      expect(bytes, file).not.toMatch(SPOKEN_RUN);
      expect(bytes, file).not.toMatch(/4111 ?1111|1111 1111/);
    }
  }, 120_000);
});
