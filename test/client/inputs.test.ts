import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { HeadSniffer, ffmpegOutputArgs, openInput, pcmToMulaw } from '../../src/client/inputs.js';
import { decodeMulaw, encodeMulaw } from '../../src/core/audio/encodings.js';
import { pacingDelayMs, splitChunk } from '../../src/client/pacing.js';
import { loadClips } from '../helpers/audio.js';
import { tempDir } from '../helpers/service.js';

const clip = loadClips().find((c) => c.id === 'librivox-0880')!;

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of stream as AsyncIterable<Buffer>) parts.push(c);
  return Buffer.concat(parts);
}

describe('inputs', () => {
  it('decodes a flac file through ffmpeg to the session encoding, nothing lost to a late reader', async () => {
    const file = path.join(tempDir(), 'clip.flac');
    execFileSync('ffmpeg', ['-loglevel', 'error', '-y', '-i', clip.wavFile, file]);
    const input = openInput(file, 'mulaw_8000');
    expect(input.kind).toBe('ffmpeg');
    await new Promise((r) => setTimeout(r, 1000)); // ffmpeg has long exited
    const bytes = await readAll(input.stream);
    await input.done;
    // Lossless source: the same mu-law as sox/ffmpeg gave samples/*.ulaw, within a few samples.
    expect(Math.abs(bytes.length - clip.mulaw8k.length)).toBeLessThan(16);
  });

  it('reads raw files as they are, and fails `done` for files ffmpeg cannot decode', async () => {
    const raw = openInput(clip.ulawFile, 'mulaw_8000');
    expect((await readAll(raw.stream)).equals(clip.mulaw8k)).toBe(true);
    const bad = path.join(tempDir(), 'x.m4a');
    fs.writeFileSync(bad, 'nope');
    const input = openInput(bad, 'pcm_s16le_16000');
    await readAll(input.stream).catch(() => undefined);
    await expect(input.done).rejects.toThrow(/ffmpeg could not decode/);
  });

  it('stop() on a raw input that stays open ends it like an end of input: no error, what was read is kept', async () => {
    // A FIFO with a writer that never closes stands in for a pipe from a live call.
    const fifo = path.join(tempDir(), 'call.raw');
    execFileSync('mkfifo', [fifo]);
    const writer = fs.createWriteStream(fifo);
    const input = openInput(fifo, 'mulaw_8000');
    expect(input.kind).toBe('raw-file');
    const bytes = clip.mulaw8k.subarray(0, 4000);
    const written = new Promise((resolve) => writer.write(bytes, resolve));
    const parts: Buffer[] = [];
    const reading = (async () => {
      for await (const c of input.stream as AsyncIterable<Buffer>) {
        parts.push(c);
        if (Buffer.concat(parts).length === bytes.length) input.stop();
      }
    })();
    await reading; // rejected with ERR_STREAM_PREMATURE_CLOSE when stop() destroys the stream
    await input.done;
    expect(Buffer.concat(parts).equals(bytes)).toBe(true);
    await written;
    writer.on('error', () => undefined).end(); // no reader left: EPIPE is expected
  });

  it('a raw file that is really a WAV in --encoding gives its data chunk only: header and a trailing chunk dropped', async () => {
    const file = path.join(tempDir(), 'call.raw');
    const wav = fs.readFileSync(clip.wavFile);
    fs.writeFileSync(file, Buffer.concat([wav, Buffer.from('LIST\x04\0\0\0abcd')]));
    const input = openInput(file, 'pcm_s16le_16000');
    expect(await input.head).toMatchObject({ action: 'strip-wav', dataOffset: 44 });
    expect((await readAll(input.stream)).equals(clip.pcm16k)).toBe(true);
    // The plain raw clip is passed as it is.
    const raw = openInput(clip.ulawFile, 'mulaw_8000');
    expect(await raw.head).toEqual({ action: 'raw' });
  });

  it('a raw file that is a WAV in another encoding is refused and gives no audio', async () => {
    const file = path.join(tempDir(), 'call.ulaw');
    fs.copyFileSync(clip.wavFile, file);
    const input = openInput(file, 'mulaw_8000');
    const head = await input.head;
    expect(head.action).toBe('refuse');
    if (head.action === 'refuse') expect(head.message).toContain('--encoding pcm_s16le_16000');
    expect((await readAll(input.stream)).length).toBe(0);
  });

  it('HeadSniffer decides across one-byte writes and at the end of a short input', async () => {
    const wav = fs.readFileSync(clip.wavFile).subarray(0, 4000);
    const s = new HeadSniffer('pcm_s16le_16000', 'stdin');
    const out = readAll(s);
    for (let i = 0; i < wav.length; i++) s.write(wav.subarray(i, i + 1));
    s.end();
    expect((await out).equals(wav.subarray(44))).toBe(true);
    const short = new HeadSniffer('mulaw_8000', 'stdin');
    const shortOut = readAll(short);
    short.end(Buffer.from('RI'));
    expect(await short.decision).toEqual({ action: 'raw' });
    expect((await shortOut).toString()).toBe('RI');
  });

  it('asks ffmpeg for the session format', () => {
    expect(ffmpegOutputArgs('mulaw_8000')).toEqual(['-f', 'mulaw', '-ar', '8000', '-ac', '1']);
    expect(ffmpegOutputArgs('pcm_s16le_48000')).toEqual(['-f', 's16le', '-ar', '48000', '-ac', '1']);
  });

  it('converts microphone PCM to mu-law across odd chunk splits', async () => {
    const pcm = Buffer.from(new Int16Array(decodeMulaw(clip.mulaw8k.subarray(0, 999))).buffer);
    const t = pcmToMulaw();
    const out = readAll(t);
    t.write(pcm.subarray(0, 7));
    t.write(pcm.subarray(7, 1001));
    t.end(pcm.subarray(1001));
    expect(Buffer.from(await out).equals(Buffer.from(encodeMulaw(decodeMulaw(clip.mulaw8k.subarray(0, 999)))))).toBe(true);
  });
});

describe('pacing', () => {
  it('releases audio no earlier than its capture time', () => {
    expect(pacingDelayMs(8000, 8000, 0)).toBe(1000);
    expect(pacingDelayMs(8000, 8000, 400)).toBe(600);
    expect(pacingDelayMs(8000, 8000, 1500)).toBe(0);
  });
  it('splits chunks into bounded pieces', () => {
    expect(splitChunk(Buffer.alloc(10), 4).map((b) => b.length)).toEqual([4, 4, 2]);
    expect(splitChunk(Buffer.alloc(3), 4)).toHaveLength(1);
  });
});
