import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { TranscriptFiles } from '../../src/client/transcript-files.js';
import type { FinalSegment } from '../../src/client/session-streamer.js';
import { tempDir } from '../helpers/service.js';

function seg(i: number, text: string): FinalSegment {
  return {
    segmentId: `seg_${i}`,
    text,
    startSample: String(i * 8000),
    endSample: String((i + 1) * 8000),
    startMs: i * 1000,
    endMs: (i + 1) * 1000,
    words: [],
  };
}

describe('TranscriptFiles', () => {
  it('appends finals as they arrive, once each, and skips empty text in .txt', () => {
    const dir = tempDir();
    const files = new TranscriptFiles(dir, 'rts_abc');
    files.append(seg(0, 'hello there'));
    files.append(seg(0, 'hello there'));
    files.append(seg(1, '  '));
    files.append(seg(2, 'second\nline'));
    const lines = fs
      .readFileSync(files.jsonlPath, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.segmentId)).toEqual(['seg_0', 'seg_1', 'seg_2']);
    expect(fs.readFileSync(files.txtPath, 'utf8')).toBe('hello there\nsecond line\n');
  });

  it('rewrites both files on close from the complete list, in order, leaving no temp files', () => {
    const dir = tempDir();
    const files = new TranscriptFiles(dir, 'rts_abc');
    files.append(seg(2, 'two'));
    files.close([seg(0, 'zero'), seg(1, 'one'), seg(2, 'two'), seg(10, 'ten')]);
    expect(fs.readFileSync(path.join(dir, 'rts_abc.txt'), 'utf8')).toBe('zero\none\ntwo\nten\n');
    expect(fs.readFileSync(path.join(dir, 'rts_abc.jsonl'), 'utf8').trim().split('\n')).toHaveLength(4);
    expect(fs.readdirSync(dir).sort()).toEqual(['rts_abc.jsonl', 'rts_abc.txt']);
  });

  it('a restarted writer keeps what an earlier run wrote, ignoring a torn last line', () => {
    const dir = tempDir();
    const a = new TranscriptFiles(dir, 'rts_x');
    a.append(seg(0, 'kept'));
    fs.appendFileSync(a.jsonlPath, '{"segmentId":"seg_1","te');
    const b = new TranscriptFiles(dir, 'rts_x');
    b.close([seg(1, 'from server')]);
    expect(fs.readFileSync(b.txtPath, 'utf8')).toBe('kept\nfrom server\n');
  });

  it('refuses a session id that is not a safe file name', () => {
    expect(() => new TranscriptFiles(tempDir(), '../etc/passwd')).toThrow(RangeError);
  });
});
