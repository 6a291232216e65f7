// The redact option on a real-time session with real speech: the spoken test card
// (test/helpers/card-speech.ts) streamed live at 8 kHz. First, with redaction off, the live
// path shows the run of number words (partials and finals), so the checks below have something
// to miss; then, on a service of its own with a debug log, a watcher and a webhook endpoint
// asking for the transcript, with redact ["pci", "numbers"]: no partial or final (stream
// socket and watcher), History row, transcript format, webhook body, store row, log line or
// file under the data dir holds three digits in a row, spoken or written.
import http from 'node:http';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capturedLogger, startService, storeDump, type TestService } from '../helpers/service.js';
import { SPOKEN_RUN, cardClip, filesUnder, longestDigitRun, withoutNumericValues } from '../helpers/card-speech.js';
import { rawPcm } from '../helpers/speech-fixtures.js';
import { createSession } from '../helpers/live.js';
import { StreamClient, type StreamEvent } from '../helpers/stream-client.js';
import { call } from '../helpers/api.js';
import type { ResolvedAddress } from '../../src/outbound/guarded-transport.js';

const TRANSCRIPTIONS = '/sound_clone/api/v1/stt/transcriptions';
const SESSIONS = '/sound_clone/api/v1/stt/realtime/sessions';
const ENDPOINTS = '/sound_clone/api/v1/webhooks/endpoints';
type Json = any;

/** Webhook bodies POSTed to 127.0.0.1. */
class Receiver {
  readonly bodies: string[] = [];
  private readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      this.bodies.push(Buffer.concat(chunks).toString('utf8'));
      res.end('ok');
    });
  });
  url = '';
  async start() {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
    return this;
  }
  async waitFor(n: number, ms = 20_000) {
    const until = Date.now() + ms;
    while (this.bodies.length < n) {
      if (Date.now() > until) throw new Error(`receiver got ${this.bodies.length} of ${n}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  stop() {
    return new Promise<void>((r) => this.server.close(() => r()));
  }
}

const resolver = async (hostname: string): Promise<ResolvedAddress[]> => {
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
};

let pcm: Buffer;
let plain: TestService;
let redacting: TestService;
let receiver: Receiver;
const logLines: string[] = [];
const previousBase = process.env.SCRIBED_WEBHOOK_RETRY_BASE_MS;

beforeAll(async () => {
  pcm = rawPcm(cardClip(), 8000);
  process.env.SCRIBED_WEBHOOK_RETRY_BASE_MS = '100';
  receiver = await new Receiver().start();
  plain = await startService();
  redacting = await startService({
    logger: capturedLogger('debug', logLines),
    callbackAllowPrivate: true,
    callbackAllowCidrs: ['127.0.0.1/32'],
    callbackResolver: resolver,
  });
}, 60_000);
afterAll(async () => {
  await plain?.stop();
  await redacting?.stop();
  await receiver?.stop();
  if (previousBase === undefined) delete process.env.SCRIBED_WEBHOOK_RETRY_BASE_MS;
  else process.env.SCRIBED_WEBHOOK_RETRY_BASE_MS = previousBase;
});

/** Stream the card at twice real time in 40 ms frames (so partials come as it is heard), then
 * close; returns the stream socket's events and, when asked, a watcher's. */
async function streamCard(svc: TestService, key: string, options: Record<string, unknown>, watch = false) {
  const s = await createSession(svc, key, { inputEncoding: 'pcm_s16le_8000', segmentCommitMode: 'vad', ...options });
  const client = await StreamClient.connect(`${svc.wsBase}${s.streamUrl}`, { accessKey: key });
  await client.next('ready');
  // Once the stream socket holds the session (a cluster's node serves watchers of what it holds).
  const watcher = watch ? await StreamClient.connect(`${svc.wsBase}${SESSIONS}/${s.sessionId}/events`, { accessKey: key }) : null;
  const step = 320; // 40 ms at 8 kHz
  for (let at = 0; at * 2 < pcm.length; at += step) {
    client.audio(1, at, pcm.subarray(at * 2, Math.min(pcm.length, (at + step) * 2)));
    await new Promise((r) => setTimeout(r, 20));
  }
  await client.next('ack', (e) => e.sampleOffset === pcm.length / 2, 60_000);
  client.control({ type: 'close' });
  await client.next('closed', () => true, 60_000);
  return { session: s, events: client.events, watched: watcher?.events ?? [] };
}

const textOf = (events: StreamEvent[]) =>
  events.filter((e) => e.type === 'partial' || e.type === 'final').map((e) => `${e.text} ${e.rawText ?? ''}`);

describe('redact on a live session, with a card number read by a human voice', () => {
  it('without redaction, the live partials and finals show a run of number words', async () => {
    const a = await plain.account(10_000n);
    const { events } = await streamCard(plain, a.accessKey, { readableText: false });
    const partials = events.filter((e) => e.type === 'partial');
    const finals = events.filter((e) => e.type === 'final');
    console.log(`live, heard without redaction: ${finals.map((f) => f.text).join(' | ')}`);
    expect(partials.length).toBeGreaterThan(0);
    expect(Math.max(...partials.map((p) => longestDigitRun(p.text)))).toBeGreaterThanOrEqual(3);
    expect(longestDigitRun(finals.map((f) => f.text).join(' '))).toBeGreaterThanOrEqual(6);
  }, 120_000);

  it('with redact ["pci", "numbers"], no event, watcher message, format, row, webhook, store table, log line or data file holds it', async () => {
    const a = await redacting.account(10_000n);
    const ep = await call(redacting.baseUrl, 'POST', ENDPOINTS, {
      key: a.accessKey,
      body: { url: receiver.url, events: ['transcription.completed'], includeTranscript: true },
    });
    expect(ep.status, JSON.stringify(ep.json)).toBe(201);
    const { session, events, watched } = await streamCard(
      redacting,
      a.accessKey,
      { redact: ['pci', 'numbers'], entityCategories: ['spelled_digits', 'credit_card', 'phone_number'] },
      true,
    );
    expect(session.effectiveOptions.redact).toEqual(['pci', 'numbers']);
    const partials = events.filter((e) => e.type === 'partial');
    const finals = events.filter((e) => e.type === 'final');
    console.log(`live, redacted: ${finals.map((f) => f.text).join(' | ')} (${partials.length} partials)`);
    expect(partials.length).toBeGreaterThan(0);
    expect(finals.map((f) => f.text).join(' ')).toMatch(/\[(CARD_NUMBER|NUMBER)\]/);
    // The watcher saw the same partials and finals as the stream socket.
    expect(textOf(watched)).toEqual(textOf(events));
    for (const t of textOf([...events, ...watched])) {
      expect(longestDigitRun(t), t).toBeLessThan(3);
      expect(t).not.toMatch(SPOKEN_RUN);
    }
    for (const f of finals) for (const e of f.entities ?? []) expect(e.category).not.toMatch(/credit_card|spelled_digits/);

    const row = await call(redacting.baseUrl, 'GET', `${TRANSCRIPTIONS}/${session.transcriptionId}`, { key: a.accessKey });
    expect(row.json.data.status).toBe('COMPLETED');
    const outputs = [JSON.stringify(row.json), JSON.stringify(events), JSON.stringify(watched)];
    for (const format of ['json', 'txt', 'srt', 'vtt']) {
      const r = await fetch(`${redacting.baseUrl}${TRANSCRIPTIONS}/${session.transcriptionId}/transcript?format=${format}`, {
        headers: { accessKey: a.accessKey },
      });
      expect(r.status).toBe(200);
      outputs.push(await r.text());
    }
    const t = JSON.parse(outputs[3]!) as Json;
    const redactions = t.segments.flatMap((s: Json) => s.redactions ?? []);
    expect(redactions.length).toBeGreaterThan(0);
    for (const r of redactions) expect(r.endMs).toBeGreaterThan(r.startMs);
    await receiver.waitFor(1);
    const hook = receiver.bodies.find((b) => b.includes(session.transcriptionId));
    expect(hook, 'the webhook of this session').toBeDefined();
    expect((JSON.parse(hook!) as Json).data.transcript.text).toMatch(/\[(CARD_NUMBER|NUMBER)\]/);
    outputs.push(...receiver.bodies);
    for (const out of outputs) {
      expect(out).not.toMatch(SPOKEN_RUN);
      expect(out).not.toMatch(/4111|1111/);
    }
    expect(longestDigitRun(t.segments.map((s: Json) => `${s.text} ${s.rawText ?? ''}`).join(' '))).toBeLessThan(3);

    expect(logLines.some((l) => l.includes('"level":20'))).toBe(true); // debug lines were written
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
