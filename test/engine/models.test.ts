// Model installation: checksum before extraction, atomic placement, idempotence, clear
// offline failures. Uses a small real .tar.bz2 built here and a test catalog entry.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { findTransducerFiles } from '../../src/engine/backends/sherpa-onnx.js';
import { installModelFromArchive, listModels, MODEL_CATALOG, ModelError, pullModel, type ModelEntry } from '../../src/engine/models.js';

const TOP = 'tiny-zipformer-test-2026-01-01';
let work: string;
let archive: string;
let archiveBytes: Buffer;
let sha: string;
let modelsDir: string;

function entry(over: Partial<ModelEntry> = {}): ModelEntry {
  return {
    name: 'tiny-test',
    description: 'test model',
    languages: ['en'],
    url: 'https://example.invalid/tiny.tar.bz2',
    archive: `${TOP}.tar.bz2`,
    topDir: TOP,
    sha256: sha,
    ...over,
  };
}

function buildArchive(dir: string, top: string, name: string): string {
  const src = path.join(dir, `src-${name}`);
  mkdirSync(path.join(src, top), { recursive: true });
  const onnx = Buffer.concat([Buffer.from([0x08, 0x07]), Buffer.alloc(4096, 0x11)]);
  for (const f of ['encoder-epoch-99-avg-1.int8.onnx', 'decoder-epoch-99-avg-1.onnx', 'joiner-epoch-99-avg-1.int8.onnx']) {
    writeFileSync(path.join(src, top, f), onnx);
  }
  writeFileSync(path.join(src, top, 'tokens.txt'), '<blk> 0\n<sos/eos> 1\n\u2581THE 2\n');
  const out = path.join(dir, name);
  execFileSync('tar', ['-cjf', out, '-C', src, top]);
  return out;
}

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

async function rejection(p: Promise<unknown>): Promise<ModelError> {
  try {
    await p;
  } catch (err) {
    return err as ModelError;
  }
  throw new Error('expected a rejection');
}

beforeAll(() => {
  work = mkdtempSync(path.join(os.tmpdir(), 'scribed-models-'));
  archive = buildArchive(work, TOP, 'tiny.tar.bz2');
  archiveBytes = readFileSync(archive);
  sha = sha256(archiveBytes);
});
afterAll(() => rmSync(work, { recursive: true, force: true }));
beforeEach(() => {
  modelsDir = mkdtempSync(path.join(work, 'models-'));
});

describe('models catalog', () => {
  it('lists an English streaming zipformer from the official releases, unpinned entries marked', () => {
    const en = MODEL_CATALOG.find((e) => e.name === 'streaming-zipformer-en-2023-06-26');
    expect(en).toBeDefined();
    expect(en!.url).toBe(
      'https://github.com/k2-fsa/sherpa-onnx/releases/download/asr-models/sherpa-onnx-streaming-zipformer-en-2023-06-26.tar.bz2',
    );
    expect(en!.topDir).toBe('sherpa-onnx-streaming-zipformer-en-2023-06-26');
    // Every model of the catalog is pinned: `models pull` installs none unchecked.
    for (const e of MODEL_CATALOG) expect(e.sha256, e.name).toMatch(/^[0-9a-f]{64}$/);
    expect(en!.sha256).toBe('639e25b578e9e997131402199419c13a941f8e4e198e2da1ce57dbf5cf401282');
  });
});

describe('installModelFromArchive', () => {
  it('verifies and installs atomically, leaving no scratch behind', async () => {
    const res = await installModelFromArchive('tiny-test', archive, { modelsDir, catalog: [entry()] });
    expect(res.status).toBe('installed');
    expect(res.dir).toBe(path.join(modelsDir, 'tiny-test'));
    expect(readdirSync(modelsDir)).toEqual(['tiny-test']);
    const files = findTransducerFiles(res.dir);
    expect(path.basename(files.encoder)).toBe('encoder-epoch-99-avg-1.int8.onnx');
    expect(existsSync(archive)).toBe(true);
    const listed = await listModels({ modelsDir, catalog: [entry()] });
    expect(listed[0]!.installed).toBe(true);
  });

  it('is idempotent: a second install leaves the verified model alone', async () => {
    await installModelFromArchive('tiny-test', archive, { modelsDir, catalog: [entry()] });
    const marker = path.join(modelsDir, 'tiny-test', '.scribed-model.json');
    const before = statSync(marker).mtimeMs;
    const again = await installModelFromArchive('tiny-test', archive, { modelsDir, catalog: [entry()] });
    expect(again.status).toBe('already-installed');
    expect(statSync(marker).mtimeMs).toBe(before);
    expect(readdirSync(modelsDir)).toEqual(['tiny-test']);
  });

  it('replaces an incomplete earlier install', async () => {
    mkdirSync(path.join(modelsDir, 'tiny-test'));
    writeFileSync(path.join(modelsDir, 'tiny-test', 'tokens.txt'), 'half');
    const res = await installModelFromArchive('tiny-test', archive, { modelsDir, catalog: [entry()] });
    expect(res.status).toBe('installed');
    expect(() => findTransducerFiles(res.dir)).not.toThrow();
    expect(readdirSync(modelsDir)).toEqual(['tiny-test']);
  });

  it('rejects a checksum mismatch before extracting anything', async () => {
    const wrong = 'f'.repeat(64);
    const err = await rejection(installModelFromArchive('tiny-test', archive, { modelsDir, catalog: [entry({ sha256: wrong })] }));
    expect(err).toBeInstanceOf(ModelError);
    expect(err.kind).toBe('checksum');
    expect(err.message).toContain(sha);
    expect(err.message).toContain(wrong);
    expect(readdirSync(modelsDir)).toEqual([]);
    expect(existsSync(archive)).toBe(true);
  });

  it('rejects a verified archive that does not hold the expected directory, cleaning up', async () => {
    const other = buildArchive(work, 'some-other-dir', 'other.tar.bz2');
    const e = entry({ sha256: sha256(readFileSync(other)) });
    const err = await rejection(installModelFromArchive('tiny-test', other, { modelsDir, catalog: [e] }));
    expect(err.kind).toBe('extract');
    expect(err.message).toMatch(/did not unpack to tiny-zipformer-test-2026-01-01\//);
    expect(readdirSync(modelsDir)).toEqual([]);
  });

  it('refuses an entry without a pinned sha256 unless the operator supplies one', async () => {
    const catalog = [entry({ sha256: null })];
    const err = await rejection(installModelFromArchive('tiny-test', archive, { modelsDir, catalog }));
    expect(err.kind).toBe('unpinned');
    expect(err.message).toMatch(/no pinned sha256/);
    expect(readdirSync(modelsDir)).toEqual([]);
    const res = await installModelFromArchive('tiny-test', archive, { modelsDir, catalog, expectedSha256: sha.toUpperCase() });
    expect(res.status).toBe('installed');
  });

  it('names the known models for an unknown name', async () => {
    const err = await rejection(installModelFromArchive('nope', archive, { modelsDir, catalog: [entry()] }));
    expect(err.kind).toBe('unknown-model');
    expect(err.message).toContain('tiny-test');
  });
});

const offlineMessage = (url: string, reason: string): string =>
  `models pull: cannot download ${url}: ${reason}. This machine may have no internet access; download the archive elsewhere and run "scribed models install tiny-test --archive FILE".`;

describe('pullModel', () => {
  it('refuses entries without a pin, fetching nothing', async () => {
    let fetched = 0;
    const fetchImpl = (async () => {
      fetched++;
      return new Response(archiveBytes);
    }) as typeof fetch;
    const err = await rejection(pullModel('tiny-test', { modelsDir, catalog: [entry({ sha256: null })], fetchImpl }));
    expect(err.kind).toBe('unpinned');
    expect(err.message).toMatch(/^models pull: "tiny-test" has no pinned sha256/);
    expect(fetched).toBe(0);
    for (const e of MODEL_CATALOG.filter((m) => m.sha256 === null)) {
      await expect(pullModel(e.name, { modelsDir, fetchImpl })).rejects.toThrow(/no pinned sha256/);
    }
    expect(fetched).toBe(0);
  });

  it('gives the one offline message when fetch fails (injected DNS failure)', async () => {
    const fetchImpl = (async () => {
      const cause = Object.assign(new Error('getaddrinfo ENOTFOUND example.invalid'), { code: 'ENOTFOUND' });
      throw new TypeError('fetch failed', { cause });
    }) as typeof fetch;
    const err = await rejection(pullModel('tiny-test', { modelsDir, catalog: [entry()], fetchImpl }));
    expect(err.kind).toBe('download');
    expect(err.message).toBe(offlineMessage('https://example.invalid/tiny.tar.bz2', 'getaddrinfo ENOTFOUND example.invalid'));
    expect(readdirSync(modelsDir)).toEqual([]);
  });

  it('gives the offline message with the real fetch against a closed local port', async () => {
    const port = await new Promise<number>((resolve) => {
      const srv = createServer();
      srv.listen(0, '127.0.0.1', () => {
        const p = (srv.address() as { port: number }).port;
        srv.close(() => resolve(p));
      });
    });
    const url = `http://127.0.0.1:${port}/tiny.tar.bz2`;
    const err = await rejection(pullModel('tiny-test', { modelsDir, catalog: [entry({ url })] }));
    expect(err.kind).toBe('download');
    expect(err.message).toBe(offlineMessage(url, `connect ECONNREFUSED 127.0.0.1:${port}`));
    expect(readdirSync(modelsDir)).toEqual([]);
  });

  it('times out a silent server with the offline message', async () => {
    const fetchImpl = ((_url: string, init?: RequestInit) =>
      new Promise<Response>((_resolve, reject) => {
        init?.signal?.addEventListener('abort', () => reject(init.signal!.reason));
      })) as typeof fetch;
    const err = await rejection(pullModel('tiny-test', { modelsDir, catalog: [entry()], fetchImpl, idleTimeoutMs: 50 }));
    expect(err.message).toBe(offlineMessage('https://example.invalid/tiny.tar.bz2', 'no data received for 50 ms'));
  });

  it('downloads, verifies and installs; then is idempotent without fetching', async () => {
    let fetched = 0;
    const fetchImpl = (async () => {
      fetched++;
      return new Response(archiveBytes, { headers: { 'content-length': String(archiveBytes.length) } });
    }) as typeof fetch;
    const res = await pullModel('tiny-test', { modelsDir, catalog: [entry()], fetchImpl });
    expect(res.status).toBe('installed');
    expect(readdirSync(modelsDir)).toEqual(['tiny-test']);
    const again = await pullModel('tiny-test', { modelsDir, catalog: [entry()], fetchImpl });
    expect(again.status).toBe('already-installed');
    expect(fetched).toBe(1);
  });

  it('deletes a download whose checksum does not match and installs nothing', async () => {
    const fetchImpl = (async () => new Response(Buffer.concat([archiveBytes, Buffer.from('tampered')]))) as typeof fetch;
    const err = await rejection(pullModel('tiny-test', { modelsDir, catalog: [entry()], fetchImpl }));
    expect(err.kind).toBe('checksum');
    expect(err.message).toMatch(/download was deleted/);
    expect(readdirSync(modelsDir)).toEqual([]);
  });

  it('reports an HTTP error status with the install hint', async () => {
    const fetchImpl = (async () => new Response('gone', { status: 404, statusText: 'Not Found' })) as typeof fetch;
    const err = await rejection(pullModel('tiny-test', { modelsDir, catalog: [entry()], fetchImpl }));
    expect(err.message).toMatch(/cannot download https:\/\/example\.invalid\/tiny\.tar\.bz2: HTTP 404 Not Found/);
    expect(err.message).toContain('scribed models install tiny-test --archive FILE');
    expect(readdirSync(modelsDir)).toEqual([]);
  });
});
