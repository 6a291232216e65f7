// AssemblyAI's async API served by scribed, driven by AssemblyAI's own SDK (`assemblyai` 4.x,
// pointed at the server by its baseUrl) against a real server on the store under test: a local
// file transcribed (upload, create, poll) with real speech and a webhook_url answered by a
// local receiver with the auth header; get, list, delete, and another account's transcript as
// one that does not exist; speaker_labels on a stereo call (channel = speaker); redact_pii on
// the spoken test card; a wrong key 20 times in a row on one client; refused bodies, charging
// nothing.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { AssemblyAI } from 'assemblyai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, tempDir, type TestService } from '../../helpers/service.js';
import { loadClips } from '../../helpers/audio.js';
import { cardClip, longestDigitRun } from '../../helpers/card-speech.js';
import { wordErrorRate } from '../../../src/core/wer.js';
import type { ProvisionedAccount } from '../../../src/accounts/provision.js';

const clips = loadClips();
const clip = clips.find((c) => c.id === 'librivox-0870')!;
const customerClip = clips.find((c) => c.id === 'librivox-0920')!;
const dir = tempDir('scribed-assemblyai-');
const stereo = path.join(dir, 'call.wav');
const POLL = { pollingInterval: 200, pollingTimeout: 60_000 };
const MAX_UPLOAD = 4 * 1024 * 1024;

let svc: TestService;
let alice: ProvisionedAccount;
let client: AssemblyAI;

interface Hit {
  headers: http.IncomingHttpHeaders;
  body: string;
}
const hits: Hit[] = [];
const receiver = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    hits.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
    res.end();
  });
});
let receiverUrl = '';

const previousBase = process.env.SCRIBED_WEBHOOK_RETRY_BASE_MS;
beforeAll(async () => {
  process.env.SCRIBED_WEBHOOK_RETRY_BASE_MS = '100';
  const sox = (...args: string[]) => execFileSync('sox', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  // A call: the agent (left) speaks, then the customer (right) answers.
  sox(clip.wavFile, path.join(dir, 'l.wav'), 'pad', '0', String(customerClip.durationSec + 0.5));
  sox(customerClip.wavFile, path.join(dir, 'r.wav'), 'pad', String(clip.durationSec + 0.5), '0');
  sox('-M', path.join(dir, 'l.wav'), path.join(dir, 'r.wav'), stereo);
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/aai`;
  svc = await startService({ maxDecoders: 2, callbackAllowCidrs: ['127.0.0.1/32'], batchMaxUploadBytes: MAX_UPLOAD });
  alice = await svc.account(10_000n);
  client = new AssemblyAI({ apiKey: alice.accessKey, baseUrl: svc.baseUrl });
}, 60_000);
afterAll(async () => {
  if (previousBase === undefined) delete process.env.SCRIBED_WEBHOOK_RETRY_BASE_MS;
  else process.env.SCRIBED_WEBHOOK_RETRY_BASE_MS = previousBase;
  await svc?.stop();
  await new Promise<void>((r) => receiver.close(() => r()));
});

async function balance(key: string): Promise<bigint> {
  const res = await fetch(`${svc.baseUrl}/sound_clone/api/v1/account`, { headers: { accessKey: key } });
  return BigInt(((await res.json()) as { data: { characters: string } }).data.characters);
}

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('the request was not refused');
}

async function waitFor<T>(pred: () => T | undefined, ms: number, what: string): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = pred();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('AssemblyAI async API through the assemblyai SDK', () => {
  it('transcribes a local file with a webhook; get, list, delete; another account reads 404', async () => {
    const before = await balance(alice.accessKey);
    const t = await client.transcripts.transcribe(
      {
        audio: clip.wavFile,
        webhook_url: receiverUrl,
        webhook_auth_header_name: 'X-Receiver-Secret',
        webhook_auth_header_value: 'let-me-in',
        // Features sent switched off, and a model name, are accepted (clients send every switch).
        summarization: false,
        auto_chapters: false,
        speech_model: 'best',
      },
      POLL,
    );
    expect(t.status).toBe('completed');
    console.log(`AssemblyAI transcribe: ${t.text}`);
    // The recognizer's own accuracy on these clips is 20-35% WER (docs/engines.md).
    expect(wordErrorRate(clip.reference, t.text ?? '').wer).toBeLessThan(0.45);
    const words = t.words ?? [];
    expect(words.length).toBeGreaterThan(5);
    for (const w of words) {
      expect(w.end).toBeGreaterThanOrEqual(w.start);
      expect(w.confidence).toBeGreaterThanOrEqual(0);
      expect(w.confidence).toBeLessThanOrEqual(1);
    }
    // Milliseconds: the last word ends within the clip.
    expect(words.at(-1)!.end).toBeGreaterThan(clip.durationSec * 500);
    expect(words.at(-1)!.end).toBeLessThanOrEqual(clip.durationSec * 1000 + 100);
    expect(t.audio_duration).toBe(Math.round(clip.durationSec));
    expect(t.utterances).toBeNull();
    // Charged as a native batch upload: 1 Character per started second.
    expect(before - (await balance(alice.accessKey))).toBe(BigInt(Math.ceil(clip.durationSec)));

    // The webhook: AssemblyAI's body, the client's header, through the outbox (webhook-id).
    const hit = await waitFor(() => hits.find((h) => h.body.includes(t.id)), 15_000, 'the webhook');
    expect(JSON.parse(hit.body)).toEqual({ transcript_id: t.id, status: 'completed' });
    expect(hit.headers['x-receiver-secret']).toBe('let-me-in');
    expect(hit.headers['webhook-id']).toMatch(/^msg_/);

    const got = await client.transcripts.get(t.id);
    expect(got.text).toBe(t.text);
    const page = await client.transcripts.list({ limit: 5 });
    expect(page.transcripts.map((i) => i.id)).toContain(t.id);
    expect(page.transcripts.find((i) => i.id === t.id)!.status).toBe('completed');
    expect(page.page_details.result_count).toBe(page.transcripts.length);
    // The only transcript yet: nothing older.
    const newest = await client.transcripts.list({ limit: 1 });
    expect(newest.transcripts.map((i) => i.id)).toEqual([t.id]);
    expect((await client.transcripts.list(newest.page_details.prev_url!)).transcripts).toEqual([]);
    expect((await client.transcripts.list(newest.page_details.prev_url!)).transcripts.map((i) => i.id)).not.toContain(t.id);
    const older = await client.transcripts.list(newest.page_details.prev_url!);
    if (older.transcripts.length > 0)
      expect((await client.transcripts.list(older.page_details.next_url!)).transcripts.map((i) => i.id)).toEqual([t.id]);

    const bob = await svc.account(100n);
    const other = new AssemblyAI({ apiKey: bob.accessKey, baseUrl: svc.baseUrl });
    expect((await rejection(other.transcripts.get(t.id))).message).toBe('Transcript not found');
    expect((await rejection(other.transcripts.delete(t.id))).message).toBe('Transcript not found');
    expect((await other.transcripts.list()).transcripts).toEqual([]);

    const deleted = await client.transcripts.delete(t.id);
    expect(deleted.text).toBe('Deleted by user.');
    expect((await rejection(client.transcripts.get(t.id))).message).toBe('Transcript not found');
    const history = await fetch(`${svc.baseUrl}/sound_clone/api/v1/stt/transcriptions/${t.id}`, {
      headers: { accessKey: alice.accessKey },
    });
    expect(history.status).toBe(404);
  }, 60_000);

  it('speaker_labels on a stereo call: channel 0 is speaker A, channel 1 speaker B, utterances in time order', async () => {
    const t = await client.transcripts.transcribe({ audio: stereo, speaker_labels: true }, POLL);
    expect(t.status).toBe('completed');
    const utterances = t.utterances ?? [];
    console.log(`AssemblyAI speaker_labels: ${utterances.map((u) => `${u.speaker}: ${u.text}`).join(' | ')}`);
    expect(new Set(utterances.map((u) => u.speaker))).toEqual(new Set(['A', 'B']));
    const a = utterances
      .filter((u) => u.speaker === 'A')
      .map((u) => u.text)
      .join(' ');
    const b = utterances
      .filter((u) => u.speaker === 'B')
      .map((u) => u.text)
      .join(' ');
    expect(wordErrorRate(clip.reference, a).wer).toBeLessThan(0.5);
    expect(wordErrorRate(customerClip.reference, b).wer).toBeLessThan(0.5);
    // The agent speaks first, the customer after the agent's clip.
    expect(utterances[0]!.speaker).toBe('A');
    expect(utterances.filter((u) => u.speaker === 'B')[0]!.start).toBeGreaterThan(clip.durationSec * 1000);
    expect((t.words ?? []).every((w) => w.speaker === 'A' || w.speaker === 'B')).toBe(true);
    // One transcript in the list for the call's two legs.
    const page = await client.transcripts.list({ limit: 20 });
    expect(page.transcripts.filter((i) => i.id === t.id)).toHaveLength(1);
  }, 60_000);

  it('redact_pii on the spoken test card: no three digits in a row, the span a token', async () => {
    const t = await client.transcripts.transcribe(
      { audio: cardClip(), redact_pii: true, redact_pii_policies: ['credit_card_number', 'number_sequence'] },
      POLL,
    );
    expect(t.status).toBe('completed');
    console.log(`AssemblyAI redact_pii: ${t.text}`);
    expect(t.redact_pii).toBe(true);
    expect(t.text).toMatch(/\[(CARD_NUMBER|NUMBER)\]/);
    // AssemblyAI's paging through the SDK: prev_url reaches older transcripts (the stereo
    // call), next_url from there newer ones (this one).
    const newest = await client.transcripts.list({ limit: 1 });
    expect(newest.transcripts.map((i) => i.id)).toEqual([t.id]);
    const older = await client.transcripts.list(newest.page_details.prev_url!);
    expect(older.transcripts).toHaveLength(1);
    expect(older.transcripts[0]!.id).not.toBe(t.id);
    expect((await client.transcripts.list(older.page_details.next_url!)).transcripts.map((i) => i.id)).toEqual([t.id]);
    expect(longestDigitRun(`${t.text} ${(t.words ?? []).map((w) => w.text).join(' ')}`)).toBeLessThan(3);
    // A policy scribed cannot honour is refused by name.
    const refused = await rejection(
      client.transcripts.submit({ audio: cardClip(), redact_pii: true, redact_pii_policies: ['person_name'] }),
    );
    expect(refused.message).toMatch(/^redact_pii_policies: "person_name" is not served/);
  }, 60_000);

  it('a wrong key 20 times in a row on one client: 20 authentication errors, never a broken connection', async () => {
    const wrong = new AssemblyAI({ apiKey: `${alice.accessKey.slice(0, -4)}xxxx`, baseUrl: svc.baseUrl });
    const messages: string[] = [];
    for (let i = 0; i < 20; i++) messages.push((await rejection(wrong.transcripts.transcribe({ audio: clip.wavFile }, POLL))).message);
    expect(messages).toEqual(Array(20).fill(expect.stringMatching(/^Authentication error, API token missing\/invalid/)));
    const none = new AssemblyAI({ apiKey: '', baseUrl: svc.baseUrl });
    expect((await rejection(none.transcripts.list())).message).toMatch(/^Authentication error/);
  }, 60_000);

  it('refused bodies charge nothing: a refused feature, an unknown parameter, an external URL, a non-audio file', async () => {
    const before = await balance(alice.accessKey);
    const refused = async (params: Record<string, unknown>) =>
      (await rejection(client.transcripts.submit({ audio: clip.wavFile, ...params } as never))).message;
    expect(await refused({ summarization: true })).toMatch(/^summarization: not supported by scribed/);
    expect(await refused({ no_such_thing: 1 })).toMatch(/^no_such_thing: unknown or unsupported parameter/);
    expect(await refused({ speakers_expected: 3, speaker_labels: true })).toMatch(/^speakers_expected:/);
    expect(await refused({ webhook_url: 'http://169.254.169.254/latest' })).toMatch(/^webhook_url: .* is not a destination/);
    expect(await refused({ speaker_labels: true })).toMatch(/^speaker_labels: the file has 1 channel; .*does not diarize/);
    const external = await rejection(client.transcripts.submit({ audio: 'https://example.com/call.wav' }));
    expect(external.message).toMatch(/^audio_url: scribed transcribes files uploaded to it/);
    const notAudio = path.join(dir, 'notes.txt');
    fs.writeFileSync(notAudio, 'not audio at all\n'.repeat(100));
    expect((await rejection(client.transcripts.submit({ audio: notAudio }))).message).toMatch(/^Transcoding failed/);
    // A file over the upload limit, 10 times in a row on one client: each read as its 413.
    const big = path.join(dir, 'big.bin');
    fs.writeFileSync(big, Buffer.alloc(MAX_UPLOAD + 2 * 1024 * 1024, 7));
    for (let i = 0; i < 10; i++)
      expect((await rejection(client.files.upload(big))).message).toBe(`the audio is over the upload size limit (${MAX_UPLOAD} bytes)`);
    // Deepgram's raw-body route shares the staging: its 413 is read too, in Deepgram's shape.
    const dg = await fetch(`${svc.baseUrl}/v1/listen`, {
      method: 'POST',
      headers: { authorization: `Token ${alice.accessKey}`, 'content-type': 'audio/wav' },
      body: fs.readFileSync(big),
    });
    expect(dg.status).toBe(413);
    expect(((await dg.json()) as { err_code: string }).err_code).toBe('PAYLOAD_TOO_LARGE');
    expect(await balance(alice.accessKey)).toBe(before);
    // An upload URL serves its own account only.
    const url = await client.files.upload(clip.wavFile);
    expect(url).toMatch(/\/v2\/upload\/[0-9a-f]{32}$/);
    const bob = new AssemblyAI({ apiKey: (await svc.account(100n)).accessKey, baseUrl: svc.baseUrl });
    expect((await rejection(bob.transcripts.submit({ audio_url: url }))).message).toMatch(/^audio_url: no such upload for this key/);
  }, 60_000);
});
