// Batch transcription and the History list, end to end through a real server: uploads in
// several formats, content checks, limits, Characters, pagination, ownership, the text
// options on batch and real-time finals, decoder sharing and resuming after a restart.
import fs from 'node:fs';
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secondConnection, startService, storeSettingsFor, tempDir, type TestService } from '../helpers/service.js';
import { chunks, loadClips } from '../helpers/audio.js';
import { convert, fillerClip, joined, moneyClip, rawPcm } from '../helpers/speech-fixtures.js';
import { StreamClient } from '../helpers/stream-client.js';
import { wordErrorRate } from '../../src/core/wer.js';
import { isFiller, removeDisfluencies } from '../../src/text/disfluency.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';
import { planSegments } from '../../src/batch/segmenter.js';
import { openStore } from '../../src/store/index.js';

const TRANSCRIPTIONS = '/sound_clone/api/v1/stt/transcriptions';
const SESSIONS = '/sound_clone/api/v1/stt/realtime/sessions';
const clips = loadClips();

let svc: TestService;
let alice: ProvisionedAccount;
let bob: ProvisionedAccount;

beforeAll(async () => {
  svc = await startService({ maxDecoders: 2 });
  alice = await svc.account(10_000n);
  bob = await svc.account(10_000n);
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

type Json = any;

async function upload(
  s: TestService,
  key: string,
  file: string | Buffer | null,
  fields: Record<string, string> = {},
  fileField = 'file',
  headers: Record<string, string> = {},
): Promise<{ status: number; json: Json; replayed: boolean }> {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  if (file !== null) form.append(fileField, new Blob([typeof file === 'string' ? fs.readFileSync(file) : file]), 'upload.bin');
  const res = await fetch(`${s.baseUrl}${TRANSCRIPTIONS}`, { method: 'POST', headers: { accessKey: key, ...headers }, body: form });
  return { status: res.status, json: await res.json(), replayed: res.headers.get('idempotent-replayed') === 'true' };
}

async function getJson(s: TestService, path: string, key: string): Promise<{ status: number; json: Json }> {
  const res = await fetch(`${s.baseUrl}${path}`, { headers: { accessKey: key } });
  return { status: res.status, json: await res.json() };
}

async function balance(s: TestService, key: string): Promise<bigint> {
  return BigInt((await getJson(s, '/sound_clone/api/v1/account', key)).json.data.characters);
}

async function transcript(s: TestService, id: string, key: string): Promise<Json> {
  return (await getJson(s, `${TRANSCRIPTIONS}/${id}/transcript?format=json`, key)).json;
}

/** The recognizer's words of a JSON transcript (rawText where readableText changed a segment):
 * accuracy is judged on recognition, not on formatting. */
function spokenText(t: Json): string {
  return t.segments.map((s: Json) => s.rawText ?? s.text).join(' ');
}

async function listAll(s: TestService, key: string, limit = 100): Promise<Json[]> {
  return (await getJson(s, `${TRANSCRIPTIONS}?limit=${limit}`, key)).json.data.items;
}

async function createSession(s: TestService, key: string, options: Record<string, unknown>): Promise<Json> {
  const res = await fetch(`${s.baseUrl}${SESSIONS}`, {
    method: 'POST',
    headers: { accessKey: key, 'content-type': 'application/json', 'Idempotency-Key': `batch-${randomUUID()}` },
    body: JSON.stringify({ title: 'live call', options }),
  });
  const json = (await res.json()) as Json;
  expect(res.status, JSON.stringify(json)).toBe(200);
  return json.data;
}

/** Stream PCM through a real socket, commit, close; returns the events. */
async function streamSession(s: TestService, key: string, options: Record<string, unknown>, pcm: Buffer, rate: number) {
  const session = await createSession(s, key, options);
  const c = await StreamClient.connect(`${s.wsBase}${session.streamUrl}`, { accessKey: key });
  await c.next('ready');
  let offset = 0;
  for (const chunk of chunks(pcm, 2, rate / 50)) {
    c.audio(1, offset, chunk);
    offset += chunk.length / 2;
  }
  await c.next('ack', (e) => e.sampleOffset === offset, 60_000);
  c.control({ type: 'close' });
  await c.next('closed', () => true, 60_000);
  return { session, events: c.events };
}

/** Audio files of jobs still QUEUED or RUNNING in the shared service (other tests' jobs). */
async function pendingAudio(): Promise<Set<string>> {
  const jobs = await svc.service.store.listBatchJobs(['QUEUED', 'RUNNING']);
  return new Set(jobs.map((j) => j.audioFile));
}

const costOf = (audioSamples: string, rate: number) => (BigInt(audioSamples) + BigInt(rate) - 1n) / BigInt(rate);

describe('batch transcription', () => {
  it('transcribes the sample WAVs, an mp3 and a flac; History shows batch and real-time rows newest first with exact balances', async () => {
    const start = await balance(svc, alice.accessKey);
    // A real-time session first, so the list has both kinds.
    const live = clips.find((c) => c.id === 'librivox-0880')!;
    const { session } = await streamSession(svc, alice.accessKey, {}, live.pcm16k, 16_000);
    const liveCost = costOf(String(live.pcm16k.length / 2), 16_000);

    const flacSource = clips.find((c) => c.id === 'librivox-0890')!;
    const files = [
      ...clips.map((c) => ({ path: c.wavFile, ref: c.reference, clip: c })),
      { path: convert(flacSource.wavFile, 'mp3'), ref: flacSource.reference, clip: null },
      { path: convert(flacSource.wavFile, 'flac'), ref: flacSource.reference, clip: null },
    ];
    const created: Json[] = [];
    for (const f of files) {
      const r = await upload(svc, alice.accessKey, f.path, { title: `batch ${f.path}` });
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      expect(r.json.data).toMatchObject({ kind: 'batch', status: 'PROCESSING', sessionId: null, sampleRateHz: 16_000 });
      expect(r.json.data.transcriptionId).toMatch(/^stt_/);
      if (f.clip) expect(r.json.data.audioSamples).toBe(String(f.clip.pcm16k.length / 2)); // WAV at 16 kHz: every sample kept
      expect(r.json.data.charactersCharged).toBe(costOf(r.json.data.audioSamples, 16_000).toString());
      created.push(r.json.data);
    }
    await svc.service.batch.idle();

    const texts: string[] = [];
    let errors = 0;
    let words = 0;
    for (const [i, c] of created.entries()) {
      const detail = await getJson(svc, `${TRANSCRIPTIONS}/${c.transcriptionId}`, alice.accessKey);
      expect(detail.json.data.status).toBe('COMPLETED');
      const t = await transcript(svc, c.transcriptionId, alice.accessKey);
      texts.push(spokenText(t));
      const ref = files[i]!.ref.split(' ').length;
      errors += wordErrorRate(files[i]!.ref, spokenText(t)).wer * ref;
      words += ref;
    }
    // The recognizer's own accuracy on these clips is 20-35% WER (docs/engines.md).
    expect(errors / words).toBeLessThan(0.45);
    // flac is lossless: the same words as the WAV it came from.
    const wavIndex = clips.findIndex((c) => c.id === 'librivox-0890');
    expect(texts[texts.length - 1]).toBe(texts[wavIndex]);
    expect(wordErrorRate(flacSource.reference, texts[texts.length - 2]!).wer).toBeLessThan(0.6);

    expect((await transcript(svc, created[0].transcriptionId, alice.accessKey)).segments[0].words.length).toBeGreaterThan(3);
    // Downloads in every format serve batch rows.
    const srt = await fetch(`${svc.baseUrl}${TRANSCRIPTIONS}/${created[0].transcriptionId}/transcript?format=srt`, {
      headers: { accessKey: alice.accessKey },
    });
    expect(await srt.text()).toMatch(/00:00:0\d,\d{3} --> /);

    // Characters: the same rule as real time, 1 per started second of audio.
    const batchCost = created.reduce((n, c) => n + costOf(c.audioSamples, 16_000), 0n);
    expect(await balance(svc, alice.accessKey)).toBe(start - liveCost - batchCost);

    const items = await listAll(svc, alice.accessKey);
    const ids = items.map((t) => t.transcriptionId);
    expect(ids.slice(0, created.length)).toEqual(created.map((c) => c.transcriptionId).reverse());
    expect(ids[created.length]).toBe(session.transcriptionId);
    expect(items[created.length].kind).toBe('realtime');
    const keys = items.map((t) => `${t.createdAt}|${t.transcriptionId}`);
    expect([...keys].sort().reverse()).toEqual(keys);
  }, 180_000);

  it('pages History with an opaque cursor that is stable under inserts and never shows foreign rows', async () => {
    const bobRow = (await upload(svc, bob.accessKey, clips[1]!.wavFile, { title: 'bob' })).json.data;
    const full = (await listAll(svc, alice.accessKey)).map((t) => t.transcriptionId);
    expect(full.length).toBeGreaterThanOrEqual(4);
    expect(full).not.toContain(bobRow.transcriptionId);

    const first = (await getJson(svc, `${TRANSCRIPTIONS}?limit=3`, alice.accessKey)).json.data;
    expect(first.items).toHaveLength(3);
    expect(first.nextCursor).toEqual(expect.any(String));
    // A row inserted between pages is newer than the cursor: it neither shifts nor repeats pages.
    const inserted = (await upload(svc, alice.accessKey, clips[1]!.wavFile, { title: 'between pages' })).json.data;
    const seen: string[] = first.items.map((t: Json) => t.transcriptionId);
    let cursor: string | null = first.nextCursor;
    while (cursor) {
      const page = (await getJson(svc, `${TRANSCRIPTIONS}?limit=3&cursor=${encodeURIComponent(cursor)}`, alice.accessKey)).json.data;
      seen.push(...page.items.map((t: Json) => t.transcriptionId));
      cursor = page.nextCursor;
    }
    expect(seen).toEqual(full);
    expect((await listAll(svc, alice.accessKey))[0].transcriptionId).toBe(inserted.transcriptionId);

    // Bob sees only his own row; Alice cannot read it.
    expect((await listAll(svc, bob.accessKey)).map((t) => t.transcriptionId)).toEqual([bobRow.transcriptionId]);
    expect((await getJson(svc, `${TRANSCRIPTIONS}/${bobRow.transcriptionId}`, alice.accessKey)).status).toBe(404);
    expect((await getJson(svc, `${TRANSCRIPTIONS}/${bobRow.transcriptionId}/transcript`, alice.accessKey)).status).toBe(404);

    const bad = await getJson(svc, `${TRANSCRIPTIONS}?cursor=not-a-cursor`, alice.accessKey);
    expect(bad.status).toBe(422);
    expect(bad.json.message).toMatch(/^VALIDATION_FAILED: cursor/);
    expect((await getJson(svc, `${TRANSCRIPTIONS}?limit=101`, alice.accessKey)).status).toBe(422);
    expect((await getJson(svc, `${TRANSCRIPTIONS}?limit=0`, alice.accessKey)).status).toBe(422);
    expect((await getJson(svc, TRANSCRIPTIONS, 'sk_nope_nope')).status).toBe(401);
    await svc.service.batch.idle();
  }, 120_000);

  it('refuses non-audio content whatever its name, bad fields and options, changing nothing', async () => {
    const carol = await svc.account(1_000n);
    const cases: Array<[number, string, Promise<{ status: number; json: Json }>]> = [
      [
        415,
        'UNSUPPORTED_AUDIO',
        upload(svc, carol.accessKey, Buffer.from('RIFF this is plain text pretending to be a wav file\n'.repeat(50))),
      ],
      [415, 'UNSUPPORTED_AUDIO', upload(svc, carol.accessKey, fs.readFileSync(new URL('../../package.json', import.meta.url)))],
      [
        422,
        'VALIDATION_FAILED: options.inputEncoding',
        upload(svc, carol.accessKey, clips[1]!.wavFile, { options: '{"inputEncoding":"mulaw_8000"}' }),
      ],
      [
        422,
        'VALIDATION_FAILED: options.segmentCommitMode',
        upload(svc, carol.accessKey, clips[1]!.wavFile, { options: '{"segmentCommitMode":"manual"}' }),
      ],
      [
        422,
        'VALIDATION_FAILED: options.removeDisfluencies',
        upload(svc, carol.accessKey, clips[1]!.wavFile, { options: '{"removeDisfluencies":"yes"}' }),
      ],
      [
        422,
        'VALIDATION_FAILED: options.rewriteInstruction',
        upload(svc, carol.accessKey, clips[1]!.wavFile, { options: '{"entityCategories":["email"],"rewriteInstruction":"x"}' }),
      ],
      [422, 'VALIDATION_FAILED: options', upload(svc, carol.accessKey, clips[1]!.wavFile, { options: '{not json' })],
      [422, 'VALIDATION_FAILED: title', upload(svc, carol.accessKey, clips[1]!.wavFile, { title: 'x'.repeat(201) })],
      [422, 'VALIDATION_FAILED: languageHint', upload(svc, carol.accessKey, clips[1]!.wavFile, { languageHint: 'fr' })],
      [422, 'VALIDATION_FAILED: speaker', upload(svc, carol.accessKey, clips[1]!.wavFile, { speaker: 'x' })],
      [422, 'VALIDATION_FAILED: audio', upload(svc, carol.accessKey, clips[1]!.wavFile, {}, 'audio')],
      [422, 'VALIDATION_FAILED: file', upload(svc, carol.accessKey, null, { title: 'no file' })],
      [401, 'UNAUTHORIZED', upload(svc, 'sk_x_y', clips[1]!.wavFile)],
    ];
    for (const [status, prefix, p] of cases) {
      const r = await p;
      expect(r.status, JSON.stringify(r.json)).toBe(status);
      expect(r.json.code).toBe(-1);
      expect(r.json.message.startsWith(prefix), r.json.message).toBe(true);
    }
    const json = await fetch(`${svc.baseUrl}${TRANSCRIPTIONS}`, {
      method: 'POST',
      headers: { accessKey: carol.accessKey, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(json.status).toBe(400);
    expect(await listAll(svc, carol.accessKey)).toEqual([]);
    expect(await balance(svc, carol.accessKey)).toBe(1_000n);
    expect(fs.readdirSync(`${svc.dataDir}/batch`).filter((f) => f.startsWith('upload-') || f.startsWith('decode-'))).toEqual([]);
  }, 60_000);

  it('accepts m4a and ogg by content, and refuses a playlist that would make ffmpeg open other files', async () => {
    const clip = clips.find((c) => c.id === 'librivox-0870')!;
    for (const ext of ['m4a', 'ogg']) {
      const r = await upload(svc, alice.accessKey, convert(clip.wavFile, ext));
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      expect(Math.abs(Number(r.json.data.audioSamples) - clip.pcm16k.length / 2)).toBeLessThan(16_000 * 0.1);
    }
    // An HLS playlist pointing at a URL: probing it must not fetch anything.
    let hits = 0;
    const server = http.createServer((_req, res) => {
      hits++;
      res.end(fs.readFileSync(clip.wavFile));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    try {
      const playlist = `#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\nhttp://127.0.0.1:${port}/a.wav\n#EXT-X-ENDLIST\n`;
      const refused = await upload(svc, alice.accessKey, Buffer.from(playlist));
      expect(refused.status).toBe(415);
      expect(refused.json.message).toMatch(/^UNSUPPORTED_AUDIO/);
      expect(hits).toBe(0);
    } finally {
      server.close();
    }
    await svc.service.batch.idle();
  }, 60_000);

  it('a create that fails after the audio was decoded leaves no file behind and charges nothing', async () => {
    const frank = await svc.account(1_000n);
    // A real storage fault: a trigger (another connection to the same database) makes the
    // job insert fail inside the create transaction.
    const other = await secondConnection(svc);
    const sqlite = other.engine === 'sqlite';
    if (sqlite) {
      await other.db.run(
        "CREATE TRIGGER fail_batch_insert BEFORE INSERT ON batch_jobs BEGIN SELECT RAISE(ABORT, 'injected storage fault'); END",
      );
    } else {
      await other.db.run(
        "CREATE FUNCTION fail_batch_insert() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected storage fault'; END $$",
      );
      await other.db.run('CREATE TRIGGER fail_batch_insert BEFORE INSERT ON batch_jobs FOR EACH ROW EXECUTE FUNCTION fail_batch_insert()');
    }
    try {
      const r = await upload(svc, frank.accessKey, clips.find((c) => c.id === 'librivox-0880')!.wavFile);
      expect(r.status, JSON.stringify(r.json)).toBe(500);
    } finally {
      await other.db.run(sqlite ? 'DROP TRIGGER fail_batch_insert' : 'DROP TRIGGER fail_batch_insert ON batch_jobs');
      if (!sqlite) await other.db.run('DROP FUNCTION fail_batch_insert()');
      await other.close();
    }
    const pending = await pendingAudio();
    expect(fs.readdirSync(`${svc.dataDir}/batch`).filter((f) => !pending.has(f))).toEqual([]);
    // the audio store too (the store's batch_audio on PostgreSQL)
    expect((await svc.service.batch.audio.list()).filter((a) => !pending.has(a.name))).toEqual([]);
    expect(await balance(svc, frank.accessKey)).toBe(1_000n);
    expect(await listAll(svc, frank.accessKey)).toEqual([]);
  }, 60_000);

  it('answers 402 INSUFFICIENT_CHARACTERS when the balance cannot cover the whole file, creating no row', async () => {
    const poor = await svc.account(7n);
    const clip = clips.find((c) => c.id === 'librivox-0870')!; // 7.1 s: 8 Characters
    const r = await upload(svc, poor.accessKey, clip.wavFile);
    expect(r.status).toBe(402);
    expect(r.json.message).toMatch(/^INSUFFICIENT_CHARACTERS: .*8 Characters/);
    expect(await balance(svc, poor.accessKey)).toBe(7n);
    expect(await listAll(svc, poor.accessKey)).toEqual([]);
    const ok = await upload(svc, poor.accessKey, clips.find((c) => c.id === 'librivox-0880')!.wavFile); // 2.99 s: 3
    expect(ok.status).toBe(200);
    expect(await balance(svc, poor.accessKey)).toBe(4n);
    await svc.service.batch.idle();
  }, 60_000);
});

/** Long audio in few bytes, made with ffmpeg: an hour of 8 kHz FLAC silence (states its
 * duration), and an mp3 that understates it (no Xing header; 5 s at 160 kb/s, then 20 min
 * at 8 kb/s: ffprobe estimates about 155 s from the first frames' bitrate). */
const longAudio = (() => {
  const dir = tempDir('scribed-long-');
  const hourFlac = `${dir}/hour.flac`;
  execFileSync('ffmpeg', ['-v', 'error', '-f', 'lavfi', '-i', 'anullsrc=r=8000:cl=mono', '-t', '3600', '-c:a', 'flac', hourFlac]);
  const parts = [
    ['sine=frequency=440:sample_rate=8000:duration=5', '160k'],
    ['anullsrc=r=8000:cl=mono', '8k'],
  ].map(([src, bitrate], i) => {
    const out = `${dir}/part${i}.mp3`;
    execFileSync('ffmpeg', [
      '-v',
      'error',
      '-f',
      'lavfi',
      '-i',
      src!,
      '-t',
      '1200',
      '-ac',
      '1',
      '-ar',
      '8000',
      '-b:a',
      bitrate!,
      '-write_xing',
      '0',
      '-id3v2_version',
      '0',
      out,
    ]);
    return fs.readFileSync(out);
  });
  return { hourFlac, understatedMp3: Buffer.concat(parts) };
})();

/** Watches the batch directory while `run` goes: the largest decode output seen, and the
 * most decodes (ffmpeg outputs) seen at once. */
async function watchDecodes<T>(dir: string, run: () => Promise<T>): Promise<{ result: T; maxBytes: number; maxAtOnce: number }> {
  let maxBytes = 0;
  let maxAtOnce = 0;
  let done = false;
  const poll = (async () => {
    while (!done) {
      const names = fs.readdirSync(dir).filter((f) => f.startsWith('decode-'));
      maxAtOnce = Math.max(maxAtOnce, names.length);
      for (const n of names) {
        try {
          maxBytes = Math.max(maxBytes, fs.statSync(`${dir}/${n}`).size);
        } catch {
          // deleted meanwhile
        }
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  try {
    return { result: await run(), maxBytes, maxAtOnce };
  } finally {
    done = true;
    await poll;
  }
}

describe('audio length limits, checked before decoding', () => {
  it('an hour of audio in 656 KB against a 100-Character balance: 402 from its stated duration, nothing decoded', async () => {
    expect(fs.statSync(longAudio.hourFlac).size).toBeLessThan(1024 * 1024);
    const gina = await svc.account(100n);
    const w = await watchDecodes(`${svc.dataDir}/batch`, () => upload(svc, gina.accessKey, longAudio.hourFlac));
    expect(w.result.status, JSON.stringify(w.result.json)).toBe(402);
    expect(w.result.json.message).toBe('INSUFFICIENT_CHARACTERS: transcribing this file costs 3600 Characters, more than the balance');
    expect(w.maxAtOnce).toBe(0);
    expect(await balance(svc, gina.accessKey)).toBe(100n);
    expect(await listAll(svc, gina.accessKey)).toEqual([]);
  }, 60_000);

  it('over the server maximum: 413 before decoding; a container that understates its length is cut at the cap; decodes run one at a time', async () => {
    const limited = await startService({ maxDecoders: 1, batchMaxAudioSeconds: 600, batchMaxConcurrentDecodes: 1 });
    try {
      const dir = `${limited.dataDir}/batch`;
      const rich = await limited.account(100_000n);
      const stated = await watchDecodes(dir, () => upload(limited, rich.accessKey, longAudio.hourFlac));
      expect(stated.result.status).toBe(413);
      expect(stated.result.json.message).toBe("PAYLOAD_TOO_LARGE: the audio is 3600.0 s long, over this server's limit of 600 s per file");
      expect(stated.maxAtOnce).toBe(0);

      // Three at once: each decode stops at 601 s of 8 kHz audio (9.6 MB), not 1205 s, and
      // only one runs at a time.
      const capped = await watchDecodes(dir, () =>
        Promise.all([0, 1, 2].map(() => upload(limited, rich.accessKey, longAudio.understatedMp3))),
      );
      for (const r of capped.result) {
        expect(r.status, JSON.stringify(r.json)).toBe(413);
        expect(r.json.message).toBe("PAYLOAD_TOO_LARGE: the audio is longer than this server's limit of 600 s per file");
      }
      expect(capped.maxBytes).toBeGreaterThan(0);
      expect(capped.maxBytes).toBeLessThanOrEqual(601 * 8000 * 2 + 64 * 1024);
      expect(capped.maxAtOnce).toBe(1);

      // The same file against a 300-Character balance: cut at 301 s, 402.
      const poor = await limited.account(300n);
      const cut = await watchDecodes(dir, () => upload(limited, poor.accessKey, longAudio.understatedMp3));
      expect(cut.result.status).toBe(402);
      expect(cut.result.json.message).toBe('INSUFFICIENT_CHARACTERS: transcribing this file costs more than the balance of 300 Characters');
      expect(cut.maxBytes).toBeLessThanOrEqual(301 * 8000 * 2 + 64 * 1024);
      expect(await balance(limited, poor.accessKey)).toBe(300n);
      expect(await balance(limited, rich.accessKey)).toBe(100_000n);
      expect(fs.readdirSync(dir)).toEqual([]);
    } finally {
      await limited.stop();
    }
  }, 120_000);
});

describe('Idempotency-Key on uploads', () => {
  const short = () => clips.find((c) => c.id === 'librivox-0880')!.wavFile; // 2.99 s: 3 Characters
  const other = () => clips.find((c) => c.id === 'librivox-0890')!.wavFile;

  it('a retried upload with the same key, file and fields answers with the first job and charges once', async () => {
    const acct = await svc.account(100n);
    const key = { 'Idempotency-Key': `upload-${randomUUID()}` };
    // in parallel, as a client that timed out and retried would: the duplicates are decided
    // inside the create transaction
    const sent = await Promise.all([0, 1, 2].map(() => upload(svc, acct.accessKey, short(), { title: 'call 7' }, 'file', key)));
    // and once more after it is stored: answered before decoding again
    const later = await upload(svc, acct.accessKey, short(), { title: 'call 7' }, 'file', key);
    const all = [...sent, later];
    for (const r of all) expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(all.filter((r) => !r.replayed)).toHaveLength(1);
    const first = all.find((r) => !r.replayed)!;
    for (const r of all) {
      expect(r.json.data.transcriptionId).toBe(first.json.data.transcriptionId);
      expect(r.json.data.charactersCharged).toBe('3');
      expect(r.json.data.source).toEqual(first.json.data.source);
    }
    expect(await balance(svc, acct.accessKey)).toBe(97n);
    expect((await listAll(svc, acct.accessKey)).map((t: Json) => t.transcriptionId)).toEqual([first.json.data.transcriptionId]);
    await svc.service.batch.idle();
  }, 60_000);

  it('the same key with another file or another title is 409 IDEMPOTENCY_CONFLICT, changing nothing', async () => {
    const acct = await svc.account(100n);
    const key = { 'Idempotency-Key': `upload-${randomUUID()}` };
    expect((await upload(svc, acct.accessKey, short(), { title: 'call 8' }, 'file', key)).status).toBe(200);
    const otherFile = await upload(svc, acct.accessKey, other(), { title: 'call 8' }, 'file', key);
    expect(otherFile.status).toBe(409);
    expect(otherFile.json.message).toMatch(/^IDEMPOTENCY_CONFLICT: /);
    const otherTitle = await upload(svc, acct.accessKey, short(), { title: 'call 9' }, 'file', key);
    expect(otherTitle.status).toBe(409);
    expect(await balance(svc, acct.accessKey)).toBe(97n);
    expect(await listAll(svc, acct.accessKey)).toHaveLength(1);
    // without a key, every upload is a new job
    expect((await upload(svc, acct.accessKey, short(), { title: 'call 8' })).status).toBe(200);
    expect(await balance(svc, acct.accessKey)).toBe(94n);
    await svc.service.batch.idle();
  }, 60_000);

  it('keys are per account, and a malformed key is 400 before anything is stored', async () => {
    const a = await svc.account(100n);
    const b = await svc.account(100n);
    const key = { 'Idempotency-Key': `upload-${randomUUID()}` };
    const ra = await upload(svc, a.accessKey, short(), {}, 'file', key);
    const rb = await upload(svc, b.accessKey, short(), {}, 'file', key);
    expect(rb.status).toBe(200);
    expect(rb.replayed).toBe(false);
    expect(rb.json.data.transcriptionId).not.toBe(ra.json.data.transcriptionId);
    const bad = await upload(svc, a.accessKey, short(), {}, 'file', { 'Idempotency-Key': 'too-short' });
    expect(bad.status).toBe(400);
    expect(bad.json.message).toMatch(/^IDEMPOTENCY_KEY_REQUIRED: /);
    expect(await listAll(svc, a.accessKey)).toHaveLength(1);
    await svc.service.batch.idle();
  }, 60_000);
});

describe('text options on finals', () => {
  const fillers = fillerClip();
  const money = moneyClip();

  it('removeDisfluencies: batch finals lose the fillers the recognizer heard and keep rawText', async () => {
    // readableText off: these compare filler removal with the recognizer's text.
    const plain = (await upload(svc, alice.accessKey, fillers, { options: JSON.stringify({ readableText: false }) })).json.data;
    const cleaned = (
      await upload(svc, alice.accessKey, fillers, { options: JSON.stringify({ removeDisfluencies: true, readableText: false }) })
    ).json.data;
    await svc.service.batch.idle();
    const a = await transcript(svc, plain.transcriptionId, alice.accessKey);
    const b = await transcript(svc, cleaned.transcriptionId, alice.accessKey);
    // Without the option the recognizer's fillers are in the text.
    expect(a.text.split(' ').some(isFiller), a.text).toBe(true);
    expect(a.segments[0].rawText).toBeUndefined();
    for (const [i, seg] of b.segments.entries()) {
      expect(seg.rawText).toBe(a.segments[i].text);
      expect(seg.text).toBe(removeDisfluencies(seg.rawText, []).text);
      expect(seg.text.split(' ').some(isFiller)).toBe(false);
      expect(seg.words.some((w: Json) => isFiller(w.word))).toBe(false);
    }
  }, 60_000);

  it('entityCategories: batch finals carry entities with offsets into the text', async () => {
    const plain = (await upload(svc, alice.accessKey, money)).json.data;
    const tagged = (await upload(svc, alice.accessKey, money, { options: JSON.stringify({ entityCategories: ['money', 'phone_number'] }) }))
      .json.data;
    expect(tagged.sampleRateHz).toBe(8000); // telephone-band source: telephony front end
    await svc.service.batch.idle();
    expect((await transcript(svc, plain.transcriptionId, alice.accessKey)).segments[0].entities).toBeUndefined();
    const seg = (await transcript(svc, tagged.transcriptionId, alice.accessKey)).segments[0];
    const found = seg.entities.find((e: Json) => e.category === 'money');
    expect(found, JSON.stringify(seg)).toBeDefined();
    expect(seg.text.slice(found.start, found.end)).toBe(found.text);
    expect(found.value).toMatch(/^USD \d+\.\d\d$/);
  }, 60_000);

  it('rewriteInstruction and processingContentStorage: batch jobs say they were not applied', async () => {
    const r = await upload(svc, alice.accessKey, clips[1]!.wavFile, {
      options: JSON.stringify({
        rewriteInstruction: 'make it formal',
        processingContentStorage: true,
        suppressBackgroundSpeech: true,
        includeAlignment: false,
      }),
    });
    expect(r.status).toBe(200);
    const codes = r.json.data.notices.map((n: Json) => n.code);
    expect(codes).toEqual(['PROCESSING_STORAGE_NOT_APPLIED', 'REWRITE_NOT_APPLIED', 'BATCH_OPTIONS_NOT_APPLIED']);
    expect(r.json.data.effectiveOptions.notApplied).toEqual(['rewriteInstruction', 'processingContentStorage', 'suppressBackgroundSpeech']);
    const detail = (await getJson(svc, `${TRANSCRIPTIONS}/${r.json.data.transcriptionId}`, alice.accessKey)).json.data;
    expect(detail.notices.map((n: Json) => n.code)).toEqual(codes);
    await svc.service.batch.idle();
    // includeAlignment: false leaves words out; by default they are there (first test's rows).
    const t = await transcript(svc, r.json.data.transcriptionId, alice.accessKey);
    expect(t.text).not.toBe('');
    expect(t.segments.every((s: Json) => s.words.length === 0)).toBe(true);
  }, 60_000);

  it('suppressBackgroundSpeech (not applied in batch) leaves words timed: includeAlignment defaults on', async () => {
    const r = await upload(svc, alice.accessKey, clips.find((c) => c.id === 'librivox-0880')!.wavFile, {
      options: JSON.stringify({ suppressBackgroundSpeech: true }),
    });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(r.json.data.effectiveOptions).toMatchObject({ includeAlignment: true, suppressBackgroundSpeech: true });
    expect(r.json.data.effectiveOptions.notApplied).toContain('suppressBackgroundSpeech');
    await svc.service.batch.idle();
    const t = await transcript(svc, r.json.data.transcriptionId, alice.accessKey);
    expect(t.text).not.toBe('');
    expect(t.segments.flatMap((s: Json) => s.words).length).toBe(t.text.split(' ').length);
  }, 60_000);

  it('real-time finals get the same options through the socket, and the session says what it could not apply', async () => {
    const withOpt = await streamSession(
      svc,
      alice.accessKey,
      { removeDisfluencies: true, readableText: false },
      rawPcm(fillers, 16_000),
      16_000,
    );
    const without = await streamSession(svc, alice.accessKey, { readableText: false }, rawPcm(fillers, 16_000), 16_000);
    const f1 = withOpt.events.find((e) => e.type === 'final')!;
    const f0 = without.events.find((e) => e.type === 'final')!;
    expect(f0.text.split(' ').some(isFiller), f0.text).toBe(true);
    expect(f1.rawText).toBe(f0.text);
    expect(f1.text).toBe(removeDisfluencies(f0.text, []).text);
    expect(withOpt.events.filter((e) => e.type === 'notice')).toEqual([]);
    const stored = await transcript(svc, withOpt.session.transcriptionId, alice.accessKey);
    expect(stored.segments[0]).toMatchObject({ text: f1.text, rawText: f1.rawText });

    const ent = await streamSession(
      svc,
      alice.accessKey,
      { inputEncoding: 'pcm_s16le_8000', entityCategories: ['money', 'person'] },
      rawPcm(money, 8000),
      8000,
    );
    const final = ent.events.find((e) => e.type === 'final')!;
    const m = final.entities.find((e: Json) => e.category === 'money');
    expect(m, JSON.stringify(final)).toBeDefined();
    expect(final.text.slice(m.start, m.end)).toBe(m.text);
    expect(ent.events.filter((e) => e.type === 'notice').map((e) => e.code)).toEqual(['ENTITY_CATEGORIES_NOT_DETECTED']);

    const rw = await createSession(svc, alice.accessKey, { rewriteInstruction: 'summarize' });
    expect(rw.effectiveOptions.notApplied).toEqual(['rewriteInstruction']);
    expect(rw.effectiveOptions.rewriteInstruction).toBe('summarize');
    const c = await StreamClient.connect(`${svc.wsBase}${rw.streamUrl}`, { accessKey: alice.accessKey });
    await c.next('ready');
    const notice = await c.next('notice');
    expect(notice.code).toBe('REWRITE_NOT_APPLIED');
    expect(c.events.some((e) => e.type === 'notice' && e.code === 'OPTIONS_NOT_APPLIED')).toBe(false);
    c.control({ type: 'close' });
    await c.next('closed');
  }, 120_000);
});

describe('sharing decoders and surviving restarts', () => {
  it('refuses an upload over the size limit while it streams in', async () => {
    const small = await startService({ maxDecoders: 1, batchMaxUploadBytes: 64 * 1024 });
    try {
      const dave = await small.account(1_000n);
      const r = await upload(small, dave.accessKey, clips.find((c) => c.id === 'librivox-0870')!.wavFile);
      expect(r.status).toBe(413);
      expect(r.json.message).toMatch(/^PAYLOAD_TOO_LARGE/);
      expect(await listAll(small, dave.accessKey)).toEqual([]);
      expect(await balance(small, dave.accessKey)).toBe(1_000n);
    } finally {
      await small.stop();
    }
  }, 60_000);

  it('a live socket keeps its decoder: the batch job waits, and after a restart it resumes after its last stored segment', async () => {
    const dataDir = tempDir();
    let one = await startService({ maxDecoders: 1, dataDir });
    const erin = await one.account(1_000n);
    const session = await createSession(one, erin.accessKey, {});
    const c = await StreamClient.connect(`${one.wsBase}${session.streamUrl}`, { accessKey: erin.accessKey });
    await c.next('ready');
    const three = ['librivox-0870', 'librivox-0890', 'librivox-0920'].map((id) => clips.find((x) => x.id === id)!);
    const long = joined(
      three.map((x) => x.wavFile),
      1,
    );
    const job = (await upload(one, erin.accessKey, long, { title: 'queued behind a call' })).json.data;
    await new Promise((r) => setTimeout(r, 1500));
    expect((await getJson(one, `${TRANSCRIPTIONS}/${job.transcriptionId}`, erin.accessKey)).json.data.status).toBe('PROCESSING');
    expect((await transcript(one, job.transcriptionId, erin.accessKey)).segments).toEqual([]);
    // The job's decoded audio, where the node keeps it (a file on SQLite, the store on PostgreSQL).
    const audio = one.service.batch.audio;
    const name = `${job.transcriptionId}.s16le`;
    expect(audio.kind).toBe(one.service.config.databaseUrl === undefined ? 'file' : 'database');
    const raw = await audio.read(name, 0, await audio.totalSamples(name));
    c.close();
    await one.stop();

    // As if the stopped run had recognized the first segment: it must be kept, not redone.
    const plan = planSegments(raw, { rate: 16_000, maxSegmentSeconds: 30 });
    expect(plan.length).toBeGreaterThan(2);
    const offline = await openStore(await storeSettingsFor(dataDir));
    await offline.appendSegment({
      transcriptionId: job.transcriptionId,
      index: 0,
      startSample: BigInt(plan[0]!.startSample),
      endSample: BigInt(plan[0]!.endSample),
      text: 'PRESERVED',
      words: [],
      createdAt: new Date().toISOString(),
    });
    await offline.close();

    one = await startService({ maxDecoders: 1, dataDir });
    try {
      await one.service.batch.idle();
      const done = await getJson(one, `${TRANSCRIPTIONS}/${job.transcriptionId}`, erin.accessKey);
      expect(done.json.data.status).toBe('COMPLETED');
      const t = await transcript(one, job.transcriptionId, erin.accessKey);
      expect(t.segments.map((s: Json) => s.id)).toEqual(plan.filter((p) => !p.silent).map((p) => `seg_${p.index}`));
      expect(t.segments[0].text).toBe('PRESERVED');
      const rest = t.segments
        .slice(1)
        .map((s: Json) => s.text)
        .join(' ');
      expect(rest.length).toBeGreaterThan(20);
      expect(wordErrorRate(three.map((x) => x.reference).join(' '), spokenText(t)).wer).toBeLessThan(0.7);
      expect(await balance(one, erin.accessKey)).toBe(1_000n - costOf(job.audioSamples, 16_000));
      expect(fs.readdirSync(`${dataDir}/batch`)).toEqual([]);
      expect(await one.service.batch.audio.list()).toEqual([]);
    } finally {
      await one.stop();
    }
  }, 120_000);

  it('a batch job running does not keep a live socket from attaching', async () => {
    const two = ['librivox-0870', 'librivox-0890'].map((id) => clips.find((x) => x.id === id)!);
    const job = (
      await upload(
        svc,
        alice.accessKey,
        joined(
          two.map((x) => x.wavFile),
          1,
        ),
        { title: 'long' },
      )
    ).json.data;
    const session = await createSession(svc, alice.accessKey, {});
    const c = await StreamClient.connect(`${svc.wsBase}${session.streamUrl}`, { accessKey: alice.accessKey });
    expect((await c.next('ready')).type).toBe('ready');
    c.control({ type: 'close' }); // closed, not paused: a paused session would hold its decoder
    await c.next('closed');
    await svc.service.batch.idle();
    const t = await transcript(svc, job.transcriptionId, alice.accessKey);
    expect(t.status).toBe('COMPLETED');
    expect(t.segments.length).toBeGreaterThan(1);
  }, 120_000);
});
