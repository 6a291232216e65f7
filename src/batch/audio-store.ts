// Where the decoded audio of a pending batch job lives, from the upload until the job ends.
//
// - FileBatchAudioStore: one raw s16le file per job in the node's batch directory
//   (`<dataDir>/batch/<id>.s16le`), the embedded store's layout: one node reads it.
// - DatabaseBatchAudioStore: rows of batch_audio in the shared store (PostgreSQL mode,
//   src/store/areas/batch-audio.ts), 1 MiB of PCM a row, so whichever node claims the job
//   (a node that died leaves it to another, docs/scaling.md) reads the same audio.
//
// The upload route decodes to a temp file in the node's batch directory as before (ffmpeg
// writes it; the route checks its length against the allowance), then hands the finished
// file to write(): a rename on one node, a copy in chunks into the database on many. Memory
// stays flat either way: at most a chunk or two of the audio is in memory at a time.
import fs from 'node:fs/promises';
import path from 'node:path';
import { ScribedError } from '../core/errors.js';
import type { Store } from '../store/store.js';
import { BATCH_AUDIO_CHUNK_BYTES } from '../store/areas/batch-audio.js';

export interface BatchAudioStore {
  readonly kind: 'file' | 'database';
  /** True when other nodes write here too: a name no job names yet may be another node's
   * upload in flight, so leftovers are removed only once they are old (BatchRunner.start). */
  readonly shared: boolean;
  /** Keep the finished raw s16le file `file` as `name`. The file is consumed: moved, or
   * copied and deleted. On failure whatever was written under `name` may remain: remove(name). */
  write(name: string, file: string): Promise<void>;
  /** Samples held under `name`; INTERNAL when there is no such audio. */
  totalSamples(name: string): Promise<number>;
  /** Samples [start, end) of `name`; INTERNAL when the audio is shorter. */
  read(name: string, startSample: number, endSample: number): Promise<Int16Array>;
  /** Delete `name` (nothing when there is none). */
  remove(name: string): Promise<void>;
  /** Every name held, with when it was last written. */
  list(): Promise<Array<{ name: string; writtenAt: Date }>>;
}

function missing(name: string, cause?: unknown): ScribedError {
  return new ScribedError('INTERNAL', `the decoded audio of ${name} is missing`, cause === undefined ? undefined : { cause });
}

function short(): ScribedError {
  return new ScribedError('INTERNAL', 'decoded audio file is shorter than expected');
}

/** One file per job in `dir` (also where the route keeps uploads and decodes in flight). */
export class FileBatchAudioStore implements BatchAudioStore {
  readonly kind = 'file' as const;
  readonly shared = false;

  constructor(readonly dir: string) {}

  private file(name: string): string {
    if (name !== path.basename(name) || name === '' || name === '.' || name === '..')
      throw new RangeError(`not a batch audio name: ${name}`);
    return path.join(this.dir, name);
  }

  async write(name: string, file: string): Promise<void> {
    await fs.rename(file, this.file(name));
  }

  async totalSamples(name: string): Promise<number> {
    try {
      return Math.floor((await fs.stat(this.file(name))).size / 2);
    } catch (err) {
      throw missing(name, err);
    }
  }

  async read(name: string, startSample: number, endSample: number): Promise<Int16Array> {
    let fh: fs.FileHandle;
    try {
      fh = await fs.open(this.file(name), 'r');
    } catch (err) {
      throw missing(name, err);
    }
    try {
      const out = new Int16Array(Math.max(0, endSample - startSample));
      const bytes = new Uint8Array(out.buffer);
      let done = 0;
      while (done < bytes.length) {
        const { bytesRead } = await fh.read(bytes, done, bytes.length - done, startSample * 2 + done);
        if (bytesRead === 0) throw short();
        done += bytesRead;
      }
      return out;
    } finally {
      await fh.close();
    }
  }

  async remove(name: string): Promise<void> {
    // recursive: whatever a crash left under the name goes, file or not
    await fs.rm(this.file(name), { recursive: true, force: true });
  }

  async list(): Promise<Array<{ name: string; writtenAt: Date }>> {
    let names: string[];
    try {
      names = await fs.readdir(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const out: Array<{ name: string; writtenAt: Date }> = [];
    for (const name of names) {
      const st = await fs.lstat(path.join(this.dir, name)).catch(() => null);
      if (st) out.push({ name, writtenAt: st.mtime });
    }
    return out;
  }
}

/** Chunks read lately, so the runner's piecewise scan of a file (10 s at a time) fetches each
 * 1 MiB row once. A few MiB at most. */
const CACHED_CHUNKS = 4;

/** Rows of batch_audio in the shared store. */
export class DatabaseBatchAudioStore implements BatchAudioStore {
  readonly kind = 'database' as const;
  readonly shared = true;
  private readonly cache = new Map<string, Buffer>();

  constructor(
    private readonly store: Store,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async write(name: string, file: string): Promise<void> {
    const fh = await fs.open(file, 'r');
    try {
      for (let seq = 0, pos = 0; ; seq++) {
        const chunk = Buffer.allocUnsafe(BATCH_AUDIO_CHUNK_BYTES);
        let filled = 0;
        while (filled < chunk.length) {
          const { bytesRead } = await fh.read(chunk, filled, chunk.length - filled, pos + filled);
          if (bytesRead === 0) break;
          filled += bytesRead;
        }
        if (filled > 0) await this.store.putBatchAudioChunk(name, seq, chunk.subarray(0, filled), this.now());
        pos += filled;
        if (filled < chunk.length) break;
      }
    } finally {
      await fh.close();
    }
    await fs.rm(file, { force: true });
  }

  async totalSamples(name: string): Promise<number> {
    const { chunks, bytes } = await this.store.batchAudioSize(name);
    if (chunks === 0) throw missing(name);
    // Every chunk but the last is whole: anything else is a write that did not finish.
    if (bytes <= (chunks - 1) * BATCH_AUDIO_CHUNK_BYTES || bytes > chunks * BATCH_AUDIO_CHUNK_BYTES) {
      throw new ScribedError('INTERNAL', `the decoded audio of ${name} is incomplete (${chunks} chunks, ${bytes} bytes)`);
    }
    return Math.floor(bytes / 2);
  }

  async read(name: string, startSample: number, endSample: number): Promise<Int16Array> {
    const out = new Int16Array(Math.max(0, endSample - startSample));
    if (out.length === 0) return out;
    const bytes = new Uint8Array(out.buffer);
    const first = startSample * 2;
    const end = endSample * 2;
    const firstSeq = Math.floor(first / BATCH_AUDIO_CHUNK_BYTES);
    const lastSeq = Math.floor((end - 1) / BATCH_AUDIO_CHUNK_BYTES);
    const chunks = new Map<number, Buffer>();
    const wanted: number[] = [];
    for (let seq = firstSeq; seq <= lastSeq; seq++) {
      const hit = this.cache.get(`${name}\0${seq}`);
      if (hit) chunks.set(seq, hit);
      else wanted.push(seq);
    }
    if (wanted.length > 0) {
      for (const c of await this.store.readBatchAudioChunks(name, wanted[0]!, wanted[wanted.length - 1]!)) {
        chunks.set(c.seq, c.pcm);
        this.remember(name, c.seq, c.pcm);
      }
    }
    for (let seq = firstSeq; seq <= lastSeq; seq++) {
      const pcm = chunks.get(seq);
      const base = seq * BATCH_AUDIO_CHUNK_BYTES;
      const from = Math.max(first, base);
      const to = Math.min(end, base + BATCH_AUDIO_CHUNK_BYTES);
      if (!pcm || pcm.length < to - base) throw short();
      bytes.set(pcm.subarray(from - base, to - base), from - first);
    }
    return out;
  }

  private remember(name: string, seq: number, pcm: Buffer): void {
    const key = `${name}\0${seq}`;
    this.cache.delete(key);
    this.cache.set(key, pcm);
    while (this.cache.size > CACHED_CHUNKS) this.cache.delete(this.cache.keys().next().value!);
  }

  async remove(name: string): Promise<void> {
    for (const key of [...this.cache.keys()]) if (key.startsWith(`${name}\0`)) this.cache.delete(key);
    await this.store.deleteBatchAudio(name);
  }

  async list(): Promise<Array<{ name: string; writtenAt: Date }>> {
    return (await this.store.listBatchAudio()).map((r) => ({ name: r.audioFile, writtenAt: new Date(r.writtenAt) }));
  }
}

/** The audio store for a node: the database when nodes share the store, files otherwise. */
export function batchAudioStore(opts: { shared: boolean; store: Store; dir: string }): BatchAudioStore {
  return opts.shared ? new DatabaseBatchAudioStore(opts.store) : new FileBatchAudioStore(opts.dir);
}
