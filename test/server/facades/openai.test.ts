// OpenAI's transcription API served by scribed, driven by OpenAI's own SDK (`openai` 5.x)
// against a real server on the store under test: every response_format, timestamps, models,
// the errors in OpenAI's shape and statuses (as the SDK's error classes), the History row and
// the Characters charged, and nothing charged for a refused request.
import fs from 'node:fs';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../../helpers/service.js';
import { loadClips } from '../../helpers/audio.js';
import { wordErrorRate } from '../../../src/core/wer.js';
import { documentedAnswer } from '../../helpers/openapi-answer.js';
import type { ProvisionedAccount } from '../../../src/accounts/provision.js';

const clips = loadClips();
const clip = clips.find((c) => c.id === 'librivox-0870')!;
const HISTORY = '/sound_clone/api/v1/stt/transcriptions';

let svc: TestService;
let alice: ProvisionedAccount;
let client: OpenAI;

beforeAll(async () => {
  svc = await startService({ maxDecoders: 2 });
  alice = await svc.account(10_000n);
  client = new OpenAI({ apiKey: alice.accessKey, baseURL: `${svc.baseUrl}/v1`, maxRetries: 0 });
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

async function native(path: string, key: string): Promise<any> {
  const res = await fetch(`${svc.baseUrl}${path}`, { headers: { accessKey: key } });
  return res.json();
}

async function balance(key: string): Promise<bigint> {
  return BigInt((await native('/sound_clone/api/v1/account', key)).data.characters);
}

async function history(key: string): Promise<any[]> {
  return (await native(`${HISTORY}?limit=100`, key)).data.items;
}

/** The SDK's rejection, for assertions on its class and fields. */
async function rejection(p: Promise<unknown>): Promise<any> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('the request was not refused');
}

const words = (text: string) =>
  text
    .trim()
    .split(/\s+/)
    .filter((w) => w !== '');

describe('POST /v1/audio/transcriptions through the openai SDK', () => {
  it('json: the words of the clip, as a batch job of the account with its History row and Characters', async () => {
    const before = await balance(alice.accessKey);
    const rowsBefore = (await history(alice.accessKey)).length;
    const t = await client.audio.transcriptions.create({ file: fs.createReadStream(clip.wavFile), model: 'whisper-1' });
    // The recognizer's own accuracy on these clips is 20-35% WER (docs/engines.md).
    expect(wordErrorRate(clip.reference, t.text).wer).toBeLessThan(0.45);
    // Readable as native batch text is by default (docs/compat.md): sentence case, not lower case.
    expect(t.text.trim()[0]).toMatch(/[A-Z0-9]/);
    // 7.1 s of audio: 8 Characters, as the native batch API charges (1 per started second).
    expect(await balance(alice.accessKey)).toBe(before - 8n);
    const rows = await history(alice.accessKey);
    expect(rows.length).toBe(rowsBefore + 1);
    expect(rows[0]).toMatchObject({ kind: 'batch', status: 'COMPLETED', title: 'OpenAI transcription' });
    // The same transcript is kept in History.
    const kept = await native(`${HISTORY}/${rows[0].transcriptionId}/transcript?format=json`, alice.accessKey);
    expect(kept.text).toBe(t.text);
  }, 60_000);

  it('text, srt and vtt are the native transcript formats with the same words; the model name of the node works too', async () => {
    const json = await client.audio.transcriptions.create({
      file: fs.createReadStream(clip.wavFile),
      model: 'whisper-1',
      response_format: 'json',
    });
    const text = await client.audio.transcriptions.create({
      file: fs.createReadStream(clip.wavFile),
      model: 'gpt-4o-transcribe',
      response_format: 'text',
    });
    expect(typeof text).toBe('string');
    expect(words(text)).toEqual(words(json.text));
    const srt = await client.audio.transcriptions.create({
      file: fs.createReadStream(clip.wavFile),
      model: 'scribed-pocketsphinx',
      response_format: 'srt',
    });
    expect(srt).toMatch(/^1\n\d\d:\d\d:\d\d,\d{3} --> \d\d:\d\d:\d\d,\d{3}\n\S/);
    const srtWords = srt.split('\n').filter((l) => l !== '' && !/^\d+$/.test(l) && !l.includes('-->'));
    expect(words(srtWords.join(' '))).toEqual(words(json.text));
    const vtt = await client.audio.transcriptions.create({
      file: fs.createReadStream(clip.wavFile),
      model: 'whisper-1',
      response_format: 'vtt',
    });
    expect(vtt.startsWith('WEBVTT\n\n')).toBe(true);
    expect(vtt).toMatch(/\n\d\d:\d\d:\d\d\.\d{3} --> \d\d:\d\d:\d\d\.\d{3}\n/);
  }, 90_000);

  it('verbose_json with word and segment timestamps: ordered times inside the clip, words matching the text', async () => {
    const t = await client.audio.transcriptions.create({
      file: fs.createReadStream(clip.wavFile),
      model: 'whisper-1',
      response_format: 'verbose_json',
      timestamp_granularities: ['word', 'segment'],
      language: 'en',
      prompt: 'Dashwood, prudently',
      temperature: 0.2,
    });
    expect(t.language).toBe('english');
    expect(Math.abs(t.duration - clip.durationSec)).toBeLessThan(0.1);
    expect(wordErrorRate(clip.reference, t.text).wer).toBeLessThan(0.45);
    expect(t.words!.length).toBeGreaterThan(10);
    expect(
      t
        .words!.map((w) => w.word)
        .join(' ')
        .toLowerCase(),
    ).toBe(words(t.text).join(' ').toLowerCase());
    let last = 0;
    for (const w of t.words!) {
      expect(w.start).toBeGreaterThanOrEqual(last);
      expect(w.end).toBeGreaterThan(w.start);
      expect(w.end).toBeLessThanOrEqual(clip.durationSec + 0.05);
      last = w.start;
    }
    expect(t.segments!.length).toBeGreaterThan(0);
    for (const s of t.segments!) {
      expect(s.end).toBeGreaterThan(s.start);
      expect(typeof s.avg_logprob).toBe('number');
    }
    expect(t.segments!.map((s) => s.text).join(' ')).toBe(t.text);
    // The answer is the one the API document describes.
    expect((await documentedAnswer(svc.baseUrl, '/v1/audio/transcriptions', 'post'))(t)).toBeNull();
    // Segments only unless words are asked for.
    const segOnly = await client.audio.transcriptions.create({
      file: fs.createReadStream(clip.wavFile),
      model: 'whisper-1',
      response_format: 'verbose_json',
    });
    expect(segOnly.segments!.length).toBeGreaterThan(0);
    expect(segOnly.words).toBeUndefined();
  }, 90_000);

  it('stream: true gives transcript.text.delta events adding up to transcript.text.done, the same text as without, for every model name', async () => {
    const plain = await client.audio.transcriptions.create({ file: fs.createReadStream(clip.wavFile), model: 'gpt-4o-transcribe' });
    const stream = await client.audio.transcriptions.create({
      file: fs.createReadStream(clip.wavFile),
      model: 'gpt-4o-transcribe',
      stream: true,
    });
    const events: any[] = [];
    for await (const e of stream) events.push(e);
    const done = events.at(-1);
    expect(done).toMatchObject({ type: 'transcript.text.done', usage: { type: 'duration', seconds: 8 } });
    expect(done.text).toBe(plain.text);
    const deltas = events.slice(0, -1);
    expect(deltas.length).toBeGreaterThan(0);
    expect(deltas.every((e) => e.type === 'transcript.text.delta')).toBe(true);
    expect(deltas.map((e) => e.delta).join('')).toBe(done.text);
    // whisper-1 streams too (OpenAI's ignores the flag; here every name is the same recognizer).
    const whisper: any[] = [];
    for await (const e of await client.audio.transcriptions.create({
      file: fs.createReadStream(clip.wavFile),
      model: 'whisper-1',
      stream: true,
    }))
      whisper.push(e);
    expect(whisper.at(-1)).toMatchObject({ type: 'transcript.text.done', text: plain.text });
  }, 90_000);

  it('GET /v1/models lists the node model and the OpenAI names it serves', async () => {
    const ids: string[] = [];
    for await (const m of client.models.list()) ids.push(m.id);
    expect(ids).toEqual(['scribed-pocketsphinx', 'whisper-1', 'gpt-4o-transcribe', 'gpt-4o-mini-transcribe']);
  });

  it('errors in OpenAI shape and status, and a refused request charges nothing and leaves no row', async () => {
    const bob = await svc.account(1_000n);
    const bobClient = new OpenAI({ apiKey: bob.accessKey, baseURL: `${svc.baseUrl}/v1`, maxRetries: 0 });
    const file = () => fs.createReadStream(clip.wavFile);

    const badKey = new OpenAI({ apiKey: 'sk_not_a_key', baseURL: `${svc.baseUrl}/v1`, maxRetries: 0 });
    const e401 = await rejection(badKey.audio.transcriptions.create({ file: file(), model: 'whisper-1' }));
    expect(e401).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(e401.status).toBe(401);
    expect(e401.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_api_key', param: null });
    expect((await documentedAnswer(svc.baseUrl, '/v1/audio/transcriptions', 'post', '401'))({ error: e401.error })).toBeNull();
    expect(typeof e401.error.message).toBe('string');
    // The native header alone is not OpenAI's scheme.
    const raw = await fetch(`${svc.baseUrl}/v1/models`, { headers: { accessKey: bob.accessKey } });
    expect(raw.status).toBe(401);
    expect(Object.keys(((await raw.json()) as { error: object }).error).sort()).toEqual(['code', 'message', 'param', 'type']);

    const badModel = await rejection(bobClient.audio.transcriptions.create({ file: file(), model: 'whisper-2' }));
    expect(badModel).toBeInstanceOf(OpenAI.BadRequestError);
    expect(badModel.error).toMatchObject({ type: 'invalid_request_error', param: 'model', code: 'model_not_found' });

    const badFormat = await rejection(
      bobClient.audio.transcriptions.create({ file: file(), model: 'whisper-1', response_format: 'docx' as 'json' }),
    );
    expect(badFormat).toBeInstanceOf(OpenAI.BadRequestError);
    expect(badFormat.error.param).toBe('response_format');

    const granularityWithoutVerbose = await rejection(
      bobClient.audio.transcriptions.create({ file: file(), model: 'whisper-1', timestamp_granularities: ['word'] }),
    );
    expect(granularityWithoutVerbose.error.param).toBe('timestamp_granularities');

    const badLanguage = await rejection(bobClient.audio.transcriptions.create({ file: file(), model: 'whisper-1', language: 'xx' }));
    expect(badLanguage).toBeInstanceOf(OpenAI.BadRequestError);
    expect(badLanguage.error.param).toBe('language');

    const notAudio = await rejection(
      bobClient.audio.transcriptions.create({
        file: await OpenAI.toFile(Buffer.from('not audio at all, just text'), 'a.wav'),
        model: 'whisper-1',
      }),
    );
    expect(notAudio).toBeInstanceOf(OpenAI.BadRequestError);
    expect(notAudio.error).toMatchObject({ param: 'file', code: 'invalid_file_format' });

    const unknownField = await rejection(
      bobClient.audio.transcriptions.create({ file: file(), model: 'whisper-1', chunking_strategy: 'auto' } as never),
    );
    expect(unknownField).toBeInstanceOf(OpenAI.BadRequestError);
    expect(unknownField.error).toMatchObject({ param: 'chunking_strategy', code: 'unknown_parameter' });

    const streamSrt = await rejection(
      bobClient.audio.transcriptions.create({ file: file(), model: 'gpt-4o-transcribe', stream: true, response_format: 'srt' }),
    );
    expect(streamSrt).toBeInstanceOf(OpenAI.BadRequestError);
    expect(streamSrt.error.param).toBe('response_format');

    const form = new FormData();
    form.append('model', 'whisper-1');
    form.append('constructor', 'x');
    form.append('file', new Blob([fs.readFileSync(clip.wavFile)]), 'a.wav');
    const proto = await fetch(`${svc.baseUrl}/v1/audio/transcriptions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bob.accessKey}` },
      body: form,
    });
    expect(proto.status).toBe(400);
    // A field named like an inherited property is a bad request, never a fault.
    expect(((await proto.json()) as { error: { type: string } }).error.type).toBe('invalid_request_error');

    expect(await balance(bob.accessKey)).toBe(1_000n);
    expect(await history(bob.accessKey)).toEqual([]);

    // A balance short of the file: OpenAI's quota error (429), nothing charged.
    const poor = await svc.account(3n);
    const poorClient = new OpenAI({ apiKey: poor.accessKey, baseURL: `${svc.baseUrl}/v1`, maxRetries: 0 });
    const quota = await rejection(poorClient.audio.transcriptions.create({ file: file(), model: 'whisper-1' }));
    expect(quota).toBeInstanceOf(OpenAI.RateLimitError);
    expect(quota.error).toMatchObject({ type: 'insufficient_quota', code: 'insufficient_quota' });
    expect(await balance(poor.accessKey)).toBe(3n);
    expect(await history(poor.accessKey)).toEqual([]);
    // No staged upload is left behind by any of them.
    expect(fs.readdirSync(`${svc.dataDir}/batch`).filter((f) => f.startsWith('upload-') || f.startsWith('decode-'))).toEqual([]);
  }, 90_000);
});
