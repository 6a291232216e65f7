// Voice library through HTTP against a real server: list and the accent-model filter,
// create and add recordings (content checks, 10 MiB and 25-file limits at and past the
// bound, all-or-nothing), delete with ownership, and the stored copies (files in the data
// dir on SQLite, blobs in the store on PostgreSQL, where a second node serves them too).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secondConnection, startService, type TestService } from '../helpers/service.js';
import type { SqlStore } from '../../src/store/sql-store.js';
import { call } from '../helpers/api.js';
import { makeM4a, makeMp3, makeMp4Video, makeWav, wavOfSize } from '../helpers/audio-files.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';

const VOICES = '/sound_clone/api/v1/voices';
const MiB = 1024 * 1024;
let svc: TestService;
let alice: ProvisionedAccount;
let bob: ProvisionedAccount;
/** PostgreSQL: a connection to the service's store, to count the blobs. */
let db: SqlStore | null = null;

beforeAll(async () => {
  svc = await startService();
  alice = await svc.account();
  bob = await svc.account();
  if (svc.storeSettings.databaseUrl) db = await secondConnection(svc);
});
afterAll(async () => {
  await svc?.stop();
  await db?.close();
});

type FileSpec = { data: Buffer; name?: string; type?: string };
function form(files: FileSpec[], name?: string, field = 'files'): FormData {
  const f = new FormData();
  if (name !== undefined) f.append('name', name);
  files.forEach((x, i) => f.append(field, new Blob([x.data], { type: x.type ?? 'application/octet-stream' }), x.name ?? `rec${i}.bin`));
  return f;
}

const createVoice = (files: FileSpec[], name = 'My voice', who = alice) =>
  call(svc.baseUrl, 'POST', `${VOICES}/tts`, { key: who.accessKey, rawBody: form(files, name) });
const addFiles = (voiceId: string, files: FileSpec[], who = alice) =>
  call(svc.baseUrl, 'PUT', `${VOICES}/tts/${voiceId}`, { key: who.accessKey, rawBody: form(files) });
const list = async (who = alice, query = '') =>
  (await call(svc.baseUrl, 'GET', `${VOICES}${query}`, { key: who.accessKey })).json.data as any[];
const voiceOf = async (id: string, who = alice) => (await list(who)).find((v) => v.id === id);

function storedFiles(): string[] {
  const root = path.join(svc.dataDir, 'recordings');
  if (!fs.existsSync(root)) return [];
  return fs
    .readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name));
}
/** Stored copies: files in the data dir, staging included (SQLite), or blobs in the store plus
 * staged files (PostgreSQL, where nothing is published to the data dir). */
async function stored(): Promise<number> {
  const files = storedFiles();
  if (!db) return files.length;
  expect(files.filter((f) => !f.includes(`${path.sep}.staging${path.sep}`))).toEqual([]);
  const { n } = (await db.db.one<{ n: bigint }>('SELECT COUNT(*) AS n FROM blobs'))!;
  return Number(n) + files.length;
}
const staging = () => fs.readdirSync(path.join(svc.dataDir, 'recordings', '.staging'));

async function newVoice(files: FileSpec[] = [{ data: makeWav() }]) {
  const r = await createVoice(files);
  expect(r.status, r.text).toBe(200);
  return r.json.data.id as string;
}

describe('create and list', () => {
  it('creates a cloned TTS voice from wav and mp3 and lists it with counts and sizes', async () => {
    const wav = makeWav();
    const mp3 = makeMp3();
    const r = await createVoice([{ data: wav }, { data: mp3 }], 'Narrator A');
    expect(r.json.code).toBe(1);
    expect(r.json.data.id).toMatch(/^vc_/);
    const v = await voiceOf(r.json.data.id);
    expect(v).toEqual({
      id: r.json.data.id,
      name: 'Narrator A',
      type: 'cloned',
      feature: 'text-to-speech',
      channel: 'web',
      fileCount: 2,
      totalFileSize: wav.length + mp3.length,
    });
  });

  it('lists prebuilt voices too, and no supportedModels field', async () => {
    const all = await list();
    expect(all.some((v) => v.type === 'prebuilt')).toBe(true);
    for (const v of all) expect(v).not.toHaveProperty('supportedModels');
  });

  it("does not list another account's voices", async () => {
    const id = await newVoice();
    expect((await list(bob)).some((v) => v.id === id)).toBe(false);
  });

  it('filters by svc_v3_accent_enhance: own compatible voices plus compatible prebuilt ones', async () => {
    const id = await newVoice();
    const filtered = await list(alice, '?modelId=svc_v3_accent_enhance');
    const all = await list();
    expect(filtered.some((v) => v.id === id)).toBe(true);
    const prebuilt = filtered.filter((v) => v.type === 'prebuilt');
    expect(prebuilt.length).toBeGreaterThan(0);
    expect(prebuilt.length).toBeLessThan(all.filter((v) => v.type === 'prebuilt').length);
    expect(filtered.every((v) => v.feature === 'text-to-speech')).toBe(true);
    expect((await list(bob, '?modelId=svc_v3_accent_enhance')).some((v) => v.id === id)).toBe(false);
  });

  it('refuses an unknown modelId', async () => {
    const r = await call(svc.baseUrl, 'GET', `${VOICES}?modelId=nope`, { key: alice.accessKey });
    expect(r.status).toBe(422);
  });

  it('takes a name of 32 characters and refuses 33, storing nothing', async () => {
    expect((await createVoice([{ data: makeWav() }], '😀'.repeat(32))).json.code).toBe(1);
    const before = await stored();
    const r = await createVoice([{ data: makeWav() }], 'a'.repeat(33));
    expect(r.status).toBe(422);
    expect(await stored()).toBe(before);
  });

  it('refuses a create without files, and without an access key', async () => {
    expect((await createVoice([])).status).toBe(422);
    expect((await call(svc.baseUrl, 'POST', `${VOICES}/tts`, { rawBody: form([{ data: makeWav() }], 'x') })).status).toBe(401);
  });
});

describe('recordings: content checks', () => {
  it('adds m4a recordings', async () => {
    const id = await newVoice();
    const m4a = makeM4a();
    const r = await addFiles(id, [{ data: m4a }]);
    expect(r.json.code).toBe(1);
    expect((await voiceOf(id)).fileCount).toBe(2);
  });

  it('judges by content, not by name or declared type', async () => {
    const id = await newVoice();
    const ok = await addFiles(id, [{ data: makeWav(), name: 'notes.txt', type: 'text/plain' }]);
    expect(ok.json.code).toBe(1);
    const bad = await addFiles(id, [
      { data: Buffer.from('this is not audio at all, just text\n'.repeat(50)), name: 'voice.wav', type: 'audio/wav' },
    ]);
    expect(bad.status).toBe(415);
    expect(bad.json.message).toMatch(/^UNSUPPORTED_AUDIO/);
  });

  it('refuses a video file even though it carries audio', async () => {
    const id = await newVoice();
    const r = await addFiles(id, [{ data: makeMp4Video(), name: 'a.m4a' }]);
    expect(r.status).toBe(415);
  });

  it('stores nothing when one file of several is bad (all or nothing)', async () => {
    const id = await newVoice();
    const before = await stored();
    const r = await addFiles(id, [{ data: makeWav() }, { data: makeMp3() }, { data: Buffer.from('garbage'.repeat(100)) }]);
    expect(r.status).toBe(415);
    expect((await voiceOf(id)).fileCount).toBe(1);
    expect(await stored()).toBe(before);
    expect(staging()).toEqual([]);
  });

  it('refuses a non-multipart body', async () => {
    const id = await newVoice();
    const r = await call(svc.baseUrl, 'PUT', `${VOICES}/tts/${id}`, { key: alice.accessKey, body: { files: [] } });
    expect(r.status).toBe(400);
  });
});

describe('name checked before the recordings are probed', () => {
  // ffprobe on PATH is wrapped by a script that counts its runs, then runs the real one.
  let probes: string;
  let savedPath: string | undefined;
  beforeAll(() => {
    const dir = fs.mkdtempSync(path.join(svc.dataDir, 'bin-'));
    probes = path.join(dir, 'runs');
    fs.writeFileSync(probes, '');
    const real = execFileSync('sh', ['-c', 'command -v ffprobe'], { encoding: 'utf8' }).trim();
    fs.writeFileSync(path.join(dir, 'ffprobe'), `#!/bin/sh\necho run >> '${probes}'\nexec '${real}' "$@"\n`, { mode: 0o755 });
    savedPath = process.env.PATH;
    process.env.PATH = `${dir}:${savedPath}`;
  });
  afterAll(() => {
    process.env.PATH = savedPath;
  });
  const probeRuns = () => fs.readFileSync(probes, 'utf8').split('\n').filter(Boolean).length;

  it('counts probes through the wrapper (a valid create probes its file)', async () => {
    const before = probeRuns();
    await newVoice();
    expect(probeRuns()).toBe(before + 1);
  });

  it('refuses a missing name with 422 without probing or storing the files', async () => {
    const [runs, stored0, voices] = [probeRuns(), await stored(), (await list()).length];
    const r = await call(svc.baseUrl, 'POST', `${VOICES}/tts`, {
      key: alice.accessKey,
      rawBody: form([{ data: makeWav() }, { data: makeMp3() }]),
    });
    expect(r.status, r.text).toBe(422);
    expect(r.json.message).toMatch(/^VALIDATION_FAILED: name/);
    expect(probeRuns()).toBe(runs);
    expect(await stored()).toBe(stored0);
    expect(staging()).toEqual([]);
    expect((await list()).length).toBe(voices);
  });

  it('refuses a 33-character name sent after the files with 422 without probing or storing them', async () => {
    const [runs, stored0] = [probeRuns(), await stored()];
    const f = form([{ data: makeWav() }, { data: makeMp3() }]);
    f.append('name', 'a'.repeat(33));
    const r = await call(svc.baseUrl, 'POST', `${VOICES}/tts`, { key: alice.accessKey, rawBody: f });
    expect(r.status, r.text).toBe(422);
    expect(r.json.message).toMatch(/^VALIDATION_FAILED: name/);
    expect(probeRuns()).toBe(runs);
    expect(await stored()).toBe(stored0);
    expect(staging()).toEqual([]);
  });
});

describe('malformed multipart', () => {
  const send = (method: string, path: string, contentType: string, body: string) =>
    call(svc.baseUrl, method, path, { key: alice.accessKey, rawBody: body, headers: { 'content-type': contentType } });
  const truncated = '--XYZ\r\nContent-Disposition: form-data; name="files"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\nRIFF';

  it('answers 400 BAD_REQUEST, not 500, for a body that is not multipart data, a missing boundary or a cut-off body', async () => {
    const id = await newVoice();
    const before = await stored();
    for (const [method, path] of [
      ['POST', `${VOICES}/tts`],
      ['PUT', `${VOICES}/tts/${id}`],
    ] as const) {
      for (const [contentType, body] of [
        ['multipart/form-data; boundary=XYZ', 'garbage'],
        ['multipart/form-data', 'garbage'],
        ['multipart/form-data; boundary=XYZ', truncated],
      ] as const) {
        const r = await send(method, path, contentType, body);
        expect(r.status, `${method} ${contentType} ${body.slice(0, 10)}: ${r.text}`).toBe(400);
        expect(r.json.message).toMatch(/^BAD_REQUEST: /);
      }
    }
    expect(await stored()).toBe(before);
    expect(staging()).toEqual([]);
    expect((await voiceOf(id)).fileCount).toBe(1);
  });
});

describe('recordings: limits', () => {
  it('takes a file of exactly 10 MiB', async () => {
    const id = await newVoice();
    const r = await addFiles(id, [{ data: wavOfSize(10 * MiB) }]);
    expect(r.json.code).toBe(1);
    expect((await voiceOf(id)).totalFileSize).toBeGreaterThan(10 * MiB);
  });

  it('refuses a file of 10 MiB + 2 bytes, and stores none of the request', async () => {
    const id = await newVoice();
    const before = await stored();
    const r = await addFiles(id, [{ data: makeWav() }, { data: wavOfSize(10 * MiB + 2) }]);
    expect(r.status).toBe(413);
    expect((await voiceOf(id)).fileCount).toBe(1);
    expect(await stored()).toBe(before);
    expect(staging()).toEqual([]);
  });

  it('counts creation files toward 25: 24 + 1 fits, one more does not', async () => {
    const wav = makeWav();
    const id = await newVoice(Array.from({ length: 24 }, () => ({ data: wav })));
    expect((await voiceOf(id)).fileCount).toBe(24);
    expect((await addFiles(id, [{ data: wav }])).json.code).toBe(1);
    const r = await addFiles(id, [{ data: wav }]);
    expect(r.status).toBe(422);
    expect(r.json.message).toMatch(/^VOICE_FILE_LIMIT/);
    expect((await voiceOf(id)).fileCount).toBe(25);
  });

  it('refuses 2 files on a voice holding 24, storing neither', async () => {
    const wav = makeWav();
    const id = await newVoice(Array.from({ length: 24 }, () => ({ data: wav })));
    const r = await addFiles(id, [{ data: makeWav() }, { data: makeWav() }]);
    expect(r.json.message).toMatch(/^VOICE_FILE_LIMIT/);
    expect((await voiceOf(id)).fileCount).toBe(24);
  });

  it('creates with 25 files and refuses 26', async () => {
    const wav = makeWav();
    expect((await createVoice(Array.from({ length: 25 }, () => ({ data: wav })))).json.code).toBe(1);
    const r = await createVoice(
      Array.from({ length: 26 }, () => ({ data: wav })),
      'too many',
    );
    expect(r.json.message).toMatch(/^VOICE_FILE_LIMIT/);
    expect((await list()).some((v) => v.name === 'too many')).toBe(false);
  });

  it('lets only one of two concurrent uploads take the last free slot', async () => {
    const wav = makeWav();
    const id = await newVoice(Array.from({ length: 24 }, () => ({ data: wav })));
    const [a, b] = await Promise.all([addFiles(id, [{ data: makeWav() }]), addFiles(id, [{ data: makeMp3() }])]);
    expect([a.json.code, b.json.code].filter((c) => c === 1)).toHaveLength(1);
    expect((await voiceOf(id)).fileCount).toBe(25);
    expect(staging()).toEqual([]);
  });

  it("reads another account's voice as not found", async () => {
    const id = await newVoice();
    const r = await addFiles(id, [{ data: makeWav() }], bob);
    expect(r.status).toBe(404);
    expect((await voiceOf(id)).fileCount).toBe(1);
  });
});

describe('delete', () => {
  it('deletes an own voice and its stored recordings', async () => {
    const before = await stored();
    const id = await newVoice([{ data: makeWav() }, { data: makeMp3() }]);
    expect(await stored()).toBe(before + 2);
    const r = await call(svc.baseUrl, 'DELETE', `${VOICES}/${id}`, { key: alice.accessKey });
    expect(r.json.code).toBe(1);
    expect(await voiceOf(id)).toBeUndefined();
    expect(await stored()).toBe(before);
  });

  it('keeps a file another voice still references', async () => {
    const wav = makeWav();
    const a = await newVoice([{ data: wav }]);
    const b = await newVoice([{ data: wav }]);
    const before = await stored();
    await call(svc.baseUrl, 'DELETE', `${VOICES}/${a}`, { key: alice.accessKey });
    expect(await stored()).toBe(before);
    expect((await voiceOf(b)).fileCount).toBe(1);
  });

  it("answers 404 for another account's voice and keeps it", async () => {
    const id = await newVoice();
    const r = await call(svc.baseUrl, 'DELETE', `${VOICES}/${id}`, { key: bob.accessKey });
    expect(r.status).toBe(404);
    expect(await voiceOf(id)).toBeDefined();
  });

  it('answers 404 for a missing voice and 403 for a prebuilt one', async () => {
    expect((await call(svc.baseUrl, 'DELETE', `${VOICES}/vc_00000000000000000000`, { key: alice.accessKey })).status).toBe(404);
    const prebuilt = (await list()).find((v) => v.type === 'prebuilt');
    const r = await call(svc.baseUrl, 'DELETE', `${VOICES}/${prebuilt.id}`, { key: alice.accessKey });
    expect(r.status).toBe(403);
  });
});
