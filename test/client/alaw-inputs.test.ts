// `scribed stream --encoding alaw_8000`'s input side: ffmpeg is asked for A-law, and the
// microphone's PCM is converted to A-law (not passed on as if it were), across odd chunk splits.
import { describe, expect, it } from 'vitest';
import { decodeAlaw, decodeToPcm16, encodeAlaw } from '../../src/core/audio/encodings.js';
import { ffmpegOutputArgs, pcmToG711 } from '../../src/client/inputs.js';
import { loadClips } from '../helpers/audio.js';

describe('alaw_8000 inputs', () => {
  it('asks ffmpeg for A-law', () => {
    expect(ffmpegOutputArgs('alaw_8000')).toEqual(['-f', 'alaw', '-ar', '8000', '-ac', '1']);
    expect(ffmpegOutputArgs('alaw_8000', 2)).toEqual(['-f', 'alaw', '-ar', '8000', '-ac', '2']);
  });

  it('converts microphone PCM to A-law across odd chunk splits', async () => {
    const clip = loadClips()[0]!;
    const samples = decodeToPcm16('pcm_s16le_16000', clip.pcm16k.subarray(0, 2000));
    const pcm = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
    const t = pcmToG711('alaw_8000');
    const parts: Buffer[] = [];
    t.on('data', (b: Buffer) => parts.push(b));
    const ended = new Promise((resolve) => t.on('end', resolve));
    t.write(pcm.subarray(0, 7));
    t.write(pcm.subarray(7, 1001));
    t.end(pcm.subarray(1001));
    await ended;
    const out = Buffer.concat(parts);
    expect(out.equals(Buffer.from(encodeAlaw(samples)))).toBe(true);
    // A-law of speech decodes back close to it (G.711's quantization), unlike PCM passed on.
    const back = decodeAlaw(out);
    const worst = back.reduce((m, v, i) => Math.max(m, Math.abs(v - samples[i]!)), 0);
    expect(worst).toBeLessThan(1100);
  });
});
