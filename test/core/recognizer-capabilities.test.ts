import { describe, expect, it } from 'vitest';
import { applyRecognizerCapabilities } from '../../src/core/recognizer-capabilities.js';
import { validateCreateSession } from '../../src/core/session-options.js';

const english = { languages: ['en'], detectsLanguage: false };

describe('applyRecognizerCapabilities', () => {
  it('selects the model from languageHint, refusing a language no model recognizes', () => {
    const v = applyRecognizerCapabilities(validateCreateSession({ languageHint: 'en-GB' }), english);
    expect(v.effectiveOptions).toMatchObject({ recognitionLanguage: 'en', unsupportedLanguageHints: [] });
    expect(() => applyRecognizerCapabilities(validateCreateSession({ languageHint: 'pt-BR' }), english)).toThrow(
      expect.objectContaining({ code: 'VALIDATION_FAILED', details: { field: 'languageHint' } }),
    );
    // a server with a Portuguese model takes it
    const pt = applyRecognizerCapabilities(validateCreateSession({ languageHint: 'pt-BR' }), {
      languages: ['en', 'pt'],
      detectsLanguage: false,
    });
    expect(pt.effectiveOptions).toMatchObject({ recognitionLanguage: 'pt' });
  });

  it('takes the first supported candidate hint and lists the others', () => {
    const v = applyRecognizerCapabilities(validateCreateSession({ options: { additionalLanguageHints: ['fr', 'EN-us', 'de'] } }), english);
    expect(v.effectiveOptions).toMatchObject({ recognitionLanguage: 'en', unsupportedLanguageHints: ['fr', 'de'] });
  });

  it('says in effectiveOptions when language detection was asked for but is unavailable', () => {
    const asked = applyRecognizerCapabilities(validateCreateSession({ options: { includeDetectedLanguage: true } }), english);
    expect(asked.effectiveOptions).toMatchObject({ includeDetectedLanguage: false, languageDetection: 'unavailable' });
    const capable = applyRecognizerCapabilities(validateCreateSession({ options: { includeDetectedLanguage: true } }), {
      languages: ['en'],
      detectsLanguage: true,
    });
    expect(capable.effectiveOptions.includeDetectedLanguage).toBe(true);
    expect(capable.effectiveOptions).not.toHaveProperty('languageDetection');
  });
});
