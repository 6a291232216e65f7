import { describe, expect, it } from 'vitest';
import { characterTimes } from '../../src/core/alignment.js';

describe('characterTimes', () => {
  it('shares each word span among its letters; spaces span the gap between words', () => {
    const chars = characterTimes([
      { word: 'he', startSample: 100n, endSample: 300n },
      { word: 'was', startSample: 400n, endSample: 700n },
    ]);
    expect(chars.map((c) => c.char).join('')).toBe('he was');
    expect(chars).toEqual([
      { char: 'h', startSample: 100n, endSample: 200n },
      { char: 'e', startSample: 200n, endSample: 300n },
      { char: ' ', startSample: 300n, endSample: 400n },
      { char: 'w', startSample: 400n, endSample: 500n },
      { char: 'a', startSample: 500n, endSample: 600n },
      { char: 's', startSample: 600n, endSample: 700n },
    ]);
  });

  it('keeps every character inside its word and in order, even for uneven spans', () => {
    const chars = characterTimes([
      { word: 'amiable', startSample: 1000n, endSample: 1010n },
      { word: 'x', startSample: 1010n, endSample: 1011n },
    ]);
    for (let i = 1; i < chars.length; i++) expect(chars[i]!.startSample).toBeGreaterThanOrEqual(chars[i - 1]!.endSample);
    expect(chars[0]!.startSample).toBe(1000n);
    expect(chars[6]!.endSample).toBe(1010n);
    expect(chars[7]).toEqual({ char: ' ', startSample: 1010n, endSample: 1010n });
  });
});
