// Deepgram's pre-recorded listen API served by scribed, driven by Deepgram's own SDK
// (`@deepgram/sdk` 4.x, pointed at the server by its base URL) against a real server on the
// store under test: a WAV file, headerless mu-law, a stereo call, readable text and
// utterances; parameters refused by name; errors in Deepgram's shape; a URL source refused
// for a loopback address by default and fetched where the operator allows it; the History
// row and the Characters charged, and nothing charged for a refused request.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { createClient, type DeepgramClient } from '@deepgram/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, tempDir, type TestService } from '../../helpers/service.js';
import { loadClips } from '../../helpers/audio.js';
import { wordErrorRate } from '../../../src/core/wer.js';
import { documentedAnswer } from '../../helpers/openapi-answer.js';
import type { ProvisionedAccount } from '../../../src/accounts/provision.js';

const clips = loadClips();
const clip = clips.find((c) => c.id === 'librivox-0870')!;
const customerClip = clips.find((c) => c.id === 'librivox-0920')!;
const HISTORY = '/sound_clone/api/v1/stt/transcriptions';
const dir = tempDir('scribed-deepgram-');
const stereo = path.join(dir, 'call.wav');

let svc: TestService;
let alice: ProvisionedAccount;
let dg: DeepgramClient;
let audioServer: http.Server;
let audioUrl: string;
let audioHits = 0;

beforeAll(async () => {
  // A call: the agent (left) speaks, then the customer (right) answers.
  const sox = (...args: string[]) => execFileSync('sox', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  sox(clip.wavFile, path.join(dir, 'l.wav'), 'pad', '0', String(customerClip.durationSec + 0.5));
  sox(customerClip.wavFile, path.join(dir, 'r.wav'), 'pad', String(clip.durationSec + 0.5), '0');
  sox('-M', path.join(dir, 'l.wav'), path.join(dir, 'r.wav'), stereo);
  audioServer = http.createServer((_req, res) => {
    audioHits++;
    res.setHeader('content-type', 'audio/wav');
    res.end(fs.readFileSync(clip.wavFile));
  });
  await new Promise<void>((resolve) => audioServer.listen(0, '127.0.0.1', resolve));
  audioUrl = `http://127.0.0.1:${(audioServer.address() as { port: number }).port}/clip.wav`;
  svc = await startService({ maxDecoders: 2 });
  alice = await svc.account(10_000n);
  dg = createClient(alice.accessKey, { global: { url: svc.baseUrl } });
}, 60_000);
afterAll(async () => {
  await svc?.stop();
  audioServer?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function native(p: string, key: string): Promise<any> {
  return (await fetch(`${svc.baseUrl}${p}`, { headers: { accessKey: key } })).json();
}
const balance = async (key: string) => BigInt((await native('/sound_clone/api/v1/account', key)).data.characters);
const history = async (key: string): Promise<any[]> => (await native(`${HISTORY}?limit=100`, key)).data.items;

/** The body of a Deepgram SDK error (the SDK keeps the JSON body as the message). */
function errorBody(error: unknown): { err_code: string; err_msg: string; request_id: string } {
  return JSON.parse((error as Error).message);
}

describe('POST /v1/listen through the @deepgram/sdk pre-recorded client', () => {
  it('transcribeFile: a WAV file, readable text and utterances, as a batch job of the account', async () => {
    const before = await balance(alice.accessKey);
    const { result, error } = await dg.listen.prerecorded.transcribeFile(fs.readFileSync(clip.wavFile), {
      model: 'nova-2',
      smart_format: true,
      utterances: true,
      tag: ['crm-42'],
    });
    expect(error).toBeNull();
    const alt = result!.results.channels[0]!.alternatives[0]!;
    // The recognizer's own accuracy on these clips is 20-35% WER (docs/engines.md).
    expect(wordErrorRate(clip.reference, alt.transcript).wer).toBeLessThan(0.45);
    expect(alt.words.length).toBeGreaterThan(10);
    let last = 0;
    for (const w of alt.words) {
      expect(w.start).toBeGreaterThanOrEqual(last);
      expect(w.end).toBeGreaterThan(w.start);
      expect(w.confidence).toBeGreaterThanOrEqual(0);
      expect(w.confidence).toBeLessThanOrEqual(1);
      expect(w.punctuated_word).toBeDefined(); // smart_format asked for it
      last = w.start;
    }
    expect(alt.confidence).toBeGreaterThan(0);
    expect(result!.metadata).toMatchObject({ channels: 1, models: ['scribed-pocketsphinx'] });
    expect(Math.abs(result!.metadata.duration - clip.durationSec)).toBeLessThan(0.1);
    expect(result!.metadata.request_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(result!.results.utterances!.map((u) => u.transcript).join(' ')).toBe(alt.transcript);
    // The answer is the one the API document describes.
    expect((await documentedAnswer(svc.baseUrl, '/v1/listen', 'post'))(result)).toBeNull();
    // Charged as the native batch API charges: 7.1 s, 8 Characters; the History row is titled by the tag.
    expect(await balance(alice.accessKey)).toBe(before - 8n);
    const [row] = await history(alice.accessKey);
    expect(row).toMatchObject({ kind: 'batch', status: 'COMPLETED', title: 'Deepgram: crm-42' });
    expect((result!.metadata as unknown as { transcription_ids: string[] }).transcription_ids).toEqual([row.transcriptionId]);
  }, 60_000);

  it('headerless mu-law 8 kHz (encoding, sample_rate) is transcribed like the same call as a file', async () => {
    const { result, error } = await dg.listen.prerecorded.transcribeFile(clip.mulaw8k, { encoding: 'mulaw', sample_rate: 8000 });
    expect(error).toBeNull();
    expect(Math.abs(result!.metadata.duration - clip.durationSec)).toBeLessThan(0.1);
    expect(result!.results.channels[0]!.alternatives[0]!.words[0]!.punctuated_word).toBeUndefined();
    // Telephone-band audio goes to the telephony front end; accuracy is lower than wideband.
    expect(wordErrorRate(clip.reference, result!.results.channels[0]!.alternatives[0]!.transcript).wer).toBeLessThan(0.6);
    // encoding without sample_rate is refused by name.
    const { error: noRate } = await dg.listen.prerecorded.transcribeFile(clip.mulaw8k, { encoding: 'mulaw' });
    expect(errorBody(noRate).err_msg).toMatch(/sample_rate/);
  }, 60_000);

  it('multichannel: a stereo call gives one channel per party, each with its own words, each charged', async () => {
    const before = await balance(alice.accessKey);
    const { result, error } = await dg.listen.prerecorded.transcribeFile(fs.readFileSync(stereo), { multichannel: true });
    expect(error).toBeNull();
    expect(result!.metadata.channels).toBe(2);
    const [agent, customer] = result!.results.channels.map((c) => c.alternatives[0]!.transcript);
    expect(wordErrorRate(clip.reference, agent!).wer).toBeLessThan(0.45);
    expect(wordErrorRate(customerClip.reference, customer!).wer).toBeLessThan(0.6);
    // The customer speaks after the agent's turn.
    expect(result!.results.channels[1]!.alternatives[0]!.words[0]!.start).toBeGreaterThan(clip.durationSec);
    const seconds = Math.ceil(clip.durationSec + customerClip.durationSec + 0.5);
    expect(await balance(alice.accessKey)).toBe(before - 2n * BigInt(seconds));
  }, 90_000);

  it('refuses an unsupported parameter by name, a bad key, and a bad body in Deepgram shape, charging nothing', async () => {
    const bob = await svc.account(1_000n);
    const bobDg = createClient(bob.accessKey, { global: { url: svc.baseUrl } });
    const audio = fs.readFileSync(clip.wavFile);

    const { error: diarize } = await bobDg.listen.prerecorded.transcribeFile(audio, { diarize: true });
    expect((diarize as { status?: number }).status).toBe(400);
    expect(errorBody(diarize)).toMatchObject({ err_code: 'INVALID_QUERY_PARAMETER' });
    expect(errorBody(diarize).err_msg).toMatch(/^diarize: not supported/);
    expect(errorBody(diarize).request_id).toMatch(/^[0-9a-f-]{36}$/);
    const { error: unknown } = await bobDg.listen.prerecorded.transcribeFile(audio, { no_such_option: 'x' } as never);
    expect(errorBody(unknown).err_msg).toMatch(/^no_such_option: unknown/);

    const badKey = createClient('sk_not_a_key', { global: { url: svc.baseUrl } });
    const { error: auth } = await badKey.listen.prerecorded.transcribeFile(audio, {});
    expect((auth as { status?: number }).status).toBe(401);
    expect(errorBody(auth).err_code).toBe('INVALID_AUTH');

    const { error: notAudio } = await bobDg.listen.prerecorded.transcribeFile(Buffer.from('this is not audio'), {});
    expect((notAudio as { status?: number }).status).toBe(400);
    expect(errorBody(notAudio).err_msg).toMatch(/^failed to process audio/);

    // The native header is not Deepgram's scheme; `Bearer` is accepted like `Token`.
    for (const headers of [{}, { 'content-type': 'audio/wav' }] as Record<string, string>[]) {
      const empty = await fetch(`${svc.baseUrl}/v1/listen`, {
        method: 'POST',
        headers: { authorization: `Token ${bob.accessKey}`, ...headers },
      });
      expect(empty.status).toBe(400);
      expect(((await empty.json()) as { err_msg: string }).err_msg).toBe('the request holds no audio');
    }
    const viaHeader = await fetch(`${svc.baseUrl}/v1/listen`, {
      method: 'POST',
      headers: { accessKey: bob.accessKey, 'content-type': 'audio/wav' },
      body: audio,
    });
    expect(viaHeader.status).toBe(401);
    const jsonBody = await fetch(`${svc.baseUrl}/v1/listen`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bob.accessKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: audioUrl, extra: 1 }),
    });
    expect(jsonBody.status).toBe(400);
    const badBody = await jsonBody.json();
    expect(Object.keys(badBody as object).sort()).toEqual(['err_code', 'err_msg', 'request_id']);
    expect((await documentedAnswer(svc.baseUrl, '/v1/listen', 'post', '400'))(badBody)).toBeNull();

    expect(await balance(bob.accessKey)).toBe(1_000n);
    expect(await history(bob.accessKey)).toEqual([]);

    const poor = await svc.account(3n);
    const { error: short } = await createClient(poor.accessKey, { global: { url: svc.baseUrl } }).listen.prerecorded.transcribeFile(
      audio,
      {},
    );
    expect((short as { status?: number }).status).toBe(402);
    expect(errorBody(short).err_code).toBe('ASR_PAYMENT_REQUIRED');
    expect(await balance(poor.accessKey)).toBe(3n);
    expect(fs.readdirSync(`${svc.dataDir}/batch`).filter((f) => f.startsWith('upload-') || f.startsWith('decode-'))).toEqual([]);
  }, 60_000);

  it('transcribeUrl: a loopback URL is refused by default without being fetched', async () => {
    const before = await balance(alice.accessKey);
    const hits = audioHits;
    const { error } = await dg.listen.prerecorded.transcribeUrl({ url: audioUrl }, {});
    expect((error as { status?: number }).status).toBe(400);
    expect(errorBody(error).err_code).toBe('REMOTE_CONTENT_FORBIDDEN');
    const { error: named } = await dg.listen.prerecorded.transcribeUrl({ url: audioUrl.replace('127.0.0.1', 'localhost') }, {});
    expect(errorBody(named).err_code).toBe('REMOTE_CONTENT_FORBIDDEN');
    const { error: metadata } = await dg.listen.prerecorded.transcribeUrl({ url: 'http://169.254.169.254/latest/meta-data' }, {});
    expect(errorBody(metadata).err_code).toBe('REMOTE_CONTENT_FORBIDDEN');
    expect(audioHits).toBe(hits);
    expect(await balance(alice.accessKey)).toBe(before);
  });

  it('transcribeUrl: fetched and transcribed where the operator allows the address', async () => {
    const open = await startService({ maxDecoders: 2, callbackAllowCidrs: ['127.0.0.1/32'] });
    try {
      const carol = await open.account(100n);
      const client = createClient(carol.accessKey, { global: { url: open.baseUrl } });
      const hits = audioHits;
      const { result, error } = await client.listen.prerecorded.transcribeUrl({ url: audioUrl }, { punctuate: true });
      expect(error).toBeNull();
      expect(audioHits).toBe(hits + 1);
      expect(wordErrorRate(clip.reference, result!.results.channels[0]!.alternatives[0]!.transcript).wer).toBeLessThan(0.45);
      const account = (await (
        await fetch(`${open.baseUrl}/sound_clone/api/v1/account`, { headers: { accessKey: carol.accessKey } })
      ).json()) as { data: { characters: string } };
      expect(BigInt(account.data.characters)).toBe(92n);
    } finally {
      await open.stop();
    }
  }, 90_000);
});
