// ffprobe classification: real files through probeAudio, and the pure rules.
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { classifyProbe, probeAudio } from '../../src/media/probe.js';
import { makeM4a, makeMp3, makeMp4Video, makeWav } from '../helpers/audio-files.js';
import { tempDir } from '../helpers/service.js';

const dir = tempDir('scribed-probe-');
const put = (data: Buffer) => {
  const p = path.join(dir, `f${Math.random().toString(36).slice(2)}`); // no extension: content only
  fs.writeFileSync(p, data);
  return p;
};

describe('probeAudio', () => {
  it('recognises wav, mp3 and m4a by content', async () => {
    expect(await probeAudio(put(makeWav()))).toBe('wav');
    expect(await probeAudio(put(makeMp3()))).toBe('mp3');
    expect(await probeAudio(put(makeM4a()))).toBe('m4a');
  });
  it('refuses text, video and a truncated header', async () => {
    expect(await probeAudio(put(Buffer.from('hello '.repeat(100))))).toBeNull();
    expect(await probeAudio(put(makeMp4Video()))).toBeNull();
    expect(await probeAudio(put(makeWav().subarray(0, 20)))).toBeNull();
  });
});

describe('probeAudio sandbox', () => {
  it('never opens a file an upload names: a playlist pointing at a local path is refused at once', async () => {
    // The named path is a FIFO: any open() of it blocks until the probe's time limit, so a
    // probe that follows the playlist is seen by how long it takes.
    const fifo = path.join(dir, 'secret.wav');
    execFileSync('mkfifo', [fifo]);
    const playlist = `#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\n${fifo}\n#EXT-X-ENDLIST\n`;
    const t0 = performance.now();
    expect(await probeAudio(put(Buffer.from(playlist)), 8000)).toBeNull();
    expect(performance.now() - t0).toBeLessThan(4000);
  }, 20_000);
});

describe('classifyProbe', () => {
  it('needs an audio stream, no video and a positive duration', () => {
    expect(
      classifyProbe({ format: { format_name: 'wav', duration: '1.0' }, streams: [{ codec_type: 'audio', codec_name: 'pcm_s16le' }] }),
    ).toBe('wav');
    expect(classifyProbe({ format: { format_name: 'wav', duration: '0' }, streams: [{ codec_type: 'audio' }] })).toBeNull();
    expect(
      classifyProbe({ format: { format_name: 'ogg', duration: '1' }, streams: [{ codec_type: 'audio', codec_name: 'vorbis' }] }),
    ).toBeNull();
    expect(
      classifyProbe({
        format: { format_name: 'mov,mp4,m4a,3gp,3g2,mj2', duration: '1' },
        streams: [{ codec_type: 'audio', codec_name: 'aac' }],
      }),
    ).toBe('m4a');
  });
});
