// Catalog of streaming models for the sherpa-onnx engine, and their installation:
// `pullModel` downloads a release archive, `installModelFromArchive` takes one already on disk
// (offline hosts). Both verify the pinned SHA-256 before extracting anything, extract with the
// system tar (bzip2 needed) into a scratch directory inside the models directory, check the
// files the engine needs, and rename the result into place as <modelsDir>/<name>.
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { findTransducerFiles } from './backends/sherpa-onnx.js';

export interface ModelEntry {
  /** Name on the command line and directory name under the models directory. */
  name: string;
  description: string;
  /** BCP-47 primary language tags. */
  languages: string[];
  url: string;
  /** File name of the release archive (.tar.bz2). */
  archive: string;
  /** The single top-level directory the archive unpacks to. */
  topDir: string;
  /** Lower-case hex SHA-256 of the archive as published, or null when no published value is
   * known: such entries are refused rather than installed unverified. */
  sha256: string | null;
}

const RELEASES = 'https://github.com/k2-fsa/sherpa-onnx/releases/download/asr-models';

function release(name: string, topDir: string, description: string, sha256: string | null): ModelEntry {
  return {
    name,
    description,
    languages: ['en'],
    url: `${RELEASES}/${topDir}.tar.bz2`,
    archive: `${topDir}.tar.bz2`,
    topDir,
    sha256,
  };
}

/** Known streaming zipformer transducers from the sherpa-onnx project's `asr-models` release.
 * The release carries a `checksum.txt` (file name, tab, SHA-256) that our build hosts cannot
 * read (no internet), so nothing here was checked against it, and set-up downloads neither
 * archive. Each pin is the archive SHA-256 recorded by downstream projects that vendor the same
 * archive (docs/engines.md: for the larger one, several independent projects and a Git LFS
 * object id agree, with its size, 310,414,022 bytes); a wrong pin fails the pull loudly rather
 * than installing anything. Every entry is pinned (test/engine/models.test.ts); an entry added
 * without a digest would install only with an operator-checked `--sha256`. */
export const MODEL_CATALOG: readonly ModelEntry[] = Object.freeze([
  release(
    'streaming-zipformer-en-2023-06-26',
    'sherpa-onnx-streaming-zipformer-en-2023-06-26',
    'English streaming zipformer transducer (LibriSpeech + GigaSpeech), int8 and fp32, about 300 MB',
    '639e25b578e9e997131402199419c13a941f8e4e198e2da1ce57dbf5cf401282',
  ),
  release(
    'streaming-zipformer-en-20M-2023-02-17',
    'sherpa-onnx-streaming-zipformer-en-20M-2023-02-17',
    'Small English streaming zipformer transducer (20M parameters, LibriSpeech), about 120 MB',
    '9c559283e8498d3fe95913c79ca1cb454bb26281ac2b102b41306c7d752765d9',
  ),
]);

export interface ModelOptions {
  modelsDir: string;
  /** Replaces the built-in catalog (tests, site-local mirrors). */
  catalog?: readonly ModelEntry[];
  log?: (msg: string) => void;
  /** An operator-verified SHA-256 for an entry without a pin (install only). */
  expectedSha256?: string;
}

export interface PullOptions extends ModelOptions {
  fetchImpl?: typeof fetch;
  /** Abort when no bytes arrive for this long (connecting included). Default 30 s. */
  idleTimeoutMs?: number;
}

export interface InstallResult {
  name: string;
  dir: string;
  status: 'installed' | 'already-installed';
  sha256: string;
}

export type ModelErrorKind = 'unknown-model' | 'unpinned' | 'download' | 'checksum' | 'extract' | 'io';

export class ModelError extends Error {
  readonly kind: ModelErrorKind;
  constructor(kind: ModelErrorKind, message: string, opts?: { cause?: unknown }) {
    super(message, opts?.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'ModelError';
    this.kind = kind;
  }
}

/** Written into an installed model directory; its presence with the pinned digest makes
 * installation idempotent. */
const MARKER = '.scribed-model.json';

interface Marker {
  name: string;
  archive: string;
  sha256: string;
  installedAt: string;
}

export function findModel(name: string, catalog: readonly ModelEntry[] = MODEL_CATALOG): ModelEntry {
  const entry = catalog.find((e) => e.name === name);
  if (!entry) {
    const known = catalog.map((e) => e.name).join(', ') || '(none)';
    throw new ModelError('unknown-model', `models: unknown model "${name}"; known models: ${known}`);
  }
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(entry.name) || !/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(entry.topDir)) {
    throw new ModelError('unknown-model', `models: catalog entry "${name}" has an unsafe name or directory`);
  }
  return entry;
}

function pinnedSha(entry: ModelEntry, verb: 'pull' | 'install', override?: string): string {
  const sha = (override ?? entry.sha256)?.trim().toLowerCase() ?? null;
  if (sha === null || sha === '') {
    const hint =
      verb === 'install'
        ? ' Check the archive against the digest on the release page and pass it with --sha256 HEX.'
        : ` Download ${entry.url} yourself, check its digest against the release page, and run "scribed models install ${entry.name} --archive FILE --sha256 HEX".`;
    throw new ModelError(
      'unpinned',
      `models ${verb}: "${entry.name}" has no pinned sha256 in the catalog; refusing to install an unverified archive.${hint}`,
    );
  }
  if (!/^[0-9a-f]{64}$/.test(sha)) {
    throw new ModelError('unpinned', `models ${verb}: "${sha}" is not a SHA-256 (64 hex digits)`);
  }
  return sha;
}

export function modelDir(modelsDir: string, name: string): string {
  return path.join(path.resolve(modelsDir), name);
}

/** True when <modelsDir>/<name> holds a complete install of `sha` (marker and model files). */
async function installedWith(dir: string, entry: ModelEntry, sha: string): Promise<boolean> {
  try {
    const marker = JSON.parse(await readFile(path.join(dir, MARKER), 'utf8')) as Partial<Marker>;
    if (marker.sha256 !== sha || marker.name !== entry.name) return false;
    findTransducerFiles(dir);
    return true;
  } catch {
    return false;
  }
}

export async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(file), hash);
  return hash.digest('hex');
}

function runTar(archive: string, dest: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('tar', ['-xjf', archive, '-C', dest, '--no-same-owner', '--no-same-permissions'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      if (stderr.length < 4000) stderr += d.toString();
    });
    child.on('error', (err: NodeJS.ErrnoException) => {
      reject(
        new ModelError(
          'extract',
          err.code === 'ENOENT'
            ? 'models: the system "tar" command was not found; install tar and bzip2 (Debian: apt-get install tar bzip2)'
            : `models: cannot run tar: ${err.message}`,
          { cause: err },
        ),
      );
    });
    child.on('close', (code) => {
      if (code === 0) return resolve();
      const msg = stderr.trim();
      const hint = /bzip2/i.test(msg) ? ' (tar needs bzip2 for .tar.bz2; Debian: apt-get install bzip2)' : '';
      reject(new ModelError('extract', `models: tar -xjf ${archive} failed (exit ${code}): ${msg || 'no message'}${hint}`));
    });
  });
}

/** Extract a verified archive and move its top directory into place atomically. */
async function extractInto(archive: string, entry: ModelEntry, sha: string, modelsDir: string, log: (m: string) => void): Promise<string> {
  const root = path.resolve(modelsDir);
  const target = modelDir(root, entry.name);
  const scratch = await mkdtemp(path.join(root, `.extract-${entry.name}-`));
  try {
    log(`extracting ${path.basename(archive)}`);
    await runTar(archive, scratch);
    const top = path.join(scratch, entry.topDir);
    if (!existsSync(top)) {
      const found = await readdir(scratch);
      throw new ModelError(
        'extract',
        `models: ${path.basename(archive)} did not unpack to ${entry.topDir}/ (found: ${found.join(', ') || 'nothing'})`,
      );
    }
    if (!(await stat(top)).isDirectory()) {
      throw new ModelError('extract', `models: ${entry.topDir} in ${path.basename(archive)} is not a directory`);
    }
    try {
      findTransducerFiles(top);
    } catch (err) {
      throw new ModelError('extract', `models: ${path.basename(archive)} is not a usable model: ${(err as Error).message}`, { cause: err });
    }
    const marker: Marker = { name: entry.name, archive: entry.archive, sha256: sha, installedAt: new Date().toISOString() };
    await writeFile(path.join(top, MARKER), `${JSON.stringify(marker, null, 2)}\n`);
    // Move any previous (incomplete or other-version) install aside, then rename into place;
    // both paths are inside the models directory, so the rename is atomic.
    let aside: string | null = null;
    if (existsSync(target)) {
      aside = path.join(scratch, `previous-${randomBytes(4).toString('hex')}`);
      await rename(target, aside);
    }
    try {
      await rename(top, target);
    } catch (err) {
      if (aside !== null) await rename(aside, target).catch(() => {});
      throw new ModelError('io', `models: cannot move the model into ${target}: ${(err as Error).message}`, { cause: err });
    }
    return target;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** Install `name` from a local archive after checking its SHA-256 against the catalog pin
 * (or `opts.expectedSha256` for an entry without one). The archive itself is never removed. */
export async function installModelFromArchive(name: string, archivePath: string, opts: ModelOptions): Promise<InstallResult> {
  const log = opts.log ?? (() => {});
  const entry = findModel(name, opts.catalog);
  const sha = pinnedSha(entry, 'install', opts.expectedSha256);
  const dir = modelDir(opts.modelsDir, entry.name);
  if (await installedWith(dir, entry, sha)) {
    log(`${entry.name} is already installed in ${dir}`);
    return { name: entry.name, dir, status: 'already-installed', sha256: sha };
  }
  const archive = path.resolve(archivePath);
  let actual: string;
  try {
    actual = await sha256File(archive);
  } catch (err) {
    throw new ModelError('io', `models install: cannot read ${archive}: ${(err as Error).message}`, { cause: err });
  }
  if (actual !== sha) {
    throw new ModelError(
      'checksum',
      `models install: ${archive} has sha256 ${actual}, expected ${sha} for ${entry.name}; refusing to install it (wrong or corrupted file)`,
    );
  }
  await mkdir(path.resolve(opts.modelsDir), { recursive: true });
  await extractInto(archive, entry, sha, opts.modelsDir, log);
  log(`installed ${entry.name} in ${dir}`);
  return { name: entry.name, dir, status: 'installed', sha256: sha };
}

/** Why a fetch failed, in one short phrase (undici hides the socket error in `cause`). */
export function describeFetchError(err: unknown): string {
  const e = err as { name?: string; message?: string; code?: string; cause?: unknown } | null;
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return e.message || 'timed out';
  const cause = e?.cause as { code?: string; message?: string; errors?: { message?: string }[] } | undefined;
  if (cause) {
    if (cause.message) return cause.message;
    if (cause.errors?.[0]?.message) return cause.errors[0].message;
    if (cause.code) return cause.code;
  }
  return e?.message || String(err);
}

function offlineError(entry: ModelEntry, reason: string, cause?: unknown): ModelError {
  return new ModelError(
    'download',
    `models pull: cannot download ${entry.url}: ${reason}. This machine may have no internet access; download the archive elsewhere and run "scribed models install ${entry.name} --archive FILE".`,
    cause === undefined ? undefined : { cause },
  );
}

/** Download `name` into the models directory, verify it and install it. Idempotent: a model
 * already installed with the pinned digest is left alone and nothing is fetched. */
export async function pullModel(name: string, opts: PullOptions): Promise<InstallResult> {
  const log = opts.log ?? (() => {});
  const fetchImpl = opts.fetchImpl ?? fetch;
  const idleMs = opts.idleTimeoutMs ?? 30_000;
  const entry = findModel(name, opts.catalog);
  const sha = pinnedSha(entry, 'pull');
  const root = path.resolve(opts.modelsDir);
  const dir = modelDir(root, entry.name);
  if (await installedWith(dir, entry, sha)) {
    log(`${entry.name} is already installed in ${dir}`);
    return { name: entry.name, dir, status: 'already-installed', sha256: sha };
  }
  await mkdir(root, { recursive: true });
  const temp = path.join(root, `.download-${entry.archive}-${randomBytes(4).toString('hex')}.part`);
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const arm = (): void => {
    clearTimeout(timer);
    timer = setTimeout(
      () =>
        controller.abort(
          new DOMException(`no data received for ${idleMs < 1000 ? `${idleMs} ms` : `${Math.round(idleMs / 1000)} s`}`, 'TimeoutError'),
        ),
      idleMs,
    );
  };
  try {
    log(`downloading ${entry.url}`);
    arm();
    let res: Response;
    try {
      res = await fetchImpl(entry.url, { signal: controller.signal, redirect: 'follow' });
    } catch (err) {
      throw offlineError(entry, controller.signal.aborted ? describeFetchError(controller.signal.reason) : describeFetchError(err), err);
    }
    if (!res.ok || res.body === null) {
      throw new ModelError(
        'download',
        `models pull: cannot download ${entry.url}: HTTP ${res.status} ${res.statusText}. Download the archive elsewhere and run "scribed models install ${entry.name} --archive FILE".`,
      );
    }
    const total = Number(res.headers.get('content-length') ?? 0);
    const hash = createHash('sha256');
    let received = 0;
    let lastReport = 0;
    const meter = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        arm();
        hash.update(chunk);
        received += chunk.length;
        if (received - lastReport >= 16 * 1024 * 1024) {
          lastReport = received;
          log(`  ${Math.round(received / 1048576)} MiB${total > 0 ? ` of ${Math.round(total / 1048576)} MiB` : ''}`);
        }
        cb(null, chunk);
      },
    });
    try {
      await pipeline(
        Readable.fromWeb(res.body as import('node:stream/web').ReadableStream<Uint8Array>),
        meter,
        createWriteStream(temp, { flags: 'wx' }),
      );
    } catch (err) {
      const reason = controller.signal.aborted ? describeFetchError(controller.signal.reason) : describeFetchError(err);
      throw offlineError(entry, `download interrupted after ${received} bytes: ${reason}`, err);
    }
    clearTimeout(timer);
    const actual = hash.digest('hex');
    if (actual !== sha) {
      throw new ModelError(
        'checksum',
        `models pull: ${entry.url} has sha256 ${actual}, expected ${sha}; the download was deleted and nothing was installed`,
      );
    }
    await extractInto(temp, entry, sha, root, log);
    log(`installed ${entry.name} in ${dir}`);
    return { name: entry.name, dir, status: 'installed', sha256: sha };
  } finally {
    clearTimeout(timer);
    await rm(temp, { force: true });
  }
}

export interface ListedModel extends ModelEntry {
  installed: boolean;
  dir: string;
}

export async function listModels(opts: Pick<ModelOptions, 'modelsDir' | 'catalog'>): Promise<ListedModel[]> {
  const catalog = opts.catalog ?? MODEL_CATALOG;
  return Promise.all(
    catalog.map(async (entry) => {
      const dir = modelDir(opts.modelsDir, entry.name);
      let installed = false;
      try {
        const marker = JSON.parse(await readFile(path.join(dir, MARKER), 'utf8')) as Partial<Marker>;
        findTransducerFiles(dir);
        installed = marker.name === entry.name;
      } catch {
        installed = false;
      }
      return { ...entry, installed, dir };
    }),
  );
}
