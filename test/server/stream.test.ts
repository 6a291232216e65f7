// The stream socket end to end against a real server and the real recognizer: real speech
// in both encodings, tickets, resume across epochs, duplicates and gaps, malformed frames,
// Characters running out, persistence across a restart.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { secondConnection, startService, type TestService } from '../helpers/service.js';
import { chunks, loadClips, type Clip } from '../helpers/audio.js';
import { HandshakeRefused, StreamClient } from '../helpers/stream-client.js';
import { wordErrorRate } from '../../src/core/wer.js';
import { kStall, kWorker } from '../../src/engine/pool.js';
import type { Worker } from 'node:worker_threads';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';

const SESSIONS = '/sound_clone/api/v1/stt/realtime/sessions';
const TRANSCRIPTIONS = '/sound_clone/api/v1/stt/transcriptions';

let svc: TestService;
let alice: ProvisionedAccount;
let bob: ProvisionedAccount;
let clockOffsetMs = 0;
const clips: Clip[] = loadClips();
const clip = clips.find((c) => c.id === 'librivox-0880')!;

beforeAll(async () => {
  svc = await startService({ now: () => new Date(Date.now() + clockOffsetMs) });
  alice = await svc.account(10_000n);
  bob = await svc.account(10_000n);
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

async function post(path: string, body: unknown, key = alice.accessKey, extra: Record<string, string> = {}) {
  const res = await fetch(`${svc.baseUrl}${path}`, {
    method: 'POST',
    headers: { accessKey: key, 'content-type': 'application/json', ...extra },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as any };
}

async function get(path: string, key = alice.accessKey) {
  const res = await fetch(`${svc.baseUrl}${path}`, { headers: { accessKey: key } });
  return { status: res.status, text: await res.text(), type: res.headers.get('content-type') ?? '' };
}

async function createSession(options: Record<string, unknown> = {}, key = alice.accessKey, title = 'test call') {
  const r = await post(SESSIONS, { title, options }, key, { 'Idempotency-Key': `stream-${randomUUID()}` });
  expect(r.status, JSON.stringify(r.json)).toBe(200);
  return r.json.data as { sessionId: string; transcriptionId: string; streamUrl: string };
}

function connect(streamUrl: string, key = alice.accessKey) {
  return StreamClient.connect(`${svc.wsBase}${streamUrl}`, { accessKey: key });
}

async function waitForStatus(sessionId: string, status: string) {
  for (let i = 0; i < 100; i++) {
    const r = JSON.parse((await get(`${SESSIONS}/${sessionId}`)).text);
    if (r.data.status === status) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`session ${sessionId} never reached ${status}`);
}

let lastAck: Record<string, any> = {};

/** Send a clip as 20 ms frames in one epoch and wait until all of it is acknowledged. */
async function streamClip(client: StreamClient, epoch: number, payload: Buffer, bytesPerSample: number, rate: number, startOffset = 0) {
  const frameSamples = rate / 50;
  let offset = startOffset;
  for (const c of chunks(payload, bytesPerSample, frameSamples)) {
    client.audio(epoch, offset, c);
    offset += c.length / bytesPerSample;
  }
  lastAck = await client.next('ack', (e) => e.epoch === epoch && e.sampleOffset === offset, 60_000);
  return offset;
}

describe('streaming real speech', () => {
  it.each([
    ['mulaw_8000 via a browser ticket', 'mulaw_8000', 1, 8000, 0.5],
    ['pcm_s16le_16000 via the accessKey header', 'pcm_s16le_16000', 2, 16000, 0.5],
  ])(
    '%s: partials, final, close, transcript in every format',
    async (_name, encoding, bytesPerSample, rate, maxWer) => {
      const s = await createSession({ inputEncoding: encoding });
      let client: StreamClient;
      if (encoding === 'mulaw_8000') {
        const t = await post(`${SESSIONS}/${s.sessionId}/tickets`, {});
        client = await StreamClient.connect(`${svc.wsBase}${t.json.data.streamUrl}?ticket=${encodeURIComponent(t.json.data.ticket)}`);
      } else {
        client = await connect(s.streamUrl);
      }
      const ready = await client.next('ready');
      expect(ready).toMatchObject({
        sessionId: s.sessionId,
        epoch: 1,
        sampleOffset: 0,
        capturedSamples: '0',
        inputEncoding: encoding,
        sampleRateHz: rate,
        accepting: true,
      });

      const payload = encoding === 'mulaw_8000' ? clip.mulaw8k : clip.pcm16k;
      const total = await streamClip(client, 1, payload, bytesPerSample, rate);
      expect(total).toBe(payload.length / bytesPerSample);
      // Acks do not wait for decoding (batched, src/engine/pool.ts): partials follow as the
      // batches are decoded.
      await client.next('partial', undefined, 60_000);

      client.control({ type: 'commit' });
      const final = await client.next('final');
      expect(client.ofType('partial').every((p) => p.segmentId === 'seg_0')).toBe(true);
      const committed = await client.next('committed');
      expect(committed.segmentId).toBe('seg_0');
      expect(final.segmentId).toBe('seg_0');
      expect(final.start).toMatchObject({ sample: '0', ms: 0, epoch: 1, epochSample: 0, epochMs: 0 });
      expect(final.end).toMatchObject({ sample: String(total), ms: Math.floor((total * 1000) / rate), epoch: 1, epochSample: total });
      // Recognition is judged on the recognizer's words (rawText), not the readable text.
      const wer = wordErrorRate(clip.reference, final.rawText ?? final.text).wer;
      expect(wer, `"${final.rawText ?? final.text}" vs "${clip.reference}"`).toBeLessThan(maxWer);
      expect(final.words.length).toBeGreaterThan(0);
      let last = -1;
      for (const w of final.words) {
        const start = Number(w.start.sample);
        expect(start).toBeGreaterThanOrEqual(last);
        expect(Number(w.end.sample)).toBeLessThanOrEqual(total);
        last = start;
      }

      client.control({ type: 'close' });
      const closed = await client.next('closed');
      expect(closed).toMatchObject({ status: 'COMPLETED', capturedSamples: String(total), segments: 1 });
      expect((await client.closed).code).toBe(1000);

      const session = JSON.parse((await get(`${SESSIONS}/${s.sessionId}`)).text).data;
      expect(session.status).toBe('COMPLETED');
      const history = JSON.parse((await get(`${TRANSCRIPTIONS}/${s.transcriptionId}`)).text).data;
      expect(history).toMatchObject({
        status: 'COMPLETED',
        audioSamples: String(total),
        audioDurationMs: Math.floor((total * 1000) / rate),
      });

      const json = await get(`${TRANSCRIPTIONS}/${s.transcriptionId}/transcript?format=json`);
      expect(json.type).toMatch(/application\/json/);
      const doc = JSON.parse(json.text);
      expect(doc.code).toBeUndefined();
      expect(doc.text).toBe(final.text);
      expect(doc.segments).toHaveLength(1);
      const txt = await get(`${TRANSCRIPTIONS}/${s.transcriptionId}/transcript?format=txt`);
      expect(txt.text.trim()).toBe(final.text);
      const srt = await get(`${TRANSCRIPTIONS}/${s.transcriptionId}/transcript?format=srt`);
      expect(srt.text).toMatch(/^1\r?\n00:00:00,000 --> 00:00:0\d,\d{3}\r?\n/);
      expect(srt.text).toContain(final.text);
      const vtt = await get(`${TRANSCRIPTIONS}/${s.transcriptionId}/transcript?format=vtt`);
      expect(vtt.text).toMatch(/^WEBVTT/);
      expect(vtt.text).toContain(final.text);
    },
    90_000,
  );
});

describe('tickets at the handshake', () => {
  async function ticketFor(sessionId: string, key = alice.accessKey) {
    return (await post(`${SESSIONS}/${sessionId}/tickets`, {}, key)).json.data as { ticket: string; streamUrl: string };
  }
  async function refused(url: string, headers: Record<string, string> = {}) {
    const err = await StreamClient.connect(url, headers).then(
      (c) => {
        c.close();
        return null;
      },
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(HandshakeRefused);
    return err as HandshakeRefused;
  }

  it('refuses a replayed ticket', async () => {
    const s = await createSession();
    const t = await ticketFor(s.sessionId);
    const url = `${svc.wsBase}${t.streamUrl}?ticket=${encodeURIComponent(t.ticket)}`;
    const first = await StreamClient.connect(url);
    await first.next('ready');
    first.control({ type: 'close' });
    await first.closed;
    const again = await refused(url);
    expect(again.status).toBe(401);
    expect(again.body.message).toMatch(/^TICKET_INVALID: /);
  });

  it('refuses an expired ticket', async () => {
    const s = await createSession();
    const t = await ticketFor(s.sessionId);
    clockOffsetMs = 61_000;
    try {
      const r = await refused(`${svc.wsBase}${t.streamUrl}?ticket=${encodeURIComponent(t.ticket)}`);
      expect(r.status).toBe(401);
      expect(r.body.message).toMatch(/expired/);
    } finally {
      clockOffsetMs = 0;
    }
  });

  it('refuses a forged ticket and a ticket for another session', async () => {
    const s = await createSession();
    const t = await ticketFor(s.sessionId);
    const forged = t.ticket.slice(0, -4) + (t.ticket.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    expect((await refused(`${svc.wsBase}${t.streamUrl}?ticket=${encodeURIComponent(forged)}`)).status).toBe(401);

    const other = await createSession({}, bob.accessKey);
    const t2 = await ticketFor(s.sessionId);
    const r = await refused(`${svc.wsBase}${other.streamUrl}?ticket=${encodeURIComponent(t2.ticket)}`);
    expect(r.status).toBe(401);
    expect(r.body.message).toMatch(/^TICKET_INVALID: /);
  });

  it("refuses another account's access key and any key in the URL", async () => {
    const s = await createSession();
    expect((await refused(`${svc.wsBase}${s.streamUrl}`, { accessKey: bob.accessKey })).status).toBe(404);
    const inUrl = await refused(`${svc.wsBase}${s.streamUrl}?accessKey=${encodeURIComponent(alice.accessKey)}`);
    expect(inUrl.status).toBe(401);
    expect(inUrl.body.message).toMatch(/^ACCESS_KEY_IN_URL: /);
    expect((await refused(`${svc.wsBase}${s.streamUrl}`)).status).toBe(401);
  });
});

describe('decoding behind the acknowledgements', () => {
  it('a commit does not hold up the frames behind it: they are acknowledged while the final is decoded, and events keep segment order', async () => {
    const s = await createSession({ inputEncoding: 'pcm_s16le_16000' });
    const pcm = clip.pcm16k;
    const client = await connect(s.streamUrl);
    await client.next('ready');
    const first = await streamClip(client, 1, pcm.subarray(0, 32000), 2, 16000); // 1 s
    // The decoder stops for 1.5 s (as a loaded machine would make it wait) just as the commit comes.
    const live = svc.service.sessions.served(s.sessionId)!;
    const stream = (live as unknown as { stream: { [kStall](ms: number): Promise<void> } }).stream;
    const stalled = stream[kStall](1500);
    client.control({ type: 'commit' });
    const t0 = Date.now();
    const second = await streamClip(client, 1, pcm.subarray(32000, 64000), 2, 16000, first);
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(client.ofType('final')).toHaveLength(0);
    await stalled;

    const final = await client.next('final', (e) => e.segmentId === 'seg_0');
    const committed = await client.next('committed');
    expect(committed).toMatchObject({ segmentId: 'seg_0', capturedSamples: String(first) });
    expect(final.end.sample).toBe(String(first));
    client.control({ type: 'close' });
    const last = await client.next('final', (e) => e.segmentId === 'seg_1');
    expect(last.start.sample).toBe(String(first));
    expect(last.end.sample).toBe(String(second));
    await client.next('closed');
    // Nothing of seg_1 went out before seg_0's final.
    const order = client.events.filter((e) => e.type === 'partial' || e.type === 'final').map((e) => e.segmentId);
    expect(order.indexOf('seg_1')).toBeGreaterThan(order.indexOf('seg_0'));
    expect(order.slice(order.indexOf('seg_1'))).not.toContain('seg_0');
  }, 60_000);
});

describe('socket lifecycle', () => {
  it('pauses on socket loss, refuses a second socket, resumes across three epochs', async () => {
    const s = await createSession({ inputEncoding: 'pcm_s16le_16000' });
    const pcm = clip.pcm16k;
    const one = await connect(s.streamUrl);
    await one.next('ready');
    const busy = await StreamClient.connect(`${svc.wsBase}${s.streamUrl}`, { accessKey: alice.accessKey }).catch((e) => e);
    expect(busy).toBeInstanceOf(HandshakeRefused);
    expect((busy as HandshakeRefused).body.message).toMatch(/^SESSION_BUSY: /);

    // epoch 1: the first 16000 samples
    const epoch1 = await streamClip(one, 1, pcm.subarray(0, 32000), 2, 16000);
    expect(epoch1).toBe(16000);
    one.terminate();
    await waitForStatus(s.sessionId, 'PAUSED');
    const paused = await StreamClient.connect(`${svc.wsBase}${s.streamUrl}`, { accessKey: alice.accessKey }).catch((e) => e);
    expect((paused as HandshakeRefused).body.message).toMatch(/^RESUME_REQUIRED: /);

    // a cursor below the server's count is refused and changes nothing
    const behind = await post(`${SESSIONS}/${s.sessionId}/resume`, { capturedSamples: '100' });
    expect(behind.status).toBe(409);
    expect(behind.json.message).toMatch(/^CAPTURE_CURSOR_MISMATCH: /);

    const r2 = await post(`${SESSIONS}/${s.sessionId}/resume`, { capturedSamples: '16000' });
    expect(r2.json.data).toMatchObject({
      status: 'RECORDING',
      epoch: 2,
      sampleOffset: 0,
      capturedSamples: '16000',
      missingSamples: '0',
      accepting: true,
    });
    const two = await connect(s.streamUrl);
    expect(await two.next('ready')).toMatchObject({ epoch: 2, sampleOffset: 0, capturedSamples: '16000', openSegmentId: 'seg_0' });
    const epoch2 = await streamClip(two, 2, pcm.subarray(32000, 48000), 2, 16000);
    expect(epoch2).toBe(8000);
    expect(lastAck.capturedSamples).toBe('24000');
    two.terminate();
    await waitForStatus(s.sessionId, 'PAUSED');

    // the client says it captured 2000 samples more than reached the server
    const r3 = await post(`${SESSIONS}/${s.sessionId}/resume`, { capturedSamples: 26000 });
    expect(r3.json.data).toMatchObject({ epoch: 3, capturedSamples: '24000', clientCapturedSamples: '26000', missingSamples: '2000' });
    const three = await connect(s.streamUrl);
    await three.next('ready');
    three.audio(2, 8000, pcm.subarray(48000, 48320));
    expect((await three.next('error')).code).toBe('STALE_EPOCH');
    const rest = pcm.subarray(48000);
    const epoch3 = await streamClip(three, 3, rest, 2, 16000);
    const total = 24000 + epoch3;
    expect(total).toBe(pcm.length / 2);

    three.control({ type: 'commit' });
    const final = await three.next('final');
    expect(final.start).toMatchObject({ sample: '0', epoch: 1, epochSample: 0 });
    expect(final.end).toMatchObject({ sample: String(total), epoch: 3, epochSample: epoch3, epochMs: Math.floor((epoch3 * 1000) / 16000) });
    expect(wordErrorRate(clip.reference, final.rawText ?? final.text).wer).toBeLessThan(0.5);
    three.control({ type: 'close' });
    expect(await three.next('closed')).toMatchObject({ capturedSamples: String(total) });

    const closedResume = await post(`${SESSIONS}/${s.sessionId}/resume`, {});
    expect(closedResume.status).toBe(409);
    expect(closedResume.json.message).toMatch(/^SESSION_CLOSED: /);
    const closedConnect = await StreamClient.connect(`${svc.wsBase}${s.streamUrl}`, { accessKey: alice.accessKey }).catch((e) => e);
    expect((closedConnect as HandshakeRefused).body.message).toMatch(/^SESSION_CLOSED: /);
  }, 90_000);

  it('survives its recognizer crashing: ENGINE_FAILED, 1011, resume onto a new decoder, no sample lost or doubled', async () => {
    const s = await createSession({ inputEncoding: 'pcm_s16le_16000' });
    const pcm = clip.pcm16k;
    const one = await connect(s.streamUrl);
    await one.next('ready');
    await streamClip(one, 1, pcm.subarray(0, 16000), 2, 16000); // 8000 samples acknowledged

    const live = svc.service.sessions.served(s.sessionId)!;
    const worker = (live as unknown as { stream: { [kWorker]: Worker } }).stream[kWorker];
    await worker.terminate();
    one.audio(1, 8000, pcm.subarray(16000, 16640));
    expect(await one.next('error')).toMatchObject({ code: 'ENGINE_FAILED' });
    expect((await one.closed).code).toBe(1011);
    await waitForStatus(s.sessionId, 'PAUSED');

    // the unacknowledged frame is sent again in the new epoch, with the rest of the clip
    const r = await post(`${SESSIONS}/${s.sessionId}/resume`, { capturedSamples: '8000' });
    expect(r.json.data).toMatchObject({ epoch: 2, capturedSamples: '8000', missingSamples: '0' });
    const two = await connect(s.streamUrl);
    expect(await two.next('ready')).toMatchObject({ epoch: 2, capturedSamples: '8000', openSegmentId: null });
    const sent = await streamClip(two, 2, pcm.subarray(16000), 2, 16000);
    two.control({ type: 'close' });
    expect(await two.next('closed')).toMatchObject({ capturedSamples: String(8000 + sent) });
    expect(8000 + sent).toBe(pcm.length / 2);
    const t = JSON.parse((await get(`${TRANSCRIPTIONS}/${s.transcriptionId}/transcript?format=json`)).text);
    // the half second before the crash died with its decoder; what followed is transcribed
    expect(t.segments).toHaveLength(1);
    expect(t.segments[0]).toMatchObject({ id: 'seg_1', startSample: '8000', endSample: String(pcm.length / 2) });
    expect(t.segments[0].text.split(' ').length).toBeGreaterThan(2);
  }, 60_000);

  it('a closed session is no longer kept in memory, and reading it does not bring it back', async () => {
    const s = await createSession({ inputEncoding: 'pcm_s16le_16000' });
    const c = await connect(s.streamUrl);
    await c.next('ready');
    c.audio(1, 0, clip.pcm16k.subarray(0, 640));
    await c.next('ack');
    const held = () => svc.service.sessions.all().some((l) => l.id === s.sessionId);
    expect(held()).toBe(true);
    c.control({ type: 'close' });
    await c.next('closed');
    expect(held()).toBe(false);
    expect((await get(`${SESSIONS}/${s.sessionId}`)).status).toBe(200);
    const again = await post(`${SESSIONS}/${s.sessionId}/resume`, {});
    expect(again.json.message).toMatch(/^SESSION_CLOSED: /);
    expect(held()).toBe(false);
  }, 60_000);

  it('a frame the spool cannot store is refused with INTERNAL and 1011, so frames behind it are not placed after a hole', async () => {
    const s = await createSession({ inputEncoding: 'pcm_s16le_16000' });
    const pcm = clip.pcm16k;
    // File spool: a directory where the spool file goes, so opening it for appending fails,
    // as a full or broken disk would. Shared spool: a trigger makes its insert fail.
    const blocker = `${svc.dataDir}/spool/${s.sessionId}.spool`;
    const other = svc.storeSettings.databaseUrl ? await secondConnection(svc) : null;
    if (other) {
      await other.db.run(
        "CREATE OR REPLACE FUNCTION spool_fault() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected storage fault'; END $$",
      );
      await other.db.run('CREATE OR REPLACE TRIGGER spool_fault BEFORE INSERT ON spool_chunks FOR EACH ROW EXECUTE FUNCTION spool_fault()');
    } else fs.mkdirSync(blocker);
    const one = await connect(s.streamUrl);
    await one.next('ready');
    one.audio(1, 0, pcm.subarray(0, 640));
    one.audio(1, 320, pcm.subarray(640, 1280)); // already on its way behind the refused one
    expect(await one.next('error')).toMatchObject({ code: 'INTERNAL' });
    expect((await one.closed).code).toBe(1011);
    expect(one.ofType('ack')).toEqual([]);
    expect(one.ofType('gap')).toEqual([]);
    await waitForStatus(s.sessionId, 'PAUSED');

    if (other) {
      await other.db.run('DROP TRIGGER spool_fault ON spool_chunks');
      await other.close();
    } else fs.rmdirSync(blocker);
    const r = await post(`${SESSIONS}/${s.sessionId}/resume`, { capturedSamples: '640' });
    expect(r.json.data).toMatchObject({ capturedSamples: '0', missingSamples: '640' });
    const two = await connect(s.streamUrl);
    const ready = await two.next('ready');
    two.audio(ready.epoch, 0, pcm.subarray(0, 1280));
    expect(await two.next('ack')).toMatchObject({ capturedSamples: '640' });
    two.control({ type: 'close' });
    expect(await two.next('closed')).toMatchObject({ capturedSamples: '640' });
  }, 60_000);

  it('drops and counts duplicate audio, fills gaps with silence', async () => {
    const s = await createSession({ inputEncoding: 'pcm_s16le_16000' });
    const c = await connect(s.streamUrl);
    await c.next('ready');
    const frame = (samples: number) => clip.pcm16k.subarray(0, samples * 2);
    c.audio(1, 0, frame(320));
    expect(await c.next('ack')).toMatchObject({ sampleOffset: 320, capturedSamples: '320' });
    c.audio(1, 0, frame(320));
    expect(await c.next('ack')).toMatchObject({ sampleOffset: 320, capturedSamples: '320', duplicateSamples: 320 });
    c.audio(1, 160, frame(320));
    expect(await c.next('ack')).toMatchObject({ sampleOffset: 480, capturedSamples: '480', duplicateSamples: 160 });
    c.audio(1, 800, frame(160));
    expect(await c.next('gap')).toMatchObject({ epoch: 1, sampleOffset: 480, samples: 320, capturedSamples: '800' });
    expect(await c.next('ack')).toMatchObject({ sampleOffset: 960, capturedSamples: '960' });
    c.audio(1, 960 + 16000 * 11, frame(160));
    expect((await c.next('error')).code).toBe('GAP_TOO_LARGE');
    c.audio(1, 960, frame(160));
    expect(await c.next('ack')).toMatchObject({ sampleOffset: 1120, capturedSamples: '1120' });
    const metrics = await (await fetch(`${svc.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/scribed_duplicate_samples_total [1-9]/);
    expect(metrics).toMatch(/scribed_gap_samples_total [1-9]/);
    c.close();
  });

  it('answers malformed frames with typed errors and stays usable', async () => {
    const s = await createSession({ inputEncoding: 'pcm_s16le_16000' });
    const c = await connect(s.streamUrl);
    await c.next('ready');
    c.raw(new Uint8Array([1, 1, 0]));
    expect(await c.next('error')).toMatchObject({ code: 'MALFORMED_FRAME', fatal: false });
    const odd = Buffer.alloc(16 + 3);
    odd[0] = 1;
    odd[1] = 1;
    odd.writeUInt32LE(1, 4);
    c.raw(odd);
    expect((await c.next('error')).code).toBe('INVALID_SAMPLE_SIZE');
    const wrongType = Buffer.from(odd.subarray(0, 18));
    wrongType[0] = 7;
    c.raw(wrongType);
    expect((await c.next('error')).code).toBe('MALFORMED_FRAME');
    c.audio(1, 0, Buffer.alloc(200_000));
    expect((await c.next('error')).code).toBe('FRAME_TOO_LARGE');
    c.raw('{not json');
    expect((await c.next('error')).code).toBe('MALFORMED_FRAME');
    c.control({ type: 'dance' });
    expect((await c.next('error')).code).toBe('MALFORMED_FRAME');
    c.control({ type: 'ping', id: 'p1' });
    expect(await c.next('pong')).toMatchObject({ id: 'p1' });
    c.audio(1, 0, clip.pcm16k.subarray(0, 640));
    expect(await c.next('ack')).toMatchObject({ sampleOffset: 320, capturedSamples: '320' });
    c.control({ type: 'commit' });
    await c.next('committed');
    c.close();
  });

  it('stops accepting when Characters run out and keeps what was transcribed', async () => {
    const poor = await svc.account(2n);
    const s = await createSession({ inputEncoding: 'pcm_s16le_16000' }, poor.accessKey);
    const c = await connect(s.streamUrl, poor.accessKey);
    await c.next('ready');
    const frames = chunks(clip.pcm16k, 2, 320);
    let offset = 0;
    for (const f of frames) {
      c.audio(1, offset, f);
      offset += f.length / 2;
    }
    const stop = await c.next('accepting');
    expect(stop).toMatchObject({ accepting: false, reason: 'INSUFFICIENT_CHARACTERS' });
    expect((await c.next('error')).code).toBe('INSUFFICIENT_CHARACTERS');
    c.control({ type: 'close' });
    const closed = await c.next('closed');
    expect(closed.capturedSamples).toBe('32000'); // 2 Characters = 2 started seconds
    const account = JSON.parse((await get('/sound_clone/api/v1/account', poor.accessKey)).text).data;
    expect(account.characters).toBe('0');
    const txt = await get(`${TRANSCRIPTIONS}/${s.transcriptionId}/transcript?format=json`, poor.accessKey);
    expect(JSON.parse(txt.text).segments).toHaveLength(1);
  }, 60_000);

  it('sends PROCESSING_STORAGE_NOT_APPLIED when processing storage is requested', async () => {
    const s = await createSession({ processingContentStorage: true });
    const c = await connect(s.streamUrl);
    await c.next('ready');
    expect(await c.next('notice')).toMatchObject({ code: 'PROCESSING_STORAGE_NOT_APPLIED' });
    c.close();
  });
});

describe('decoder admission', () => {
  it("reclaims a paused session's decoder for a new socket, refuses past that with ENGINE_BUSY (deferral off)", async () => {
    // Deferred recognition off, as on nodes behind a balancer (test/session/deferred-recognition.test.ts has it on).
    const one = await startService({ maxDecoders: 1, maxDeferredSeconds: 0 });
    try {
      const carol = await one.account(10_000n);
      const open = async () => {
        const r = await fetch(`${one.baseUrl}${SESSIONS}`, {
          method: 'POST',
          headers: { accessKey: carol.accessKey, 'content-type': 'application/json', 'Idempotency-Key': `adm-${randomUUID()}` },
          body: JSON.stringify({ options: { inputEncoding: 'pcm_s16le_16000' } }),
        });
        const data = ((await r.json()) as any).data as { sessionId: string; transcriptionId: string; streamUrl: string };
        return { ...data, connect: () => StreamClient.connect(`${one.wsBase}${data.streamUrl}`, { accessKey: carol.accessKey }) };
      };
      const a = await open();
      const ca = await a.connect();
      await ca.next('ready');
      await streamClip(ca, 1, clip.pcm16k, 2, 16000);
      ca.terminate(); // paused, decoder held for a quick resume

      const b = await open();
      const cb = await b.connect();
      expect(await cb.next('ready')).toMatchObject({ accepting: true });
      // a's open segment was finalized before its decoder went to b
      const t = await fetch(`${one.baseUrl}${TRANSCRIPTIONS}/${a.transcriptionId}/transcript?format=json`, {
        headers: { accessKey: carol.accessKey },
      });
      const transcript = (await t.json()) as { segments: Array<{ text: string; rawText?: string }> };
      expect(transcript.segments).toHaveLength(1);
      expect(wordErrorRate(clip.reference, transcript.segments[0]!.rawText ?? transcript.segments[0]!.text).wer).toBeLessThan(0.5);

      // Past that: refused before the upgrade (503), so a balancer can retry another node.
      const c = await open();
      const refused = await c.connect().then(
        () => null,
        (err: unknown) => err,
      );
      expect(refused).toBeInstanceOf(HandshakeRefused);
      expect((refused as HandshakeRefused).status).toBe(503);
      expect((refused as HandshakeRefused).body.message).toMatch(/^ENGINE_BUSY/);
      cb.close();
    } finally {
      await one.stop();
    }
  }, 60_000);
});

describe('persistence', () => {
  it('keeps transcripts and cursors across a restart', async () => {
    const { startService: start } = await import('../helpers/service.js');
    const first = await start();
    const acct = await first.account();
    const h = { accessKey: acct.accessKey, 'content-type': 'application/json' };
    const mk = async (base: string) =>
      (await (
        await fetch(`${base}${SESSIONS}`, { method: 'POST', headers: { ...h, 'Idempotency-Key': `restart-${randomUUID()}` }, body: '{}' })
      ).json()) as any;
    const done = (await mk(first.baseUrl)).data;
    const open = (await mk(first.baseUrl)).data;

    const c1 = await StreamClient.connect(`${first.wsBase}${done.streamUrl}`, { accessKey: acct.accessKey });
    await c1.next('ready');
    await streamClip(c1, 1, clip.pcm16k, 2, 16000);
    c1.control({ type: 'close' });
    const final = await c1.next('final');
    await c1.next('closed');

    const c2 = await StreamClient.connect(`${first.wsBase}${open.streamUrl}`, { accessKey: acct.accessKey });
    await c2.next('ready');
    await streamClip(c2, 1, clip.pcm16k.subarray(0, 32000), 2, 16000);
    await first.stop(); // graceful: finalizes c2's open segment
    expect((await c2.closed).code).toBe(1012);

    const second = await start({ dataDir: first.dataDir });
    try {
      const t = await fetch(`${second.baseUrl}${TRANSCRIPTIONS}/${done.transcriptionId}/transcript?format=txt`, { headers: h });
      expect((await t.text()).trim()).toBe(final.text);
      const s2 = (await (await fetch(`${second.baseUrl}${SESSIONS}/${open.sessionId}`, { headers: h })).json()) as any;
      expect(s2.data).toMatchObject({ status: 'PAUSED', capturedSamples: '16000' });
      const seg = (await (
        await fetch(`${second.baseUrl}${TRANSCRIPTIONS}/${open.transcriptionId}/transcript?format=json`, { headers: h })
      ).json()) as any;
      expect(seg.segments).toHaveLength(1);
      const resumed = (await (
        await fetch(`${second.baseUrl}${SESSIONS}/${open.sessionId}/resume`, {
          method: 'POST',
          headers: h,
          body: '{"capturedSamples":"16000"}',
        })
      ).json()) as any;
      expect(resumed.data).toMatchObject({ epoch: 2, capturedSamples: '16000' });
    } finally {
      await second.stop();
    }
  }, 90_000);
});
