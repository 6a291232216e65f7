// The raw-input checks of scribed stream, on real files: the sample clips as they are and
// read with the wrong encoding, and containers made here with ffmpeg and sox.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FirstSecondsCheck, audioStats, decideHead, judgeAudio, sniffAudioHead, type SniffResult } from '../../../src/core/audio/sniff.js';
import { encodePcm16le } from '../../../src/core/audio/encodings.js';
import { devSetDir, loadClips } from '../../helpers/audio.js';
import { tempDir } from '../../helpers/service.js';

const clips = loadClips();
const devClips = loadClips(devSetDir());
const clip = clips.find((c) => c.id === 'librivox-0890')!;

/** Sniff as a stream would: feed growing heads until decided. */
function sniffStreaming(bytes: Buffer, step = 7): SniffResult {
  for (let n = step; ; n += step) {
    const r = sniffAudioHead(bytes.subarray(0, n), n >= bytes.length);
    if (r.kind !== 'need-more') return r;
  }
}

function made(ext: string, args: string[] = []): Buffer {
  const file = path.join(tempDir(), `clip.${ext}`);
  execFileSync('ffmpeg', ['-loglevel', 'error', '-y', '-i', clip.wavFile, ...args, file]);
  return fs.readFileSync(file);
}

describe('sniffAudioHead', () => {
  it('reads the sample WAVs: 16 kHz mono PCM, data right after a 44-byte header, its size', () => {
    for (const c of [...clips, ...devClips]) {
      const file = fs.readFileSync(c.wavFile);
      const r = sniffStreaming(file);
      expect(r).toMatchObject({ kind: 'wav', format: { sampleFormat: 'pcm', channels: 1, sampleRateHz: 16000, bitsPerSample: 16 } });
      if (r.kind !== 'wav') throw new Error('not wav');
      expect(file.subarray(r.dataOffset, r.dataOffset + r.dataBytes!).equals(c.pcm16k)).toBe(true);
    }
  });

  it('takes raw audio as raw at once: the .ulaw clips and PCM data, from their first bytes', () => {
    for (const c of [...clips, ...devClips]) {
      expect(sniffAudioHead(c.mulaw8k.subarray(0, 16), false).kind).toBe('raw');
      expect(sniffAudioHead(c.pcm16k.subarray(0, 16), false).kind).toBe('raw');
    }
    // Mu-law silence (0xFF) and PCM -1 look like a frame sync but are not one.
    expect(sniffAudioHead(Buffer.alloc(4096, 0xff), false).kind).toBe('raw');
    expect(sniffAudioHead(Buffer.alloc(0), true).kind).toBe('raw');
  });

  it('finds the data chunk after other chunks (LIST from ffmpeg, a large one), and stops at its size', () => {
    const withList = made('wav', ['-metadata', 'title=a call', '-ar', '8000', '-c:a', 'pcm_mulaw']);
    const r = sniffStreaming(withList, 13);
    expect(r).toMatchObject({ kind: 'wav', format: { sampleFormat: 'mulaw', sampleRateHz: 8000, bitsPerSample: 8, channels: 1 } });
    if (r.kind !== 'wav') throw new Error('not wav');
    expect(r.dataOffset).toBeGreaterThan(44); // the LIST chunk came first
    expect(Math.abs(r.dataBytes! - clip.mulaw8k.length)).toBeLessThan(16);
    // A hand-made file: fmt, a 3001-byte (odd, padded) chunk, data of 10 bytes, then a trailing chunk.
    const fmt = Buffer.alloc(24);
    fmt.write('fmt ', 0);
    fmt.writeUInt32LE(16, 4);
    fmt.writeUInt16LE(1, 8);
    fmt.writeUInt16LE(1, 10);
    fmt.writeUInt32LE(8000, 12);
    fmt.writeUInt32LE(16000, 16);
    fmt.writeUInt16LE(2, 20);
    fmt.writeUInt16LE(16, 22);
    const junk = Buffer.concat([Buffer.from('junk'), Buffer.from([0xb9, 0x0b, 0, 0]), Buffer.alloc(3002)]);
    const data = Buffer.concat([Buffer.from('data'), Buffer.from([10, 0, 0, 0]), Buffer.alloc(10, 1)]);
    const file = Buffer.concat([Buffer.from('RIFF\0\0\0\0WAVE'), fmt, junk, data, Buffer.from('LIST\x04\0\0\0abcd')]);
    const hand = sniffStreaming(file, 100);
    expect(hand).toMatchObject({ kind: 'wav', dataOffset: 12 + 24 + 3010 + 8, dataBytes: 10, format: { sampleRateHz: 8000 } });
  });

  it('reads a WAV written to a pipe (sizes never filled in) to the end of the input', () => {
    const piped = execFileSync('sox', [clip.wavFile, '-t', 'wav', '-r', '8000', '-e', 'mu-law', '-b', '8', '-']);
    const r = sniffStreaming(piped);
    expect(r).toMatchObject({ kind: 'wav', format: { sampleFormat: 'mulaw' } });
    const ff = execFileSync('ffmpeg', ['-loglevel', 'error', '-i', clip.wavFile, '-f', 'wav', 'pipe:1']);
    const f = sniffStreaming(ff);
    expect(f).toMatchObject({ kind: 'wav', dataBytes: null });
  });

  it('names other containers made by ffmpeg: mp3 (with and without ID3), ogg, flac, m4a, aac, aiff, webm', () => {
    const cases: Array<[string, string[], RegExp]> = [
      ['mp3', [], /MP3/],
      ['mp3', ['-write_id3v2', '0', '-id3v2_version', '0'], /MP3/],
      ['ogg', ['-c:a', 'libvorbis'], /Ogg/],
      ['opus', [], /Ogg/],
      ['flac', [], /FLAC/],
      ['m4a', [], /MP4/],
      ['aac', [], /AAC/],
      ['aiff', [], /AIFF/],
      ['webm', [], /WebM/],
      ['caf', [], /CAF/],
    ];
    for (const [ext, args, name] of cases) {
      let bytes: Buffer;
      try {
        bytes = made(ext, args);
      } catch {
        if (ext === 'ogg') continue; // Debian's ffmpeg has libvorbis, but do not fail on a build without it
        throw new Error(`ffmpeg could not write .${ext}`);
      }
      const r = sniffStreaming(bytes, 5);
      expect(r.kind, `${ext} ${args.join(' ')}`).toBe('container');
      if (r.kind === 'container') expect(r.name, ext).toMatch(name);
    }
  });
});

describe('decideHead', () => {
  const wav16k = sniffStreaming(fs.readFileSync(clip.wavFile)) as Exclude<SniffResult, { kind: 'need-more' }>;

  it('strips a WAV in the declared encoding', () => {
    expect(decideHead(wav16k, 'pcm_s16le_16000', 'stdin')).toMatchObject({
      action: 'strip-wav',
      dataOffset: 44,
      dataBytes: clip.pcm16k.length,
    });
  });

  it('refuses a WAV in another session encoding, naming the right --encoding', () => {
    const d = decideHead(wav16k, 'mulaw_8000', 'stdin');
    expect(d.action).toBe('refuse');
    if (d.action === 'refuse') {
      expect(d.message).toContain('stdin is a WAV file of 16-bit PCM, mono, 16000 Hz, not mulaw_8000');
      expect(d.message).toContain('--encoding pcm_s16le_16000');
    }
  });

  it('refuses a WAV in no session encoding and other containers with the ffmpeg command that decodes them', () => {
    const stereo = execFileSync('sox', [clip.wavFile, '-t', 'wav', '-c', '2', '-r', '44100', '-']);
    const d = decideHead(sniffStreaming(stereo) as Exclude<SniffResult, { kind: 'need-more' }>, 'pcm_s16le_16000', 'stdin');
    expect(d).toMatchObject({ action: 'refuse' });
    if (d.action === 'refuse') {
      expect(d.message).toContain('16-bit PCM, 2 channels, 44100 Hz, which is not a session encoding');
      expect(d.message).toContain(
        'ffmpeg -loglevel error -i pipe:0 -f s16le -ar 16000 -ac 1 pipe:1 | scribed stream --input - --encoding pcm_s16le_16000',
      );
    }
    const mp3 = decideHead({ kind: 'container', name: 'an MP3 (MPEG audio) stream' }, 'mulaw_8000', '/calls/a.raw');
    expect(mp3).toMatchObject({ action: 'refuse' });
    if (mp3.action === 'refuse') {
      expect(mp3.message).toContain('/calls/a.raw holds an MP3 (MPEG audio) stream, not raw mulaw_8000 audio');
      expect(mp3.message).toContain('ffmpeg -loglevel error -i /calls/a.raw -f mulaw -ar 8000 -ac 1 OUT.raw');
    }
    expect(decideHead({ kind: 'raw' }, 'mulaw_8000', 'stdin')).toEqual({ action: 'raw' });
  });
});

describe('judgeAudio', () => {
  it('the clips read right are sound: no warning', () => {
    for (const c of [...clips, ...devClips]) {
      expect(judgeAudio(c.mulaw8k.subarray(0, 24000), 'mulaw_8000'), c.id).toBeNull();
      expect(judgeAudio(c.pcm16k.subarray(0, 96000), 'pcm_s16le_16000'), c.id).toBeNull();
    }
  });

  it('mu-law read as PCM names mulaw_8000; PCM read as mu-law names 16-bit PCM', () => {
    for (const c of [...clips, ...devClips]) {
      const asPcm = judgeAudio(c.mulaw8k.subarray(0, 24000), 'pcm_s16le_8000');
      expect(asPcm, c.id).toMatchObject({ kind: 'wrong-encoding', likely: 'mulaw_8000' });
      expect(asPcm!.message).toContain('--encoding mulaw_8000');
      expect(judgeAudio(c.mulaw8k.subarray(0, 24000), 'pcm_s16le_16000'), c.id).toMatchObject({
        kind: 'wrong-encoding',
        likely: 'mulaw_8000',
      });
      const asMulaw = judgeAudio(c.pcm16k.subarray(0, 24000), 'mulaw_8000');
      expect(asMulaw, c.id).toMatchObject({ kind: 'wrong-encoding', likely: 'pcm_s16le_8000' });
      expect(asMulaw!.message).toContain('pcm_s16le_RATE');
    }
  });

  it('says when the audio is silence or all clipping', () => {
    expect(judgeAudio(Buffer.alloc(16000, 0xff), 'mulaw_8000')).toMatchObject({ kind: 'silence' });
    expect(judgeAudio(Buffer.alloc(32000, 0), 'pcm_s16le_16000')).toMatchObject({ kind: 'silence' });
    const square = new Int16Array(16000).map((_, i) => (i % 40 < 20 ? 32767 : -32768));
    expect(judgeAudio(encodePcm16le(square), 'pcm_s16le_16000')).toMatchObject({ kind: 'clipping' });
  });

  it('audioStats figures', () => {
    expect(audioStats(new Int16Array(0))).toMatchObject({ samples: 0, rmsDbfs: -Infinity });
    const s = audioStats(new Int16Array([16384, 16384, -16384, -16384]));
    expect(s.rmsDbfs).toBeCloseTo(-6.02, 1);
    expect(s.loudShare).toBe(1);
    expect(s.clippedShare).toBe(0);
  });
});

describe('FirstSecondsCheck', () => {
  it('judges once when the window fills, across chunks; finish() judges a short input', () => {
    const check = new FirstSecondsCheck('pcm_s16le_8000', 1);
    const results = [];
    for (let off = 0; off < 40000; off += 999) results.push(check.add(clip.mulaw8k.subarray(off, off + 999)));
    const given = results.filter((r) => r !== undefined);
    expect(given).toHaveLength(1);
    expect(given[0]).toMatchObject({ kind: 'wrong-encoding', likely: 'mulaw_8000' });
    expect(check.finish()).toBeUndefined();
    const short = new FirstSecondsCheck('mulaw_8000', 3);
    expect(short.add(clip.mulaw8k.subarray(0, 4000))).toBeUndefined();
    expect(short.finish()).toBeNull();
    const tiny = new FirstSecondsCheck('mulaw_8000', 3);
    tiny.add(Buffer.alloc(100, 0xff));
    expect(tiny.finish()).toBeUndefined();
  });
});
