// Recordings and design previews: content-addressed (by SHA-256), never under a client-chosen
// name. Uploads are staged first (`<dataDir>/recordings/.staging/<random>`, a local file on
// every store: ffprobe checks it there), hashed while they are written, checked, and only
// then published; a failed request removes every file it staged or published, so a request
// stores all of its files or none. Where the published copy lives depends on the store:
//
//  - FileRecordingStore (embedded SQLite store, one node): `<dataDir>/recordings/<aa>/<sha256>`,
//    published by rename. Publishing and deleting run one at a time in this process (a promise
//    chain), so a delete that finds a file unreferenced cannot remove it while an upload of
//    the same content is between its database commit and its rename.
//  - DatabaseRecordingStore (nodes sharing PostgreSQL): the `blobs` table, one row per content
//    (areas/shared-files.ts), so every node serves what any node stored. Files are at most
//    10 MiB (MAX_FILE_BYTES for uploads, the preview bound in design-jobs.ts), so one row holds
//    one whole file and a read buffers at most that much. Nothing serialises nodes in process;
//    the blob's row lock does (see shared-files.ts): the blob is stored before its references
//    are committed (a reader never finds a reference without its blob) and stored again, if a
//    concurrent delete took it meanwhile, after they are.
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { pipeline } from 'node:stream/promises';
import { Transform, type Readable } from 'node:stream';
import type { Store } from './store.js';

export interface StagedFile {
  stagingPath: string;
  sha256: string;
  sizeBytes: number;
}

export interface RecordingStore {
  /** Write a stream to staging, hashing as it goes. The caller bounds the stream's size. */
  stage(source: Readable): Promise<StagedFile>;
  stageBuffer(data: Buffer): Promise<StagedFile>;
  /** Remove staged files (published ones are gone from staging already: no effect). */
  discard(files: StagedFile[]): void;
  /** `commit` records the files in the database; each staged file is published around it (the
   * content stored once however many references it has). If `commit` throws, nothing is
   * published and the error propagates; if publishing fails, `undo` removes the records this
   * call created, and the error propagates. Staging is empty afterwards either way. */
  publish<T>(files: StagedFile[], commit: () => Promise<T>, undo: () => Promise<void>): Promise<T>;
  /** `commit` deletes the records and returns the content hashes no longer referenced, whose
   * stored copies are then removed (unless referenced again meanwhile). */
  remove(commit: () => Promise<string[]>): Promise<void>;
  /** The stored content, or null when there is none. */
  read(sha256: string): Promise<Readable | Buffer | null>;
  /** At start, before the routes serve: bring what an earlier version left where this store
   * does not look into the store (see DatabaseRecordingStore). */
  start(): Promise<void>;
}

function checkSha(sha256: string): void {
  if (!/^[0-9a-f]{64}$/.test(sha256)) throw new Error(`not a sha256: ${sha256}`);
}

/** The local staging area both stores share: uploads are checked (ffprobe) as local files
 * before anything is published. */
abstract class StagedUploads {
  readonly stagingDir: string;

  constructor(dataDir: string) {
    this.stagingDir = path.join(dataDir, 'recordings', '.staging');
    fs.mkdirSync(this.stagingDir, { recursive: true, mode: 0o700 });
  }

  async stage(source: Readable): Promise<StagedFile> {
    const stagingPath = path.join(this.stagingDir, randomBytes(12).toString('hex'));
    const hash = createHash('sha256');
    let size = 0;
    const tap = new Transform({
      transform(chunk: Buffer, _enc, done) {
        hash.update(chunk);
        size += chunk.length;
        done(null, chunk);
      },
    });
    const out = fs.createWriteStream(stagingPath, { mode: 0o600, flags: 'wx' });
    try {
      await pipeline(source, tap, out);
    } catch (err) {
      // A source that fails at once (a cut-off upload) can reject the pipeline while the
      // file is still being opened; remove it only after the stream closed, or the open
      // would create it after the removal and leave it in staging.
      if (!out.closed) await new Promise<void>((resolve) => out.once('close', () => resolve()));
      fs.rmSync(stagingPath, { force: true });
      throw err;
    }
    return { stagingPath, sha256: hash.digest('hex'), sizeBytes: size };
  }

  async stageBuffer(data: Buffer): Promise<StagedFile> {
    const stagingPath = path.join(this.stagingDir, randomBytes(12).toString('hex'));
    fs.writeFileSync(stagingPath, data, { mode: 0o600, flag: 'wx' });
    return { stagingPath, sha256: createHash('sha256').update(data).digest('hex'), sizeBytes: data.length };
  }

  discard(files: StagedFile[]): void {
    for (const f of files) fs.rmSync(f.stagingPath, { force: true });
  }
}

/** Published copies as files in the data dir (embedded store). */
export class FileRecordingStore extends StagedUploads implements RecordingStore {
  readonly root: string;
  #chain: Promise<unknown> = Promise.resolve();

  constructor(dataDir: string) {
    super(dataDir);
    this.root = path.join(dataDir, 'recordings');
  }

  pathOf(sha256: string): string {
    checkSha(sha256);
    return path.join(this.root, sha256.slice(0, 2), sha256);
  }

  /** Serialised with deletes: `commit` first, then each staged file is renamed into place (or
   * dropped when the content is already stored). */
  publish<T>(files: StagedFile[], commit: () => Promise<T>, undo: () => Promise<void>): Promise<T> {
    return this.#serial(async () => {
      let result: T;
      try {
        result = await commit();
      } catch (err) {
        this.discard(files);
        throw err;
      }
      const created: string[] = [];
      try {
        for (const f of files) {
          const target = this.pathOf(f.sha256);
          if (fs.existsSync(target)) {
            fs.rmSync(f.stagingPath, { force: true });
            continue;
          }
          fs.mkdirSync(path.dirname(target), { recursive: true, mode: 0o700 });
          fs.renameSync(f.stagingPath, target);
          created.push(target);
        }
      } catch (err) {
        for (const c of created) fs.rmSync(c, { force: true });
        this.discard(files);
        await undo();
        throw err;
      }
      return result;
    });
  }

  /** Serialised with publish. */
  remove(commit: () => Promise<string[]>): Promise<void> {
    return this.#serial(async () => {
      for (const sha of await commit()) fs.rmSync(this.pathOf(sha), { force: true });
    });
  }

  async read(sha256: string): Promise<Readable | null> {
    const file = this.pathOf(sha256);
    return fs.existsSync(file) ? fs.createReadStream(file) : null;
  }

  async start(): Promise<void> {}

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#chain.then(fn, fn);
    this.#chain = run.catch(() => undefined);
    return run;
  }
}

/** Published copies in the shared store's `blobs` table (nodes sharing PostgreSQL). */
export class DatabaseRecordingStore extends StagedUploads implements RecordingStore {
  readonly #root: string;

  constructor(
    dataDir: string,
    private readonly store: Pick<Store, 'putBlob' | 'getBlob' | 'deleteUnreferencedBlobs'>,
    private readonly log: Logger,
    private readonly now: () => Date = () => new Date(),
  ) {
    super(dataDir);
    this.#root = path.join(dataDir, 'recordings');
  }

  /** Earlier versions published to `<dataDir>/recordings/<aa>/<sha256>` on PostgreSQL too, where
   * only this node could read them. Each such file whose content matches its name becomes a
   * blob (unless one is stored), unreferenced ones are dropped again, and the file is removed:
   * from then on the store holds it for every node. A file whose content does not match its
   * name is left where it is. */
  async start(): Promise<void> {
    let dirs: fs.Dirent[];
    try {
      dirs = fs.readdirSync(this.#root, { withFileTypes: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    let moved = 0;
    for (const dir of dirs) {
      if (!dir.isDirectory() || !/^[0-9a-f]{2}$/.test(dir.name)) continue;
      for (const name of fs.readdirSync(path.join(this.#root, dir.name))) {
        const file = path.join(this.#root, dir.name, name);
        if (!/^[0-9a-f]{64}$/.test(name) || !name.startsWith(dir.name)) continue;
        const data = await fs.promises.readFile(file);
        if (createHash('sha256').update(data).digest('hex') !== name) {
          this.log.warn({ file }, 'recording file does not match its name; left in place');
          continue;
        }
        await this.store.putBlob(name, data.length, async () => data, this.now());
        await this.store.deleteUnreferencedBlobs([name]);
        fs.rmSync(file, { force: true });
        moved++;
      }
    }
    if (moved > 0) this.log.info({ files: moved }, 'recordings from the data dir moved into the shared store');
  }

  async #put(files: StagedFile[]): Promise<void> {
    for (const f of files) {
      checkSha(f.sha256);
      await this.store.putBlob(f.sha256, f.sizeBytes, () => fs.promises.readFile(f.stagingPath), this.now());
    }
  }

  /** Blobs of `files` nobody references: a request that failed leaves none behind. */
  async #drop(files: StagedFile[]): Promise<void> {
    try {
      await this.store.deleteUnreferencedBlobs(files.map((f) => f.sha256));
    } catch (err) {
      this.log.warn({ err }, 'could not remove the blobs of a failed upload; they stay unreferenced');
    }
  }

  /** Blobs first (a committed reference always finds its blob), then `commit`, then the blobs
   * again: a delete on another node that found the content unreferenced before `commit` may
   * have removed it in between. */
  async publish<T>(files: StagedFile[], commit: () => Promise<T>, undo: () => Promise<void>): Promise<T> {
    try {
      let result: T;
      try {
        await this.#put(files);
        result = await commit();
      } catch (err) {
        await this.#drop(files);
        throw err;
      }
      try {
        await this.#put(files);
      } catch (err) {
        try {
          await undo();
        } catch (undoErr) {
          this.log.error({ err: undoErr }, 'could not undo the records of an upload whose blobs could not be stored');
        }
        await this.#drop(files);
        throw err;
      }
      return result;
    } finally {
      this.discard(files);
    }
  }

  async remove(commit: () => Promise<string[]>): Promise<void> {
    const unreferenced = await commit();
    if (unreferenced.length === 0) return;
    try {
      await this.store.deleteUnreferencedBlobs(unreferenced);
    } catch (err) {
      // The records are gone (the request succeeded); the blobs stay, unreferenced.
      this.log.warn({ err, blobs: unreferenced.length }, 'could not remove unreferenced blobs');
    }
  }

  async read(sha256: string): Promise<Buffer | null> {
    checkSha(sha256);
    return this.store.getBlob(sha256);
  }
}

/** The recording store of a service: blobs in the store when nodes share PostgreSQL, files in
 * the data dir otherwise. */
export function recordingStoreFor(shared: boolean, store: Store, dataDir: string, log: Logger, now?: () => Date): RecordingStore {
  return shared ? new DatabaseRecordingStore(dataDir, store, log, now) : new FileRecordingStore(dataDir);
}
