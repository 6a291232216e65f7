import { describe, expect, it } from 'vitest';
import { chooseFileEncoding, encodingForFile } from '../../../src/core/audio/file-encoding.js';

const call8k = { sampleRateHz: 8000, channels: 2, codec: 'pcm_s16le' };

describe('the encoding a file streams in', () => {
  it('is read from the file when --encoding is left out: its rate, its G.711 law, its channels', () => {
    expect(chooseFileEncoding('call.wav', call8k, undefined, undefined, false)).toEqual({ encoding: 'pcm_s16le_8000', channels: 2 });
    expect(chooseFileEncoding('a.wav', { sampleRateHz: 8000, channels: 1, codec: 'pcm_mulaw' }, undefined, undefined, false)).toEqual({
      encoding: 'mulaw_8000',
      channels: 1,
    });
    expect(chooseFileEncoding('a.wav', { sampleRateHz: 8000, channels: 2, codec: 'pcm_mulaw' }, undefined, undefined, false)).toEqual({
      encoding: 'pcm_s16le_8000',
      channels: 2,
    });
    expect(chooseFileEncoding('a.mp3', { sampleRateHz: 44100, channels: 2, codec: 'mp3' }, undefined, 1, false)).toEqual({
      encoding: 'pcm_s16le_44100',
      channels: 1,
    });
    expect(encodingForFile({ sampleRateHz: 11025, channels: 1, codec: 'flac' })).toBe('pcm_s16le_8000');
    expect(encodingForFile({ sampleRateHz: 32000, channels: 1, codec: 'flac' })).toBe('pcm_s16le_24000');
  });

  it('refuses an --encoding that would upsample the file, naming the right one and the way to force it', () => {
    const r = chooseFileEncoding('call.wav', call8k, 'pcm_s16le_16000', 2, false);
    expect(r).toEqual({
      refuse: expect.stringContaining('call.wav is 8000 Hz audio: --encoding pcm_s16le_16000 (16000 Hz) would upsample it'),
    });
    expect((r as { refuse: string }).refuse).toContain('Run with --encoding pcm_s16le_8000');
    expect((r as { refuse: string }).refuse).toContain('--force-encoding');
    expect(chooseFileEncoding('call.wav', call8k, 'pcm_s16le_16000', 2, true)).toEqual({ encoding: 'pcm_s16le_16000', channels: 2 });
  });

  it('takes a downsampling --encoding as asked, and keeps --channels 1 by default when --encoding is given', () => {
    expect(chooseFileEncoding('a.wav', { sampleRateHz: 16000, channels: 2, codec: 'pcm_s16le' }, 'mulaw_8000', undefined, false)).toEqual({
      encoding: 'mulaw_8000',
      channels: 1,
    });
    expect(
      chooseFileEncoding('a.wav', { sampleRateHz: 48000, channels: 1, codec: 'pcm_s16le' }, 'pcm_s16le_16000', undefined, false),
    ).toEqual({ encoding: 'pcm_s16le_16000', channels: 1 });
  });
});
