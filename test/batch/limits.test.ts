import { describe, expect, it } from 'vitest';
import { audioAllowance, decodeCap, refuseDecoded, refuseStatedDuration } from '../../src/batch/limits.js';

const text = (e: { message: string } | null) => (e === null ? null : e.message.replace(': ', ' '));

describe('audioAllowance and decodeCap', () => {
  it('is the smaller of the balance (1 Character per second) and the server maximum', () => {
    expect(audioAllowance(100n, 14_400).seconds).toBe(100);
    expect(audioAllowance(10n ** 15n, 14_400).seconds).toBe(14_400);
    expect(audioAllowance(0n, 14_400).seconds).toBe(0);
    expect(audioAllowance(-5n, 14_400).seconds).toBe(0);
    expect(() => audioAllowance(1n, 0)).toThrow(RangeError);
  });

  it('caps the decode one second past the allowance, in samples and s16le bytes', () => {
    expect(decodeCap(audioAllowance(100n, 14_400), 8000)).toEqual({ seconds: 101, samples: 808_000, bytes: 1_616_000 });
    // An hour of 8 kHz audio against a 100-Character balance: at most 1.6 MB is written, not 57.6 MB.
    expect(decodeCap(audioAllowance(0n, 14_400), 16_000)).toEqual({ seconds: 1, samples: 16_000, bytes: 32_000 });
  });
});

describe('refuseStatedDuration', () => {
  const a = audioAllowance(100n, 600);
  it('lets a file within the allowance, or one that states no duration, go on to the capped decode', () => {
    expect(refuseStatedDuration(99.5, a)).toBeNull();
    expect(refuseStatedDuration(100, a)).toBeNull();
    expect(refuseStatedDuration(null, a)).toBeNull();
  });
  it('refuses over the balance with 402 and the cost, over the server maximum with 413', () => {
    expect(text(refuseStatedDuration(100.2, a))).toBe(
      'INSUFFICIENT_CHARACTERS transcribing this file costs 101 Characters, more than the balance',
    );
    expect(text(refuseStatedDuration(3600, a))).toBe(
      "PAYLOAD_TOO_LARGE the audio is 3600.0 s long, over this server's limit of 600 s per file",
    );
    // the server limit also binds when the balance is larger
    expect(text(refuseStatedDuration(601, audioAllowance(10_000n, 600)))).toMatch(/^PAYLOAD_TOO_LARGE/);
  });
});

describe('refuseDecoded', () => {
  it('accepts audio within the allowance', () => {
    expect(refuseDecoded(800_000n, 8000, audioAllowance(100n, 600))).toBeNull();
  });
  it('gives the exact cost when the whole file was decoded', () => {
    expect(text(refuseDecoded(800_001n, 8000, audioAllowance(100n, 600)))).toBe(
      'INSUFFICIENT_CHARACTERS transcribing this file costs 101 Characters, more than the balance',
    );
    expect(text(refuseDecoded(600n * 8000n + 1n, 8000, audioAllowance(10_000n, 600)))).toBe(
      "PAYLOAD_TOO_LARGE the audio is 600.0 s long, over this server's limit of 600 s per file",
    );
  });
  it('says only "more than" when the decode reached its cap (the real length is unknown)', () => {
    const balance = audioAllowance(100n, 600);
    expect(text(refuseDecoded(BigInt(decodeCap(balance, 8000).samples), 8000, balance))).toBe(
      'INSUFFICIENT_CHARACTERS transcribing this file costs more than the balance of 100 Characters',
    );
    const server = audioAllowance(10_000n, 600);
    expect(text(refuseDecoded(BigInt(decodeCap(server, 16_000).samples), 16_000, server))).toBe(
      "PAYLOAD_TOO_LARGE the audio is longer than this server's limit of 600 s per file",
    );
  });
});

describe('a multichannel upload', () => {
  it('buys 1/legs of the seconds and names the whole cost', () => {
    const a = audioAllowance(100n, 14_400, 2);
    expect(a.seconds).toBe(50);
    expect(audioAllowance(10n ** 15n, 600, 2).seconds).toBe(600);
    expect(() => audioAllowance(1n, 10, 0)).toThrow(RangeError);
    expect(refuseStatedDuration(60.2, a)?.message).toContain('costs 122 Characters');
    expect(refuseDecoded(BigInt(50.4 * 16_000), 16_000, a)?.message).toContain('costs 102 Characters');
  });
});
