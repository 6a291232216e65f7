import { describe, expect, it } from 'vitest';
import { describeToEspeak } from '../../src/core/voice-description.js';

describe('describeToEspeak', () => {
  it('uses defaults for a description that says nothing about the voice', () => {
    expect(describeToEspeak('for my podcast')).toMatchObject({
      voice: 'en-us+m3',
      pitch: 45,
      speed: 165,
      amplitude: 100,
      wordGap: 0,
      matched: [],
    });
  });
  it('picks accent and gender variant from the words', () => {
    expect(describeToEspeak('A warm British woman').voice).toBe('en-gb+f3');
    expect(describeToEspeak('an elderly Scottish man').voice).toBe('en-gb-scotland+m7');
  });
  it('moves pitch, speed and loudness in the described direction', () => {
    const deep = describeToEspeak('deep slow male voice');
    const bright = describeToEspeak('high fast female voice');
    expect(deep.pitch).toBeLessThan(bright.pitch);
    expect(deep.speed).toBeLessThan(bright.speed);
    expect(describeToEspeak('soft whisper').amplitude).toBeLessThan(describeToEspeak('loud booming').amplitude);
  });
  it('keeps every value within espeak-ng ranges', () => {
    const p = describeToEspeak('deep low bass old elderly slow calm soft quiet dramatic');
    expect(p.pitch).toBeGreaterThanOrEqual(0);
    expect(p.speed).toBeGreaterThanOrEqual(80);
    expect(p.amplitude).toBeGreaterThanOrEqual(0);
  });
});
