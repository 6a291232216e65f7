// Deepgram's pre-recorded `callback` served by scribed, driven by Deepgram's own SDK
// (`@deepgram/sdk` 4.x transcribeFileCallback) against a real server on the store under test
// and a local receiver: the request answers at once with a request_id, the receiver gets the
// full response body with the transcript (again after answering 500 once, with the same
// webhook-id, Basic authorization from the URL's userinfo); a loopback callback without the
// operator's flag, and callback_method=put, are refused in Deepgram's shape, charging nothing.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { CallbackUrl, createClient } from '@deepgram/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../../helpers/service.js';
import { loadClips } from '../../helpers/audio.js';
import { wordErrorRate } from '../../../src/core/wer.js';
import { documentedAnswer } from '../../helpers/openapi-answer.js';

const clip = loadClips().find((c) => c.id === 'librivox-0870')!;

interface Hit {
  headers: http.IncomingHttpHeaders;
  body: string;
}

let receiverHits: Hit[] = [];
let statuses: number[] = [];
const receiver = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    receiverHits.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
    res.statusCode = statuses.shift() ?? 200;
    res.end();
  });
});
let receiverUrl = '';

async function waitForHits(n: number, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (receiverHits.length < n) {
    if (Date.now() > until) throw new Error(`the receiver got ${receiverHits.length} of ${n} requests`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const characters = async (svc: TestService, key: string) =>
  BigInt(
    (
      (await (await fetch(`${svc.baseUrl}/sound_clone/api/v1/account`, { headers: { accessKey: key } })).json()) as {
        data: { characters: string };
      }
    ).data.characters,
  );

const previousBase = process.env.SCRIBED_WEBHOOK_RETRY_BASE_MS;
beforeAll(async () => {
  process.env.SCRIBED_WEBHOOK_RETRY_BASE_MS = '100';
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/dg`;
});
afterAll(async () => {
  if (previousBase === undefined) delete process.env.SCRIBED_WEBHOOK_RETRY_BASE_MS;
  else process.env.SCRIBED_WEBHOOK_RETRY_BASE_MS = previousBase;
  await new Promise<void>((r) => receiver.close(() => r()));
});

describe('POST /v1/listen with callback (@deepgram/sdk transcribeFileCallback)', () => {
  it('answers at once with request_id and POSTs the response body to the callback, again after a 500', async () => {
    const svc = await startService({ maxDecoders: 1, callbackAllowCidrs: ['127.0.0.1/32'] });
    try {
      const alice = await svc.account(1_000n);
      const dg = createClient(alice.accessKey, { global: { url: svc.baseUrl } });
      receiverHits = [];
      statuses = [500];
      const target = receiverUrl.replace('http://', 'http://crm:s%3Acret@');
      const { result, error } = await dg.listen.prerecorded.transcribeFileCallback(fs.readFileSync(clip.wavFile), new CallbackUrl(target), {
        smart_format: true,
      });
      expect(error).toBeNull();
      const requestId = (result as { request_id: string }).request_id;
      expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
      expect(Object.keys(result as object)).toEqual(['request_id']);
      // Answered before the job ran: nothing delivered yet.
      expect(receiverHits).toHaveLength(0);

      await waitForHits(2, 60_000);
      const [first, second] = receiverHits;
      expect(first!.headers['webhook-id']).toMatch(/^msg_/);
      expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
      expect(second!.headers.authorization).toBe(`Basic ${Buffer.from('crm:s:cret').toString('base64')}`);
      expect(second!.body).toBe(first!.body);
      const body = JSON.parse(second!.body);
      expect(body.metadata.request_id).toBe(requestId);
      const transcript: string = body.results.channels[0].alternatives[0].transcript;
      expect(wordErrorRate(clip.reference, transcript).wer).toBeLessThan(0.45);
      expect(body.results.channels[0].alternatives[0].words.length).toBeGreaterThan(10);
      expect((await documentedAnswer(svc.baseUrl, '/v1/listen', 'post'))(body)).toBeNull();
      // Charged as the synchronous request is.
      expect(await characters(svc, alice.accessKey)).toBe(1_000n - BigInt(Math.ceil(clip.durationSec)));
      await new Promise((r) => setTimeout(r, 700));
      expect(receiverHits).toHaveLength(2);
    } finally {
      await svc.stop();
    }
  }, 120_000);

  it('a callback accepted by a process stopped before its job ended is delivered by the next process on the data', async () => {
    const first = await startService({ maxDecoders: 1, callbackAllowCidrs: ['127.0.0.1/32'] });
    let second: TestService | null = null;
    try {
      const carol = await first.account(1_000n);
      receiverHits = [];
      statuses = [];
      const { result, error } = await createClient(carol.accessKey, {
        global: { url: first.baseUrl },
      }).listen.prerecorded.transcribeFileCallback(fs.readFileSync(clip.wavFile), new CallbackUrl(receiverUrl), {});
      expect(error).toBeNull();
      // Stopped at once: the job (seconds of decoding) has not ended, so nothing was sent.
      await first.stop();
      expect(receiverHits).toHaveLength(0);
      second = await startService({ maxDecoders: 1, callbackAllowCidrs: ['127.0.0.1/32'], dataDir: first.dataDir });
      await waitForHits(1, 60_000);
      const body = JSON.parse(receiverHits[0]!.body);
      expect(body.metadata.request_id).toBe((result as { request_id: string }).request_id);
      expect(wordErrorRate(clip.reference, body.results.channels[0].alternatives[0].transcript).wer).toBeLessThan(0.45);
    } finally {
      await second?.stop();
    }
  }, 120_000);

  it('refuses a loopback callback without the operator flag, and callback_method=put, charging nothing', async () => {
    const svc = await startService({ maxDecoders: 1 });
    try {
      const bob = await svc.account(1_000n);
      const dg = createClient(bob.accessKey, { global: { url: svc.baseUrl } });
      receiverHits = [];
      const audio = fs.readFileSync(clip.wavFile);
      for (const url of [receiverUrl, receiverUrl.replace('127.0.0.1', 'localhost'), 'http://169.254.169.254/latest']) {
        const { error } = await dg.listen.prerecorded.transcribeFileCallback(audio, new CallbackUrl(url), {});
        expect((error as { status?: number }).status).toBe(400);
        const e = JSON.parse((error as Error).message);
        expect(e.err_code).toBe('INVALID_QUERY_PARAMETER');
        expect(e.err_msg).toMatch(/^callback: .* is not a destination/);
      }
      const { error: put } = await dg.listen.prerecorded.transcribeFileCallback(audio, new CallbackUrl('https://example.com/dg'), {
        callback_method: 'put',
      } as never);
      expect(JSON.parse((put as Error).message).err_msg).toMatch(/^callback_method: "put" is not supported/);
      expect(await characters(svc, bob.accessKey)).toBe(1_000n);
      await new Promise((r) => setTimeout(r, 500));
      expect(receiverHits).toHaveLength(0);
    } finally {
      await svc.stop();
    }
  }, 60_000);
});
