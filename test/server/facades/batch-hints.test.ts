// Vocabulary hints on the batch path, through both facades' SDKs against a real server: a
// phrase the recognizer misses in a sample clip ("he was not an ill disposed young man") is
// recognized when Deepgram's `keyterm` / `keywords` or OpenAI's `prompt` names it, as the live
// path's vocabularyHints do (test/session/vocabulary.test.ts), and the native upload no longer
// names vocabularyHints as not applied. One store: the hints act in the recognizer, not the
// store.
import fs from 'node:fs';
import { createClient, type DeepgramClient } from '@deepgram/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../../helpers/service.js';
import { loadClips } from '../../helpers/audio.js';
import type { ProvisionedAccount } from '../../../src/accounts/provision.js';

const clip = loadClips().find((c) => c.id === 'librivox-0880')!;

let svc: TestService;
let alice: ProvisionedAccount;
let dg: DeepgramClient;
let openai: OpenAI;

beforeAll(async () => {
  svc = await startService({ maxDecoders: 2 });
  alice = await svc.account(10_000n);
  dg = createClient(alice.accessKey, { global: { url: svc.baseUrl } });
  openai = new OpenAI({ apiKey: alice.accessKey, baseURL: `${svc.baseUrl}/v1`, maxRetries: 0 });
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

async function deepgram(options: Record<string, unknown>): Promise<string> {
  const { result, error } = await dg.listen.prerecorded.transcribeFile(fs.readFileSync(clip.wavFile), options);
  expect(error).toBeNull();
  return result!.results.channels[0]!.alternatives[0]!.transcript;
}

describe('vocabulary hints on batch jobs', () => {
  // keywords map to the same native hints as keyterm (mapping.test.ts), and both facades run
  // the same batch job: one request without hints shows the miss.
  it('Deepgram keyterm and OpenAI prompt: the hinted phrase missed without them is recognized', async () => {
    const without = await deepgram({});
    expect(without).not.toContain('ill disposed');
    expect(await deepgram({ keyterm: ['ill disposed'] })).toContain('ill disposed');
    const prompted = await openai.audio.transcriptions.create({
      file: fs.createReadStream(clip.wavFile),
      model: 'whisper-1',
      prompt: 'Dashwood, ill disposed',
    });
    expect(prompted.text).toContain('ill disposed');
  }, 120_000);

  it('a native upload with vocabularyHints says nothing of them as not applied', async () => {
    const form = new FormData();
    form.append('file', new Blob([fs.readFileSync(clip.wavFile)]), 'clip.wav');
    form.append('options', JSON.stringify({ vocabularyHints: ['ill disposed'] }));
    const res = await fetch(`${svc.baseUrl}/sound_clone/api/v1/stt/transcriptions`, {
      method: 'POST',
      headers: { accessKey: alice.accessKey },
      body: form,
    });
    const body = (await res.json()) as any;
    expect(res.status).toBe(200);
    expect(body.data.effectiveOptions.vocabularyHints).toEqual(['ill disposed']);
    expect(body.data.effectiveOptions.notApplied).toEqual([]);
    expect(body.data.notices.map((n: any) => n.code)).not.toContain('BATCH_OPTIONS_NOT_APPLIED');
  });
});
