// Batch request validation (pure): the same rules as a session's create body, the same
// recognizer capability check, and the batch-specific defaults.
import { describe, expect, it } from 'vitest';
import { ScribedError } from '../../src/core/errors.js';
import { batchRequestHash, validateBatchRequest } from '../../src/batch/request.js';

const ENGLISH = { languages: ['en'], detectsLanguage: false };

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ScribedError);
    return `${(err as ScribedError).code}: ${(err as ScribedError).message}`;
  }
  throw new Error('expected a refusal');
}

describe('validateBatchRequest: languages', () => {
  it('refuses a languageHint no loaded model recognizes, as real time does', () => {
    expect(refusal(() => validateBatchRequest({ languageHint: 'fr' }, 16_000, ENGLISH))).toMatch(
      /^VALIDATION_FAILED: .*languageHint: "fr" is not recognized/,
    );
    expect(refusal(() => validateBatchRequest({ languageHint: 'de-DE' }, 8000, ENGLISH))).toMatch(/languageHint/);
  });

  it('accepts a supported languageHint and names the recognition language', () => {
    const r = validateBatchRequest({ languageHint: 'en-US' }, 16_000, ENGLISH);
    expect(r.languageHint).toBe('en-US');
    expect(r.effectiveOptions).toMatchObject({ recognitionLanguage: 'en', unsupportedLanguageHints: [] });
    const fr = validateBatchRequest({ languageHint: 'fr' }, 16_000, { languages: ['en', 'fr'], detectsLanguage: false });
    expect(fr.effectiveOptions).toMatchObject({ recognitionLanguage: 'fr' });
  });

  it('says includeDetectedLanguage is not in effect, and still names it as not applied', () => {
    const r = validateBatchRequest({ options: '{"includeDetectedLanguage":true}' }, 16_000, ENGLISH);
    expect(r.effectiveOptions).toMatchObject({ includeDetectedLanguage: false, languageDetection: 'unavailable' });
    expect(r.effectiveOptions.notApplied).toContain('includeDetectedLanguage');
  });
});

describe('validateBatchRequest: includeAlignment', () => {
  it('defaults on even with suppressBackgroundSpeech, which batch does not apply', () => {
    const r = validateBatchRequest({ options: '{"suppressBackgroundSpeech":true}' }, 16_000, ENGLISH);
    expect(r.effectiveOptions.includeAlignment).toBe(true);
    expect(r.effectiveOptions.notApplied).toContain('suppressBackgroundSpeech');
    expect(validateBatchRequest({}, 16_000, ENGLISH).effectiveOptions.includeAlignment).toBe(true);
  });

  it('keeps an explicit choice, and the same exclusion rule as a session', () => {
    expect(
      validateBatchRequest({ options: '{"suppressBackgroundSpeech":true,"includeAlignment":false}' }, 16_000, ENGLISH).effectiveOptions
        .includeAlignment,
    ).toBe(false);
    expect(validateBatchRequest({ options: '{"includeAlignment":false}' }, 16_000, ENGLISH).effectiveOptions.includeAlignment).toBe(false);
    expect(
      refusal(() => validateBatchRequest({ options: '{"suppressBackgroundSpeech":true,"includeAlignment":true}' }, 16_000, ENGLISH)),
    ).toMatch(/^VALIDATION_FAILED: .*options.suppressBackgroundSpeech/);
  });
});

describe('batchRequestHash', () => {
  // Hashes of these requests before readableText existed (computed with the code at fb6a8ca):
  // an Idempotency-Key replayed across the upgrade must find the stored job, not a conflict.
  const AUDIO = '0'.repeat(64);
  it('hashes default requests as before readableText existed', () => {
    expect(batchRequestHash(AUDIO, validateBatchRequest({}, 16_000, ENGLISH))).toBe(
      '024b198cdf1f274e5245d6a47d296577f4f8f002338b90f5ff55c7435331430b',
    );
    expect(batchRequestHash(AUDIO, validateBatchRequest({ title: 'x', options: '{"removeDisfluencies":true}' }, 16_000, ENGLISH))).toBe(
      'a6cacc1e3454651a2a3b879b083bd6bcf734bd87f307a5b21bf7f1463914c1fb',
    );
  });

  it('tells readableText off from on', () => {
    const on = batchRequestHash(AUDIO, validateBatchRequest({}, 16_000, ENGLISH));
    expect(batchRequestHash(AUDIO, validateBatchRequest({ options: '{"readableText":false}' }, 16_000, ENGLISH))).not.toBe(on);
    expect(batchRequestHash(AUDIO, validateBatchRequest({ options: '{"readableText":true}' }, 16_000, ENGLISH))).toBe(on);
  });
});
