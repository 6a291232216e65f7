// Redacted recordings end to end with real speech (docs/recordings.md), on both stores:
// Allison's digit prompts read the test card 4111 1111 1111 1111 (as in redaction-speech.test.ts).
// - A batch job with redact ["pci", "numbers"] and recordAudio keeps FLAC that ffmpeg decodes
//   to the job's length, equal to the audio sent outside the redacted spans and the mask tone
//   inside them; byte ranges are served; another account gets 404; downloads are audited;
//   DELETE removes the rows and the stored file (data dir) or blob (PostgreSQL).
// - A live session with recordAudio: its recording, made of pieces cut at each final and
//   finished at close, equals the audio streamed, sample for sample, for the session's length.
// - A stereo upload split into a call: each leg's recording, and the stereo mix with the agent
//   left and the customer right.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MASK_PAD_MS, MASK_TONE_AMPLITUDE } from '../../src/recording/mask.js';
import { secondConnection, startService, storeSettingsFor, tempDir, testStore, type TestService } from '../helpers/service.js';
import { createSession, pcmBytes, streamAndClose } from '../helpers/live.js';
import { StreamClient } from '../helpers/stream-client.js';
import pino from 'pino';
import { RetentionSweeper } from '../../src/batch/retention-sweeper.js';
import { RecordingKeeper } from '../../src/recording/keeper.js';
import { recordingStoreFor } from '../../src/store/recordings.js';

const API = '/sound_clone/api/v1/stt';
const DIGITS = '/usr/share/asterisk/sounds/en/digits';
const CARD = '4111111111111111';
const dir = tempDir('scribed-recordings-');

type Json = any;

/** The card read in groups of four (the first `groups` of them), 0.4 s between groups (8 kHz WAV). */
function cardClip(groups = 4): string {
  const gap = path.join(dir, 'gap.wav');
  execFileSync('sox', ['-n', '-r', '8000', '-c', '1', '-b', '16', gap, 'trim', '0', '0.4']);
  const parts: string[] = [gap];
  for (let g = 0; g < groups; g++) parts.push(...[...CARD.slice(g * 4, g * 4 + 4)].map((d) => path.join(DIGITS, `${d}.wav`)), gap);
  const out = path.join(dir, `card-${groups}.wav`);
  execFileSync('sox', [...parts, out]);
  return out;
}

function pcmOf(file: string, rate = 8000, args: string[] = []): Int16Array {
  const raw = execFileSync(
    'ffmpeg',
    ['-v', 'error', '-i', file, ...args, '-ac', '1', '-ar', String(rate), '-f', 's16le', '-acodec', 'pcm_s16le', '-'],
    { maxBuffer: 64 << 20 },
  );
  return new Int16Array(raw.buffer, raw.byteOffset, raw.length >> 1);
}

function decode(flac: Buffer, channel?: number): Int16Array {
  const file = path.join(dir, `dl-${Math.random().toString(36).slice(2)}.flac`);
  fs.writeFileSync(file, flac);
  return pcmOf(file, 8000, channel === undefined ? [] : ['-af', `pan=mono|c0=c${channel}`]);
}

function channels(flac: Buffer): number {
  const file = path.join(dir, `probe-${Math.random().toString(36).slice(2)}.flac`);
  fs.writeFileSync(file, flac);
  return Number(
    execFileSync('ffprobe', ['-v', 'error', '-select_streams', 'a:0', '-show_entries', 'stream=channels', '-of', 'csv=p=0', file])
      .toString()
      .trim(),
  );
}

function rms(a: Int16Array, from: number, to: number): number {
  let s = 0;
  for (let i = from; i < to; i++) s += a[i]! * a[i]!;
  return Math.sqrt(s / Math.max(1, to - from));
}

function correlation(a: Int16Array, b: Int16Array, from: number, to: number): number {
  let ab = 0;
  let aa = 0;
  let bb = 0;
  for (let i = from; i < to; i++) {
    ab += a[i]! * b[i]!;
    aa += a[i]! * a[i]!;
    bb += b[i]! * b[i]!;
  }
  return aa === 0 || bb === 0 ? 0 : ab / Math.sqrt(aa * bb);
}

async function download(
  s: TestService,
  url: string,
  key: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Buffer; headers: Headers }> {
  const res = await fetch(`${s.baseUrl}${url}`, { headers: { accessKey: key, ...headers } });
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()), headers: res.headers };
}

async function upload(s: TestService, key: string, file: string, options: Record<string, unknown>): Promise<Json> {
  const form = new FormData();
  form.append('options', JSON.stringify(options));
  form.append('file', new Blob([fs.readFileSync(file)]), path.basename(file));
  const res = await fetch(`${s.baseUrl}${API}/transcriptions`, { method: 'POST', headers: { accessKey: key }, body: form });
  const json = (await res.json()) as Json;
  expect(res.status, JSON.stringify(json)).toBe(200);
  await s.service.batch.idle();
  return json.data;
}

/** Where the stored content of a recording is: a file in the data dir, or a blob row. */
async function contentStored(s: TestService, sha256: string): Promise<boolean> {
  if (testStore() === 'sqlite') return fs.existsSync(path.join(s.dataDir, 'recordings', sha256.slice(0, 2), sha256));
  return (await s.service.store.getBlob(sha256)) !== null;
}

/** `rec` is `sent` with each redacted span (padded) replaced by the mask tone: inside, the
 * tone's level and no likeness to the speech under it; outside, every sample as sent (FLAC is
 * lossless), speech included. */
function expectMasked(rec: Int16Array, sent: Int16Array, spans: Array<{ startMs: number; endMs: number }>): void {
  const pad = (MASK_PAD_MS * 8000) / 1000;
  const masked = new Uint8Array(rec.length);
  for (const sp of spans) {
    const from = Math.max(0, Math.round((sp.startMs * 8000) / 1000) - pad);
    const to = Math.min(rec.length, Math.round((sp.endMs * 8000) / 1000) + pad);
    const inner = [from + pad + 8, to - pad - 8] as const;
    expect(rms(rec, ...inner)).toBeGreaterThan(MASK_TONE_AMPLITUDE * 0.6);
    expect(rms(rec, ...inner)).toBeLessThan(MASK_TONE_AMPLITUDE * 0.8);
    expect(rms(sent, ...inner)).toBeGreaterThan(rms(rec, ...inner)); // there was speech under it
    expect(Math.abs(correlation(sent, rec, ...inner))).toBeLessThan(0.2);
    masked.fill(1, from, to);
  }
  let unmaskedEnergy = 0;
  for (let i = 0; i < rec.length; i++) {
    if (masked[i]) continue;
    if (Math.abs(rec[i]! - sent[i]!) > 1) throw new Error(`sample ${i} differs outside the redacted spans: ${rec[i]} vs ${sent[i]}`);
    unmaskedEnergy += Math.abs(rec[i]!);
  }
  expect(unmaskedEnergy).toBeGreaterThan(0);
}

/** The redacted spans of a row, from its JSON transcript. */
async function spansOf(s: TestService, key: string, transcriptionId: string): Promise<Array<{ startMs: number; endMs: number }>> {
  const transcript = (await (
    await fetch(`${s.baseUrl}${API}/transcriptions/${transcriptionId}/transcript?format=json`, { headers: { accessKey: key } })
  ).json()) as Json;
  return (transcript.segments as Json[]).flatMap((seg) => (seg.redactions ?? []) as Array<{ startMs: number; endMs: number }>);
}

let svc: TestService;
let clip: string;
let sent: Int16Array;
/** Two groups of the card: enough for a redacted run, half the recognition of the whole. */
let half: string;
let halfSent: Int16Array;

beforeAll(async () => {
  clip = cardClip();
  sent = pcmOf(clip);
  half = cardClip(2);
  halfSent = pcmOf(half);
  svc = await startService();
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

describe('batch recording with redaction', () => {
  it('decodes to the job, masks exactly the redacted spans, serves ranges, is 404 to others and goes with DELETE', async () => {
    const a = await svc.account(1_000n);
    const b = await svc.account(1_000n);
    const job = await upload(svc, a.accessKey, half, { redact: ['pci', 'numbers'], recordAudio: true });
    expect(job.effectiveOptions.recordAudio).toBe(true);
    const id = job.transcriptionId as string;

    const spans = await spansOf(svc, a.accessKey, id);
    expect(spans.length).toBeGreaterThan(0);

    const dl = await download(svc, `${API}/transcriptions/${id}/audio`, a.accessKey);
    expect(dl.status).toBe(200);
    expect(dl.headers.get('content-type')).toBe('audio/flac');
    expect(dl.headers.get('accept-ranges')).toBe('bytes');
    const rec = decode(dl.body);
    expect(rec.length).toBe(halfSent.length);

    expectMasked(rec, halfSent, spans);

    const range = await download(svc, `${API}/transcriptions/${id}/audio`, a.accessKey, { range: 'bytes=0-99' });
    expect(range.status).toBe(206);
    expect(range.body.equals(dl.body.subarray(0, 100))).toBe(true);
    expect(range.headers.get('content-range')).toBe(`bytes 0-99/${dl.body.length}`);
    expect((await download(svc, `${API}/transcriptions/${id}/audio`, a.accessKey, { range: `bytes=${dl.body.length}-` })).status).toBe(416);

    expect((await download(svc, `${API}/transcriptions/${id}/audio`, b.accessKey)).status).toBe(404);
    const audits = await svc.service.store.listAudit(a.accountId, 10);
    expect(audits.filter((e) => e.action === 'recording.download' && e.subjectId === id).length).toBe(3);

    const stored = (await svc.service.store.getSessionRecording(id, a.accountId))!;
    expect(stored.format).toBe('flac');
    expect(await contentStored(svc, stored.sha256)).toBe(true);
    const del = await fetch(`${svc.baseUrl}${API}/transcriptions/${id}`, { method: 'DELETE', headers: { accessKey: a.accessKey } });
    expect(del.status).toBe(200);
    const direct = await secondConnection(svc);
    try {
      expect(await direct.getSessionRecording(id, a.accountId)).toBeNull();
      expect(await direct.listRecordingPieces(id)).toEqual([]);
    } finally {
      await direct.close();
    }
    expect(await contentStored(svc, stored.sha256)).toBe(false);
    expect((await download(svc, `${API}/transcriptions/${id}/audio`, a.accessKey)).status).toBe(404);
  }, 150_000);
});

describe('live session recording', () => {
  it("is made of the pieces cut at each final and equals the audio streamed, for the session's length", async () => {
    const a = await svc.account(1_000n);
    const s = await createSession(svc, a.accessKey, { inputEncoding: 'pcm_s16le_8000', segmentCommitMode: 'vad', recordAudio: true });
    expect(s.effectiveOptions.recordAudio).toBe(true);
    const part = sent.subarray(0, 5 * 8000); // the first group of digits
    const { finals } = await streamAndClose(svc, a.accessKey, s.streamUrl, part, 8000);
    expect(finals.length).toBeGreaterThan(0);
    let dl = await download(svc, `${API}/transcriptions/${s.transcriptionId}/audio`, a.accessKey);
    for (let i = 0; i < 100 && dl.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      dl = await download(svc, `${API}/transcriptions/${s.transcriptionId}/audio`, a.accessKey);
    }
    expect(dl.status).toBe(200);
    const rec = decode(dl.body);
    const row = (await svc.service.store.getTranscription(s.transcriptionId, a.accountId))!;
    expect(BigInt(rec.length)).toBe(row.audioSamples);
    expect(rec.length).toBe(part.length);
    expect(correlation(part, rec, 0, rec.length)).toBeGreaterThan(0.999);
    // Finished: no piece is left in the store.
    expect(await svc.service.store.listRecordingPieces(s.transcriptionId)).toEqual([]);
  }, 60_000);

  it('with redact ["pci", "numbers"]: the spoken card is masked in the recording, the rest is as streamed', async () => {
    const a = await svc.account(1_000n);
    const s = await createSession(svc, a.accessKey, {
      inputEncoding: 'pcm_s16le_8000',
      segmentCommitMode: 'vad',
      redact: ['pci', 'numbers'],
      recordAudio: true,
    });
    await streamAndClose(svc, a.accessKey, s.streamUrl, halfSent, 8000);
    let dl = await download(svc, `${API}/transcriptions/${s.transcriptionId}/audio`, a.accessKey);
    for (let i = 0; i < 100 && dl.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      dl = await download(svc, `${API}/transcriptions/${s.transcriptionId}/audio`, a.accessKey);
    }
    expect(dl.status).toBe(200);
    const rec = decode(dl.body);
    expect(rec.length).toBe(halfSent.length);
    const spans = await spansOf(svc, a.accessKey, s.transcriptionId);
    expect(spans.length).toBeGreaterThan(0);
    expectMasked(rec, halfSent, spans);
  }, 90_000);

  it('is not kept without recordAudio; pieces a stopped node left are finished by a later download', async () => {
    const a = await svc.account(1_000n);
    const s = await createSession(svc, a.accessKey, { inputEncoding: 'pcm_s16le_8000', segmentCommitMode: 'vad' });
    await streamAndClose(svc, a.accessKey, s.streamUrl, sent.subarray(0, 16000), 8000);
    const url = `${API}/transcriptions/${s.transcriptionId}/audio`;
    expect((await download(svc, url, a.accessKey)).status).toBe(404);

    // As a node that stopped between the session's close and its recording would leave it:
    // pieces (masked already), no recording. Just after the close the download waits for the
    // closing node; later it finishes the recording itself.
    const keeper = new RecordingKeeper({
      store: svc.service.store,
      files: recordingStoreFor(testStore() === 'postgres', svc.service.store, svc.dataDir, pino({ level: 'silent' })),
      log: pino({ level: 'silent' }),
    });
    await keeper.putPiece(s.transcriptionId, 0n, sent.subarray(0, 8000), 8000);
    await keeper.putPiece(s.transcriptionId, 12000n, sent.subarray(12000, 16000), 8000);
    expect((await download(svc, url, a.accessKey)).status).toBe(409);
    const direct = await secondConnection(svc);
    try {
      const past = new Date(Date.now() - 60_000).toISOString();
      await direct.db.run('UPDATE transcriptions SET completed_at = ?, updated_at = ? WHERE id = ?', [past, past, s.transcriptionId]);
    } finally {
      await direct.close();
    }
    const dl = await download(svc, url, a.accessKey);
    expect(dl.status).toBe(200);
    const rec = decode(dl.body);
    expect(rec.length).toBe(16000);
    expect([...rec.subarray(0, 8000)]).toEqual([...sent.subarray(0, 8000)]);
    expect(rms(rec, 8000, 12000)).toBe(0); // no piece: silence
    expect([...rec.subarray(12000)]).toEqual([...sent.subarray(12000, 16000)]);
    expect(await svc.service.store.hasRecordingPieces(s.transcriptionId)).toBe(false);
  }, 60_000);
});

describe('call recording', () => {
  it('offers each leg and a stereo mix, agent left and customer right', async () => {
    const a = await svc.account(1_000n);
    const b = await svc.account(1_000n);
    const leftFile = path.join(dir, 'left.wav');
    execFileSync('sox', [clip, leftFile, 'trim', '0', '3']);
    const right = path.join(dir, 'right.wav');
    execFileSync('sox', [leftFile, right, 'reverse']);
    const stereo = path.join(dir, 'stereo.wav');
    execFileSync('sox', ['-M', leftFile, right, stereo]);
    const short = sent.subarray(0, 3 * 8000);
    const up = await upload(svc, a.accessKey, stereo, { multichannel: true, recordAudio: true });
    const callId = up.callId as string;

    const agent = await download(svc, `${API}/calls/${callId}/audio?leg=agent`, a.accessKey);
    const customer = await download(svc, `${API}/calls/${callId}/audio?leg=customer`, a.accessKey);
    expect(agent.status).toBe(200);
    expect(customer.status).toBe(200);
    expect(correlation(short, decode(agent.body), 0, short.length)).toBeGreaterThan(0.999);
    const mix = await download(svc, `${API}/calls/${callId}/audio?leg=stereo`, a.accessKey);
    expect(mix.status).toBe(200);
    expect(channels(mix.body)).toBe(2);
    const left = decode(mix.body, 0);
    const rightCh = decode(mix.body, 1);
    expect(left.length).toBe(short.length);
    expect(correlation(decode(agent.body), left, 0, short.length)).toBeGreaterThan(0.999);
    expect(correlation(decode(customer.body), rightCh, 0, short.length)).toBeGreaterThan(0.999);
    expect(Math.abs(correlation(left, rightCh, 0, short.length))).toBeLessThan(0.5);
    expect((await download(svc, `${API}/calls/${callId}/audio`, b.accessKey)).status).toBe(404);
    expect((await download(svc, `${API}/calls/${callId}/audio?leg=nobody`, a.accessKey)).status).toBe(404);

    const del = await fetch(`${svc.baseUrl}${API}/calls/${callId}`, { method: 'DELETE', headers: { accessKey: a.accessKey } });
    expect(del.status).toBe(200);
    expect((await download(svc, `${API}/calls/${callId}/audio?leg=agent`, a.accessKey)).status).toBe(404);
  }, 60_000);
});

describe('recordings retention', () => {
  it("the sweeper deletes recordings past the account's recordings retention and keeps the transcript", async () => {
    const a = await svc.account(1_000n);
    const quiet = path.join(dir, 'quiet.wav');
    execFileSync('sox', ['-n', '-r', '8000', '-c', '1', '-b', '16', quiet, 'trim', '0', '1']);
    const id = (await upload(svc, a.accessKey, quiet, { recordAudio: true })).transcriptionId as string;
    const stored = (await svc.service.store.getSessionRecording(id, a.accountId))!;
    expect(stored).not.toBeNull();
    await svc.service.store.setRetention(a.accountId, { transcriptsDays: null, recordingsDays: 2 }, new Date());
    const direct = await secondConnection(svc);
    try {
      const log = pino({ level: 'silent' });
      const keeper = new RecordingKeeper({
        store: direct,
        files: recordingStoreFor(testStore() === 'postgres', direct, svc.dataDir, log),
        log,
      });
      const sweepAt = (days: number) =>
        new RetentionSweeper({ store: direct, log, recordings: keeper, now: () => new Date(Date.now() + days * 86_400_000) }).sweep();
      expect(await sweepAt(1)).toBe(0);
      expect(await contentStored(svc, stored.sha256)).toBe(true);
      expect(await sweepAt(3)).toBe(1);
      expect(await direct.getSessionRecording(id, a.accountId)).toBeNull();
      expect(await contentStored(svc, stored.sha256)).toBe(false);
      expect((await direct.listAudit(a.accountId, 10)).map((e) => e.action)).toContain('retention.recording.delete');
    } finally {
      await direct.close();
    }
    expect((await download(svc, `${API}/transcriptions/${id}/audio`, a.accessKey)).status).toBe(404);
    expect((await download(svc, `${API}/transcriptions/${id}/transcript?format=json`, a.accessKey)).status).toBe(200);
  }, 60_000);
});

describe.skipIf(testStore() !== 'postgres')('a live recording across two nodes', () => {
  it('a session resumed on another node still makes one recording: pieces from both, finished by the node that closes', async () => {
    const dirA = tempDir();
    const { databaseUrl } = await storeSettingsFor(dirA);
    const [nodeA, nodeB] = await Promise.all([startService({ dataDir: dirA }), startService({ dataDir: tempDir(), databaseUrl })]);
    try {
      const a = await nodeA.account(1_000n);
      const s = await createSession(nodeA, a.accessKey, { inputEncoding: 'pcm_s16le_8000', recordAudio: true });
      const first = sent.subarray(0, 3 * 8000);
      const second = sent.subarray(3 * 8000, 6 * 8000);
      const send = async (client: StreamClient, epoch: number, pcm: Int16Array) => {
        for (let at = 0; at < pcm.length; at += 320) client.audio(epoch, at, pcmBytes(pcm.subarray(at, at + 320)));
        await client.next('ack', (e) => e.epoch === epoch && e.sampleOffset === pcm.length, 60_000);
      };
      const onA = await StreamClient.connect(`${nodeA.wsBase}${s.streamUrl}`, { accessKey: a.accessKey });
      await onA.next('ready');
      await send(onA, 1, first);
      onA.control({ type: 'commit' });
      expect((await onA.next('final', () => true, 60_000)).end.sample).toBe(String(first.length));
      onA.terminate();

      // Any node takes a resume (docs/scaling.md): node B carries on from the stored cursor.
      const r = await fetch(`${nodeB.baseUrl}${API}/realtime/sessions/${s.sessionId}/resume`, {
        method: 'POST',
        headers: { accessKey: a.accessKey, 'content-type': 'application/json' },
        body: JSON.stringify({ capturedSamples: String(first.length) }),
      });
      expect(r.status, await r.clone().text()).toBe(200);
      const onB = await StreamClient.connect(`${nodeB.wsBase}${s.streamUrl}`, { accessKey: a.accessKey });
      await onB.next('ready');
      await send(onB, 2, second);
      onB.control({ type: 'close' });
      await onB.next('closed', () => true, 60_000);

      let dl = await download(nodeA, `${API}/transcriptions/${s.transcriptionId}/audio`, a.accessKey);
      for (let i = 0; i < 100 && dl.status !== 200; i++) {
        await new Promise((res) => setTimeout(res, 100));
        dl = await download(nodeA, `${API}/transcriptions/${s.transcriptionId}/audio`, a.accessKey);
      }
      expect(dl.status).toBe(200);
      const rec = decode(dl.body);
      expect(rec.length).toBe(first.length + second.length);
      expect(correlation(sent, rec, 0, first.length)).toBeGreaterThan(0.999);
      expect(correlation(sent, rec, first.length, rec.length)).toBeGreaterThan(0.999);
    } finally {
      await Promise.all([nodeA.stop(), nodeB.stop()]);
    }
  }, 90_000);
});
