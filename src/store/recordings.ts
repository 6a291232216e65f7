// Recordings on disk: content-addressed under `<dataDir>/recordings/<aa>/<sha256>`, never a
// client-chosen path. Uploads are staged first (`.staging/<random>`), hashed while they are
// written, checked, and only then published by rename; a failed request removes every file
// it staged or published, so a request stores all of its files or none.
//
// Publishing and deleting run one at a time in this process (a promise chain), so a delete
// that finds a file unreferenced cannot remove it while an upload of the same content is
// between its database commit and its rename.
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform, type Readable } from 'node:stream';

export interface StagedFile {
  stagingPath: string;
  sha256: string;
  sizeBytes: number;
}

export class RecordingStore {
  readonly root: string;
  readonly #staging: string;
  #chain: Promise<unknown> = Promise.resolve();

  constructor(dataDir: string) {
    this.root = path.join(dataDir, 'recordings');
    this.#staging = path.join(this.root, '.staging');
    fs.mkdirSync(this.#staging, { recursive: true, mode: 0o700 });
  }

  pathOf(sha256: string): string {
    if (!/^[0-9a-f]{64}$/.test(sha256)) throw new Error(`not a sha256: ${sha256}`);
    return path.join(this.root, sha256.slice(0, 2), sha256);
  }

  /** Write a stream to staging, hashing as it goes. The caller bounds the stream's size. */
  async stage(source: Readable): Promise<StagedFile> {
    const stagingPath = path.join(this.#staging, randomBytes(12).toString('hex'));
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
    const stagingPath = path.join(this.#staging, randomBytes(12).toString('hex'));
    fs.writeFileSync(stagingPath, data, { mode: 0o600, flag: 'wx' });
    return { stagingPath, sha256: createHash('sha256').update(data).digest('hex'), sizeBytes: data.length };
  }

  discard(files: StagedFile[]): void {
    for (const f of files) fs.rmSync(f.stagingPath, { force: true });
  }

  /** Serialise with deletes: `commit` records the files in the database; then each staged
   * file is published (or dropped when the content is already stored). If `commit` throws,
   * nothing is published; if publishing fails, `undo` removes the records and files this call
   * created. */
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

  /** Serialised with publish: `commit` deletes the records and returns the content hashes
   * no longer referenced, whose files are then removed. */
  remove(commit: () => Promise<string[]>): Promise<void> {
    return this.#serial(async () => {
      for (const sha of await commit()) fs.rmSync(this.pathOf(sha), { force: true });
    });
  }

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#chain.then(fn, fn);
    this.#chain = run.catch(() => undefined);
    return run;
  }
}
