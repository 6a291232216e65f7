// The audio spool: what makes an acknowledgement durable. Every frame a session accepts is
// appended to the session's spool file before its `ack` is sent, so audio the server has
// acknowledged but not yet finalized survives a crash (kill -9, OOM, power loss once
// synced). On start-up the open segment of each session is read back from its spool and
// decoded again (recoverSpooledSessions), so the transcript covers it. Once a segment is
// final and persisted its audio is no longer needed and the spool is emptied.
//
// File: `<dataDir>/spool/<sessionId>.spool`, a sequence of records
//   magic "SPL1" | startSample u64 LE (session-wide) | samples u32 LE | crc32 u32 LE | PCM s16le
// The payload is the 16-bit PCM the recognizer was given (gap silence included), so replay
// needs no decoding. A second kind of record, written first after the spool is emptied at a
// final, holds the recognizer's channel state at that point (RecognitionStream.channelState):
//   magic "SPC1" | values u32 LE | crc32 u32 LE | float64 LE values
// so the decoder that replays the open segment after a restart starts from the channel
// adaptation the lost one had, and decodes the segment to the same words. A record torn by a crash mid-write fails its length or CRC check; it
// and anything after it are ignored and cut off. That record was never acknowledged: its
// ack waits for the write (and the sync) to finish.
//
// Durability (docs/protocol.md, "Durable acknowledgements"): records are written with one
// write(2) each before the ack, which already survives the process dying. Acks additionally
// wait for an fdatasync that is batched per session: the first frame after a sync starts a
// timer of `fsyncMs` (default 50 ms), and one fdatasync then covers every frame written in
// that window (group commit). So an ack also survives an OS crash or power loss, at the cost
// of at most `fsyncMs` plus one sync of ack latency and about 1000/fsyncMs syncs a second per
// active session. `fsyncMs < 0` turns syncing off (acks after the write only).
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import type { Logger } from 'pino';
import { decodeToPcm16, encodePcm16le } from '../core/audio/encodings.js';

const MAGIC = 0x314c5053; // "SPL1" read as u32 LE
export const SPOOL_RECORD_HEADER_BYTES = 20;
const CHANNEL_MAGIC = 0x31435053; // "SPC1" read as u32 LE
const CHANNEL_HEADER_BYTES = 12;
/** Far above pocketsphinx's 2 * 13 + 1 values: anything larger is corruption. */
const MAX_CHANNEL_VALUES = 4096;
/** Largest record payload accepted when reading (a frame is at most 1 MiB on the socket). */
const MAX_RECORD_SAMPLES = 4 * 1024 * 1024;

/** What a live session needs of its spool: the file spool here (one node), or the shared
 * one in the database (database-spool.ts, PostgreSQL mode). */
export interface SessionSpool {
  /** True when the spool is in the shared database (appends are durable only at commit). */
  readonly shared: boolean;
  /** How far committed audio reaches when appends are not durable at once; null when they are. */
  readonly durableEnd: bigint | null;
  append(startSample: bigint, samples: Int16Array): void;
  whenDurable(): Promise<void>;
  clear(channelState?: readonly number[] | null): void;
  keepFrom(fromSample: bigint, channelState?: readonly number[] | null): void;
  release(): void;
  remove(): void;
  close(): void;
}

export interface SpoolRecord {
  startSample: bigint;
  samples: Int16Array;
}

// ------------------------------------------------------------------ pure record codec

/** CRC-32 (IEEE, as zip and PNG use), from Node's zlib. */
export function crc32(bytes: Uint8Array): number {
  return zlib.crc32(bytes);
}

export function encodeSpoolRecord(startSample: bigint, samples: Int16Array): Buffer {
  const payload = encodePcm16le(samples);
  const out = Buffer.allocUnsafe(SPOOL_RECORD_HEADER_BYTES + payload.byteLength);
  out.writeUInt32LE(MAGIC, 0);
  out.writeBigUInt64LE(startSample, 4);
  out.writeUInt32LE(samples.length, 12);
  out.writeUInt32LE(crc32(payload), 16);
  out.set(payload, SPOOL_RECORD_HEADER_BYTES);
  return out;
}

export function encodeChannelRecord(state: readonly number[]): Buffer {
  const payload = Buffer.allocUnsafe(state.length * 8);
  state.forEach((v, i) => payload.writeDoubleLE(v, i * 8));
  const out = Buffer.allocUnsafe(CHANNEL_HEADER_BYTES + payload.byteLength);
  out.writeUInt32LE(CHANNEL_MAGIC, 0);
  out.writeUInt32LE(state.length, 4);
  out.writeUInt32LE(crc32(payload), 8);
  out.set(payload, CHANNEL_HEADER_BYTES);
  return out;
}

/** Records from the start of `buf` up to the first torn or corrupt one. `validBytes` is
 * where the good prefix ends; `channelState` is the last channel-state record's (null when
 * there is none). */
export function decodeSpoolRecords(buf: Uint8Array): { records: SpoolRecord[]; validBytes: number; channelState: number[] | null } {
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  const records: SpoolRecord[] = [];
  let channelState: number[] | null = null;
  let off = 0;
  while (off + CHANNEL_HEADER_BYTES <= b.length) {
    if (b.readUInt32LE(off) === CHANNEL_MAGIC) {
      const count = b.readUInt32LE(off + 4);
      if (count === 0 || count > MAX_CHANNEL_VALUES) break;
      const end = off + CHANNEL_HEADER_BYTES + count * 8;
      if (end > b.length) break;
      const payload = b.subarray(off + CHANNEL_HEADER_BYTES, end);
      if (crc32(payload) !== b.readUInt32LE(off + 8)) break;
      channelState = Array.from({ length: count }, (_, i) => payload.readDoubleLE(i * 8));
      off = end;
      continue;
    }
    if (off + SPOOL_RECORD_HEADER_BYTES > b.length) break;
    if (b.readUInt32LE(off) !== MAGIC) break;
    const samples = b.readUInt32LE(off + 12);
    if (samples === 0 || samples > MAX_RECORD_SAMPLES) break;
    const end = off + SPOOL_RECORD_HEADER_BYTES + samples * 2;
    if (end > b.length) break;
    const payload = b.subarray(off + SPOOL_RECORD_HEADER_BYTES, end);
    if (crc32(payload) !== b.readUInt32LE(off + 16)) break;
    records.push({ startSample: b.readBigUInt64LE(off + 4), samples: decodeToPcm16('pcm_s16le_16000', payload) });
    off = end;
  }
  return { records, validBytes: off, channelState };
}

/** The contiguous audio the spool holds from `fromSample` on (the open segment, when
 * `fromSample` is where the last persisted segment ended), or null when there is none.
 * Audio after a discontinuity is not part of the same segment and is left out. */
export function openSegmentAudio(
  records: readonly SpoolRecord[],
  fromSample: bigint,
): { startSample: bigint; samples: Int16Array; endSample: bigint; frames: Int16Array[] } | null {
  const parts: Int16Array[] = [];
  let start: bigint | null = null;
  let pos = 0n;
  for (const r of records) {
    const rEnd = r.startSample + BigInt(r.samples.length);
    if (rEnd <= fromSample) continue;
    if (start === null) {
      start = r.startSample > fromSample ? r.startSample : fromSample;
      pos = start;
    }
    if (r.startSample > pos) break; // a discontinuity: not the same segment
    const skip = Number(pos - r.startSample);
    if (skip >= r.samples.length) continue;
    parts.push(r.samples.subarray(skip));
    pos = rEnd;
  }
  if (start === null || parts.length === 0) return null;
  const total = parts.reduce((n, p) => n + p.length, 0);
  const samples = new Int16Array(total);
  let at = 0;
  for (const p of parts) {
    samples.set(p, at);
    at += p.length;
  }
  // `frames` keeps the original frame boundaries: the recognizer is fed exactly as it was
  // before the crash, so the restored segment decodes to the same words.
  return { startSample: start, samples, endSample: pos, frames: parts };
}

// ------------------------------------------------------------------ files

/** One session's spool file. Opened lazily on the first append. */
export class AudioSpool implements SessionSpool {
  readonly shared = false;
  /** A record is in the kernel when append() returns: durable against a process crash at once. */
  readonly durableEnd = null;
  private fd: number | null = null;
  private timer: NodeJS.Timeout | null = null;
  private syncing = false;
  /** Waiters covered by the next sync that starts. */
  private waiting: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];
  private closed = false;
  /** End (session-wide sample) of the last record appended by this process; null before. */
  private end: bigint | null = null;
  /** Descriptors replaced by keepFrom() while a sync ran on them, closed when it ends. */
  private retired: number[] = [];

  constructor(
    readonly file: string,
    private readonly fsyncMs: number,
    private readonly log?: Logger,
  ) {}

  /** Append one accepted frame's samples (synchronous write: it is in the kernel before
   * this returns, so a process crash cannot lose it). */
  append(startSample: bigint, samples: Int16Array): void {
    if (this.closed) throw new Error(`spool ${this.file} is closed`);
    if (this.fd === null) {
      const created = !fs.existsSync(this.file);
      this.fd = fs.openSync(this.file, 'a', 0o600);
      if (created) fsyncDir(path.dirname(this.file));
    }
    writeWhole(this.fd, encodeSpoolRecord(startSample, samples));
    this.end = startSample + BigInt(samples.length);
  }

  /** Resolves once everything appended so far is synced to disk (immediately when syncing
   * is off or nothing was written). */
  whenDurable(): Promise<void> {
    if (this.fsyncMs < 0 || this.fd === null) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.timer || this.syncing || this.waiting.length === 0) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.sync();
    }, this.fsyncMs);
  }

  private sync(): void {
    const batch = this.waiting.splice(0);
    if (batch.length === 0) return;
    const fd = this.fd;
    if (fd === null) {
      for (const w of batch) w.resolve();
      return;
    }
    this.syncing = true;
    fs.fdatasync(fd, (err) => {
      this.syncing = false;
      for (const old of this.retired.splice(0)) fs.closeSync(old);
      if (err) {
        this.log?.error({ err, file: this.file }, 'spool sync failed');
        for (const w of batch) w.reject(err);
      } else for (const w of batch) w.resolve();
      this.schedule();
    });
  }

  /** Forget all spooled audio: everything in it is in persisted segments (or was dropped).
   * `channelState`, when given, is written as the first record of the emptied spool: the
   * recognizer's state after the last persisted segment, for a restart to continue from. */
  clear(channelState: readonly number[] | null = null): void {
    if (this.fd !== null) fs.ftruncateSync(this.fd, 0);
    else if (fs.existsSync(this.file)) fs.truncateSync(this.file, 0);
    if (channelState !== null && channelState.length > 0 && !this.closed) {
      if (this.fd === null) this.fd = fs.openSync(this.file, 'a', 0o600);
      writeWhole(this.fd, encodeChannelRecord(channelState));
    }
  }

  /**
   * Forget the audio before `fromSample` and keep the rest (vad mode: a commit inside a frame
   * leaves acknowledged audio after it that belongs to what comes next; silence between
   * segments is dropped so the spool stays small). When nothing lies past `fromSample` this
   * is clear(). Otherwise the kept audio is written to a new file, synced, and renamed over
   * the old one, so a crash leaves either the old spool or the new one, never a part.
   */
  keepFrom(fromSample: bigint, channelState: readonly number[] | null = null): void {
    if (this.closed) return;
    if (this.end !== null && fromSample >= this.end) return this.clear(channelState);
    const { records } = fs.existsSync(this.file) ? decodeSpoolRecords(fs.readFileSync(this.file)) : { records: [] };
    if (!records.some((r) => r.startSample + BigInt(r.samples.length) > fromSample)) return this.clear(channelState);
    const parts: Buffer[] = [];
    if (channelState !== null && channelState.length > 0) parts.push(encodeChannelRecord(channelState));
    for (const r of records) {
      const end = r.startSample + BigInt(r.samples.length);
      if (end <= fromSample) continue;
      const skip = r.startSample < fromSample ? Number(fromSample - r.startSample) : 0;
      parts.push(encodeSpoolRecord(r.startSample + BigInt(skip), r.samples.subarray(skip)));
    }
    const tmp = `${this.file}.tmp`;
    const fd = fs.openSync(tmp, 'w', 0o600);
    try {
      writeWhole(fd, Buffer.concat(parts));
      fs.fdatasyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, this.file);
    fsyncDir(path.dirname(this.file));
    // A sync running on the old descriptor finishes on it (it covers what the new file
    // already holds, synced above); the descriptor is closed when that sync ends.
    if (this.fd !== null) {
      if (this.syncing) this.retired.push(this.fd);
      else fs.closeSync(this.fd);
    }
    this.fd = fs.openSync(this.file, 'a', 0o600);
  }

  /** Close the file descriptor while the session is idle; the next append reopens it. */
  release(): void {
    if (this.closed || this.fd === null || this.syncing || this.waiting.length > 0) return;
    fs.closeSync(this.fd);
    this.fd = null;
  }

  /** The session is closed: delete the file. Pending acks still resolve. */
  remove(): void {
    this.close();
    fs.rmSync(this.file, { force: true });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const w of this.waiting.splice(0)) w.resolve();
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
    if (!this.syncing) for (const old of this.retired.splice(0)) fs.closeSync(old);
  }
}

const SAFE_ID = /^[A-Za-z0-9_-]+$/;

/** The spool directory of a data dir. */
export class AudioSpoolDir {
  readonly dir: string;

  constructor(
    dataDir: string,
    readonly fsyncMs = 50,
    private readonly log?: Logger,
  ) {
    this.dir = path.join(dataDir, 'spool');
    fs.mkdirSync(this.dir, { recursive: true, mode: 0o700 });
  }

  fileOf(sessionId: string): string {
    if (!SAFE_ID.test(sessionId)) throw new RangeError(`unsafe session id ${sessionId}`);
    return path.join(this.dir, `${sessionId}.spool`);
  }

  open(sessionId: string): AudioSpool {
    return new AudioSpool(this.fileOf(sessionId), this.fsyncMs, this.log);
  }

  /** Session ids that have a spool file (files of other names are not ours: left alone). */
  list(): string[] {
    return fs
      .readdirSync(this.dir)
      .filter((f) => f.endsWith('.spool'))
      .map((f) => f.slice(0, -'.spool'.length))
      .filter((id) => SAFE_ID.test(id));
  }

  /** Delete the temporary files of keepFrom() rewrites a crash interrupted (the spool they
   * were to replace is still whole). */
  removeLeftovers(): void {
    for (const f of fs.readdirSync(this.dir)) if (f.endsWith('.spool.tmp')) fs.rmSync(path.join(this.dir, f), { force: true });
  }

  /** Read a session's spool, cutting off a torn tail so later appends follow good records. */
  read(sessionId: string): { records: SpoolRecord[]; tornBytes: number; channelState: number[] | null } {
    const file = this.fileOf(sessionId);
    const buf = fs.readFileSync(file);
    const { records, validBytes, channelState } = decodeSpoolRecords(buf);
    if (validBytes < buf.length) fs.truncateSync(file, validBytes);
    return { records, tornBytes: buf.length - validBytes, channelState };
  }

  remove(sessionId: string): void {
    fs.rmSync(this.fileOf(sessionId), { force: true });
  }
}

/** writeSync may write less than asked (a full disk): a record written in part would be
 * acknowledged yet cut off at recovery with everything after it, so the part is taken back
 * and the write fails. */
function writeWhole(fd: number, buf: Buffer): void {
  let written = 0;
  try {
    while (written < buf.length) {
      const n = fs.writeSync(fd, buf, written, buf.length - written);
      if (n <= 0) throw new Error(`short write: ${written} of ${buf.length} bytes`);
      written += n;
    }
  } catch (err) {
    // Only on failure: what was there before is the size now less what this call wrote (no
    // stat per frame on the hot path).
    if (written > 0) fs.ftruncateSync(fd, fs.fstatSync(fd).size - written);
    throw err;
  }
}

function fsyncDir(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
