import { describe, expect, it } from 'vitest';
import { CAPABILITIES, DURATIONS_SEC, quoteCharacters, validateBrief } from '../../src/core/music-brief.js';
import { planArrangement } from '../../src/core/arrangement-plan.js';

const brief = (over: Record<string, unknown> = {}) => ({
  description: 'd',
  genre: 'pop',
  moods: ['happy'],
  vocalLanguage: 'en',
  durationSec: 60,
  lyricsMode: 'AUTO',
  vocalStyle: 'male',
  ...over,
});
const code = (f: () => unknown) => {
  try {
    f();
    return null;
  } catch (e) {
    return (e as { code?: string }).code;
  }
};

describe('brief validation', () => {
  it('accepts every bound exactly, counting code points', () => {
    expect(validateBrief(brief({ description: '😀'.repeat(800) })).description).toHaveLength(1600);
    expect(validateBrief(brief({ description: 'a' })).description).toBe('a');
    expect(validateBrief(brief({ styleNotes: '' })).styleNotes).toBe('');
    expect(validateBrief(brief({ styleNotes: '𝄞'.repeat(120) })).styleNotes).toHaveLength(240);
    expect(validateBrief(brief({ moods: ['happy', 'sad', 'calm'] })).moods).toHaveLength(3);
    expect(validateBrief(brief({ lyricsMode: 'CUSTOM', customLyrics: 'a'.repeat(20) })).customLyrics).toHaveLength(20);
    expect(validateBrief(brief({ lyricsMode: 'CUSTOM', customLyrics: '😀'.repeat(2800) })).customLyrics).toHaveLength(5600);
    for (const d of DURATIONS_SEC) expect(validateBrief(brief({ durationSec: d })).durationSec).toBe(d);
  });

  it('refuses one past every bound with MUSIC_BRIEF_INVALID (47001)', () => {
    for (const b of [
      brief({ description: '😀'.repeat(801) }),
      brief({ description: '' }),
      brief({ description: '   ' }),
      brief({ styleNotes: 'a'.repeat(121) }),
      brief({ moods: [] }),
      brief({ moods: ['happy', 'sad', 'calm', 'dark'] }),
      brief({ moods: ['sad', 'sad'] }),
      brief({ lyricsMode: 'CUSTOM', customLyrics: '😀'.repeat(19) }),
      brief({ lyricsMode: 'CUSTOM', customLyrics: 'a'.repeat(2801) }),
      brief({ durationSec: 150 }),
      brief({ lyricsMode: 'auto' }),
    ]) {
      expect(
        code(() => validateBrief(b)),
        JSON.stringify(b).slice(0, 60),
      ).toBe('MUSIC_BRIEF_INVALID');
    }
  });

  it('prices 10 Characters a second, +20% for custom lyrics', () => {
    expect(quoteCharacters(validateBrief(brief({ durationSec: 90 })))).toBe(900n);
    expect(quoteCharacters(validateBrief(brief({ durationSec: 90, lyricsMode: 'CUSTOM', customLyrics: 'a'.repeat(30) })))).toBe(1080n);
  });
});

describe('arrangement plan', () => {
  it('covers 0..durationSec contiguously for every genre and duration', () => {
    for (const genre of CAPABILITIES.genres) {
      for (const durationSec of DURATIONS_SEC) {
        const plan = planArrangement(validateBrief(brief({ genre, durationSec })));
        expect(plan.sections[0]!.startSec).toBe(0);
        expect(plan.sections.at(-1)!.endSec).toBe(durationSec);
        for (let i = 1; i < plan.sections.length; i++) expect(plan.sections[i]!.startSec).toBe(plan.sections[i - 1]!.endSec);
        for (const s of plan.sections) expect(s.endSec).toBeGreaterThan(s.startSec);
        expect(plan.sections.length).toBeGreaterThanOrEqual(3);
      }
    }
  });

  it('takes tempo from the genre and moods, and marks no vocals for instrumental', () => {
    const calm = planArrangement(validateBrief(brief({ genre: 'electronic', moods: ['calm'] })));
    const energetic = planArrangement(validateBrief(brief({ genre: 'electronic', moods: ['energetic'] })));
    expect(energetic.tempoBpm).toBeGreaterThan(calm.tempoBpm);
    expect(planArrangement(validateBrief(brief({ genre: 'classical' }))).timeSignature).toBe('3/4');
    expect(planArrangement(validateBrief(brief({ vocalStyle: 'instrumental' }))).sections.every((s) => !s.vocals)).toBe(true);
    expect(planArrangement(validateBrief(brief({ moods: ['sad', 'dark'] }))).key).toMatch(/minor/);
  });
});
