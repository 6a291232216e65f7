// Transcripts on disk for `--out DIR`: `<sessionId>.jsonl` (one final segment a line,
// session-wide times) and `<sessionId>.txt` (one line a non-empty segment).
//
// While streaming, each final is appended to both files and fsynced before the next, so a
// crash keeps every final already printed. On close the two files are rewritten from the
// complete list (the server's transcript when the client could fetch it: finals sent while a
// socket was down are only there) through a temporary file and a rename, so a reader never
// sees a half-written transcript.
import fs from 'node:fs';
import path from 'node:path';
import type { FinalSegment } from './session-streamer.js';

export class TranscriptFiles {
  readonly jsonlPath: string;
  readonly txtPath: string;
  private jsonlFd: number | null = null;
  private txtFd: number | null = null;
  private readonly seen = new Map<string, FinalSegment>();

  constructor(
    readonly dir: string,
    readonly sessionId: string,
  ) {
    if (!/^[A-Za-z0-9_-]+$/.test(sessionId)) throw new RangeError(`unsafe session id for a file name: ${sessionId}`);
    fs.mkdirSync(dir, { recursive: true });
    this.jsonlPath = path.join(dir, `${sessionId}.jsonl`);
    this.txtPath = path.join(dir, `${sessionId}.txt`);
    // A restarted client re-attached to the same session keeps what the earlier run wrote.
    for (const seg of readJsonl(this.jsonlPath)) this.seen.set(seg.segmentId, seg);
  }

  /** Append one final (ignored if this segment id was already written), fsynced. */
  append(seg: FinalSegment): void {
    if (this.seen.has(seg.segmentId)) return;
    this.seen.set(seg.segmentId, seg);
    this.jsonlFd ??= fs.openSync(this.jsonlPath, 'a', 0o640);
    this.txtFd ??= fs.openSync(this.txtPath, 'a', 0o640);
    fs.writeSync(this.jsonlFd, `${JSON.stringify(seg)}\n`);
    fs.fsyncSync(this.jsonlFd);
    const line = oneLine(seg.text);
    if (line !== '') {
      fs.writeSync(this.txtFd, `${line}\n`);
      fs.fsyncSync(this.txtFd);
    }
  }

  /** Rewrite both files atomically from `complete` (plus anything appended that it lacks),
   * in segment order. */
  close(complete: readonly FinalSegment[] = []): void {
    for (const fd of [this.jsonlFd, this.txtFd]) if (fd !== null) fs.closeSync(fd);
    this.jsonlFd = this.txtFd = null;
    for (const seg of complete) this.seen.set(seg.segmentId, seg);
    const segs = [...this.seen.values()].sort((a, b) => segmentIndex(a.segmentId) - segmentIndex(b.segmentId));
    writeAtomic(this.jsonlPath, segs.map((s) => `${JSON.stringify(s)}\n`).join(''));
    writeAtomic(
      this.txtPath,
      segs
        .map((s) => oneLine(s.text))
        .filter((t) => t !== '')
        .map((t) => `${t}\n`)
        .join(''),
    );
  }
}

function segmentIndex(id: string): number {
  const m = /(\d+)$/.exec(id);
  return m ? Number(m[1]) : Number.MAX_SAFE_INTEGER;
}

function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}

function readJsonl(file: string): FinalSegment[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const out: FinalSegment[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      out.push(JSON.parse(line) as FinalSegment);
    } catch {
      // A torn last line from a crash mid-append: the segment comes back from the server.
    }
  }
  return out;
}

/** Write `file` through a temporary sibling, fsync, rename, fsync the directory. */
export function writeAtomic(file: string, content: string): void {
  const tmp = `${file}.tmp-${process.pid}`;
  const fd = fs.openSync(tmp, 'w', 0o640);
  try {
    fs.writeSync(fd, content);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
  const dirFd = fs.openSync(path.dirname(file), 'r');
  try {
    fs.fsyncSync(dirFd);
  } finally {
    fs.closeSync(dirFd);
  }
}
