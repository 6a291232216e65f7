import { describe, expect, it } from 'vitest';
import { optionsNotYetApplied, sessionNotices } from '../../src/core/session-notices.js';

const codes = (options: Record<string, unknown>, vocabulary: { unknown: string[] } | null = { unknown: [] }) =>
  sessionNotices(options, vocabulary).map((n) => n.code);

describe('sessionNotices', () => {
  it('says nothing for options it applies', () => {
    expect(codes({ segmentCommitMode: 'vad', commitSilenceMs: 500, vocabularyHints: ['scribed'] })).toEqual([]);
  });

  it('names each option it cannot apply, once', () => {
    expect(codes({ processingContentStorage: true })).toEqual(['PROCESSING_STORAGE_NOT_APPLIED']);
    expect(codes({ languageDetection: 'unavailable' })).toEqual(['LANGUAGE_DETECTION_UNAVAILABLE']);
    expect(sessionNotices({ unsupportedLanguageHints: ['fr', 'de'] }, null)[0]?.message).toMatch(/fr, de; the session is recognized as en/);
    expect(codes({ commitSilenceMs: 500 })).toEqual(['OPTIONS_NOT_APPLIED']);
  });

  it('vocabulary hints: a recognizer without hints, and words without a pronunciation', () => {
    expect(codes({ vocabularyHints: ['a'] }, null)).toEqual(['VOCABULARY_HINTS_NOT_APPLIED']);
    const partly = sessionNotices({ vocabularyHints: ['a', 'zxqv'] }, { unknown: ['zxqv'] });
    expect(partly).toEqual([{ code: 'VOCABULARY_HINTS_NOT_APPLIED', message: expect.stringContaining('zxqv') }]);
    expect(codes({}, null)).toEqual([]);
  });
});

describe('optionsNotYetApplied', () => {
  it('lists detector settings outside vad mode, ignoring empty values', () => {
    expect(optionsNotYetApplied({ speechDetectionThreshold: 0.6, minimumSpeechMs: null, commitSilenceMs: [] })).toEqual([
      'speechDetectionThreshold (only used with segmentCommitMode=vad)',
    ]);
    expect(optionsNotYetApplied({ segmentCommitMode: 'vad', speechDetectionThreshold: 0.6 })).toEqual([]);
  });
});
