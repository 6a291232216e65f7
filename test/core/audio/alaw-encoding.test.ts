// alaw_8000 as a session input encoding: a G.711 A-law stream made by ffmpeg from real speech
// (`-c:a pcm_alaw`) decodes to exactly the samples ffmpeg's own A-law decoder gives, through
// both of the session's decoders (a whole payload, and a frame's samples into the frame).
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { decodePcm16Into, decodeToPcm16, INPUT_ENCODINGS, isInputEncodingName, silenceByteOf } from '../../../src/core/audio/encodings.js';
import { loadClips } from '../../helpers/audio.js';
import { rawAlaw } from '../../helpers/speech-fixtures.js';

describe('alaw_8000', () => {
  it('is a native input encoding: 8 kHz telephony, one byte a sample, silence 0xd5', () => {
    expect(isInputEncodingName('alaw_8000')).toBe(true);
    expect(INPUT_ENCODINGS.alaw_8000).toMatchObject({ sampleRateHz: 8000, bytesPerSample: 1, profile: 'telephony' });
    expect(silenceByteOf('alaw_8000')).toBe(0xd5);
    expect(Math.abs(decodeToPcm16('alaw_8000', Uint8Array.of(0xd5))[0]!)).toBeLessThanOrEqual(8);
  });

  it("decodes ffmpeg's A-law of real speech exactly as ffmpeg does, unlike mu-law's table", () => {
    const clip = loadClips().find((c) => c.id === 'librivox-0920')!;
    const alaw = rawAlaw(clip.wavFile);
    const byFfmpeg = decodeToPcm16(
      'pcm_s16le_8000',
      execFileSync('ffmpeg', ['-v', 'error', '-f', 'alaw', '-ar', '8000', '-ac', '1', '-i', '-', '-f', 's16le', '-'], {
        input: alaw,
        maxBuffer: 16 * 1024 * 1024,
      }),
    );
    const whole = decodeToPcm16('alaw_8000', alaw);
    expect(whole.length).toBe(byFfmpeg.length);
    expect(Buffer.from(whole.buffer).equals(Buffer.from(byFfmpeg.buffer))).toBe(true);
    const into = new Int16Array(alaw.length + 3);
    decodePcm16Into('alaw_8000', alaw, 0, alaw.length, into, 3);
    expect(Buffer.from(into.subarray(3).slice().buffer).equals(Buffer.from(byFfmpeg.buffer))).toBe(true);
    // Read with the mu-law table the same bytes are other samples.
    expect(Buffer.from(decodeToPcm16('mulaw_8000', alaw).buffer).equals(Buffer.from(byFfmpeg.buffer))).toBe(false);
  });
});
