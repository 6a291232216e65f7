// Where redacted recordings are kept (docs/recordings.md). The audio handed here is already
// masked (mask.ts): nothing unredacted reaches the store through this module.
//
// - Pieces: a live session's audio, one piece per final (the segment and what lay before it
//   since the previous one), deflated 16-bit PCM in a row of the store (recording_pieces), so
//   any node that takes the session over adds to the same recording.
// - Finished: at close (or a batch job's end) the pieces become one FLAC file, stored
//   content-addressed by the recording store (the data dir on one node, the blobs table when
//   nodes share PostgreSQL) and named by a session_recordings row; the pieces are deleted in
//   the transaction that names it.
import zlib from 'node:zlib';
import { promisify } from 'node:util';
import type { Logger } from 'pino';
import type { RecordingStore } from '../store/recordings.js';
import type { SegmentRecord, SessionRecordingRecord, Store } from '../store/store.js';
import { decodeFlacMono, encodeFlac } from './flac.js';
import { maskSpans, spansOfAnnotations } from './mask.js';
import { interleaveStereo } from './mix.js';

const deflate = promisify(zlib.deflateRaw);
const inflate = promisify(zlib.inflateRaw);

export interface RecordingKeeperDeps {
  store: Store;
  files: RecordingStore;
  log: Logger;
  now?: () => Date;
}

export interface StoredRecording {
  record: SessionRecordingRecord;
  bytes: Buffer;
}

function pcmBuffer(pcm: Int16Array): Buffer {
  return Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
}

async function toBuffer(data: NodeJS.ReadableStream | Buffer): Promise<Buffer> {
  if (Buffer.isBuffer(data)) return data;
  const parts: Buffer[] = [];
  for await (const c of data) parts.push(Buffer.isBuffer(c) ? c : Buffer.from(c));
  return Buffer.concat(parts);
}

export class RecordingKeeper {
  private readonly now: () => Date;

  constructor(private readonly deps: RecordingKeeperDeps) {
    this.now = deps.now ?? (() => new Date());
  }

  /** Store a masked piece of a live session's audio starting at session sample `startSample`. */
  async putPiece(transcriptionId: string, startSample: bigint, pcm: Int16Array, rate: number): Promise<void> {
    if (pcm.length === 0) return;
    await this.deps.store.putRecordingPiece({
      transcriptionId,
      startSample,
      endSample: startSample + BigInt(pcm.length),
      sampleRate: rate,
      pcmDeflated: await deflate(pcmBuffer(pcm), { level: 1 }),
      createdAt: this.now().toISOString(),
    });
  }

  /** The pieces of a row as one FLAC recording, `totalSamples` long (at least as long as the
   * pieces; what no piece covers is silence). Null when the row has no piece. */
  async finishFromPieces(transcriptionId: string, accountId: string, totalSamples: bigint | null): Promise<SessionRecordingRecord | null> {
    const pieces = await this.deps.store.listRecordingPieces(transcriptionId);
    if (pieces.length === 0) return null;
    const rate = pieces[0]!.sampleRate;
    const end = pieces.reduce((m, p) => (p.endSample > m ? p.endSample : m), totalSamples ?? 0n);
    const pcm = new Int16Array(Number(end));
    for (const p of pieces) {
      const raw = await inflate(p.pcmDeflated);
      const samples = new Int16Array(raw.buffer, raw.byteOffset, raw.length >> 1);
      pcm.set(samples.subarray(0, Number(p.endSample - p.startSample)), Number(p.startSample));
    }
    return this.saveWhole(transcriptionId, accountId, pcm, rate, 1);
  }

  /** A batch job's whole audio, masked where its stored segments name redactions, as its
   * recording. `pcm` is the job's own copy (masked in place). */
  async saveBatch(
    transcriptionId: string,
    accountId: string,
    pcm: Int16Array,
    rate: number,
    segments: readonly SegmentRecord[],
  ): Promise<SessionRecordingRecord> {
    maskSpans(
      pcm,
      0n,
      segments.flatMap((s) => spansOfAnnotations(s.annotations)),
      rate,
    );
    return this.saveWhole(transcriptionId, accountId, pcm, rate, 1);
  }

  /** Encode and store a whole (masked) recording of a row, replacing any earlier one. */
  async saveWhole(
    transcriptionId: string,
    accountId: string,
    pcm: Int16Array,
    rate: number,
    channels: 1 | 2 = 1,
  ): Promise<SessionRecordingRecord> {
    const flac = await encodeFlac(pcm, rate, channels);
    const files = this.deps.files;
    const staged = await files.stageBuffer(flac);
    const record: SessionRecordingRecord = {
      transcriptionId,
      accountId,
      sha256: staged.sha256,
      format: 'flac',
      sampleRate: rate,
      channels,
      samples: BigInt(pcm.length / channels),
      sizeBytes: staged.sizeBytes,
      createdAt: this.now().toISOString(),
    };
    const replaced = await files.publish(
      [staged],
      () => this.deps.store.saveSessionRecording(record),
      async () => {
        await this.deps.store.eraseSessionRecording(transcriptionId, accountId);
      },
    );
    await this.removeContent(replaced);
    return record;
  }

  /** A row's finished recording and its bytes; null when there is none (or it is another
   * account's). */
  async read(transcriptionId: string, accountId: string): Promise<StoredRecording | null> {
    const record = await this.deps.store.getSessionRecording(transcriptionId, accountId);
    if (!record) return null;
    const data = await this.deps.files.read(record.sha256);
    if (!data) return null;
    return { record, bytes: await toBuffer(data) };
  }

  /** Two legs as one stereo FLAC, `left` on the left channel, both from the call's time 0,
   * at the higher of their rates. */
  async stereo(left: StoredRecording, right: StoredRecording): Promise<Buffer> {
    const rate = Math.max(left.record.sampleRate, right.record.sampleRate);
    const [l, r] = await Promise.all([decodeFlacMono(left.bytes, rate), decodeFlacMono(right.bytes, rate)]);
    return encodeFlac(interleaveStereo(l, 0, r, 0), rate, 2);
  }

  /** Delete a row's recording (the retention sweeper; an erasure deletes the rows itself and
   * hands the hashes to removeContent). */
  async erase(transcriptionId: string, accountId: string): Promise<void> {
    await this.deps.files.remove(() => this.deps.store.eraseSessionRecording(transcriptionId, accountId));
  }

  /** Remove stored content nothing references any more (hashes an erasure returned). */
  async removeContent(shas: readonly string[]): Promise<void> {
    if (shas.length === 0) return;
    await this.deps.files
      .remove(async () => [...shas])
      .catch((err: unknown) =>
        this.deps.log.warn({ err, files: shas.length }, 'could not remove erased recordings; they stay unreferenced'),
      );
  }
}
