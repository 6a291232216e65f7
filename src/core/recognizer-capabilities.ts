// What the recognizer can do with the language options, decided when a session is created.
// Pure: the route passes the engine's facts in.
//
// Decisions (docs/options.md):
// - languageHint names the spoken language. A language no loaded model recognizes is refused
//   (VALIDATION_FAILED on languageHint): an English model would turn other speech into
//   confident English nonsense, and the audio would still be charged.
// - additionalLanguageHints are candidates only: the supported ones select the model, the
//   others are kept in the request and reported as not applied (a notice), never refused.
// - Neither engine here detects the spoken language. When includeDetectedLanguage is asked
//   for, effectiveOptions says so: includeDetectedLanguage is false (not in effect) and
//   languageDetection is "unavailable"; the session also sends a notice.
import { ScribedError } from './errors.js';
import type { ValidSessionRequest } from './session-options.js';

export interface RecognizerCapabilities {
  /** BCP-47 primary language subtags the loaded models recognize. */
  languages: string[];
  detectsLanguage: boolean;
}

export interface LanguageResolution {
  /** Language of the model that will recognize the session. */
  recognitionLanguage: string;
  /** additionalLanguageHints no model here recognizes. */
  unsupportedLanguageHints: string[];
}

function primary(tag: string): string {
  return tag.split('-')[0]!.toLowerCase();
}

export function applyRecognizerCapabilities(valid: ValidSessionRequest, caps: RecognizerCapabilities): ValidSessionRequest {
  const supported = (tag: string) => caps.languages.includes(primary(tag));
  if (valid.languageHint !== null && !supported(valid.languageHint)) {
    throw new ScribedError(
      'VALIDATION_FAILED',
      `languageHint: "${valid.languageHint}" is not recognized by this server (languages: ${caps.languages.join(', ')})`,
      { details: { field: 'languageHint' } },
    );
  }
  const hints = valid.effectiveOptions.additionalLanguageHints;
  const chosen = valid.languageHint ?? hints.find(supported) ?? caps.languages[0] ?? 'en';
  const options: Record<string, unknown> = {
    ...valid.effectiveOptions,
    recognitionLanguage: primary(chosen),
    unsupportedLanguageHints: hints.filter((h) => !supported(h)),
  };
  if (valid.effectiveOptions.includeDetectedLanguage && !caps.detectsLanguage) {
    options.includeDetectedLanguage = false;
    options.languageDetection = 'unavailable';
  }
  return { ...valid, effectiveOptions: options as unknown as ValidSessionRequest['effectiveOptions'] };
}
