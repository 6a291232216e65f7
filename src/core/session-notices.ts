// The notices a real-time session sends after `ready`: every option it was given but cannot
// apply, said once, so nothing is silently ignored. Pure: from the session's options and what
// the recognizer did with its vocabulary hints.
import { textOptionNotices, type Notice } from './text-options.js';

export type { Notice };

/** What the recognizer did with vocabularyHints: null when it cannot take hints at all. */
export interface VocabularyOutcome {
  unknown: readonly string[];
}

export function sessionNotices(options: Record<string, unknown>, vocabulary: VocabularyOutcome | null): Notice[] {
  const out: Notice[] = [];
  if (options.processingContentStorage === true) {
    out.push({
      code: 'PROCESSING_STORAGE_NOT_APPLIED',
      message: 'processingContentStorage was requested, but the recognizer keeps no processing-side content, so it was not applied',
    });
  }
  out.push(...textOptionNotices(options));
  if (options.languageDetection === 'unavailable') {
    out.push({
      code: 'LANGUAGE_DETECTION_UNAVAILABLE',
      message:
        'includeDetectedLanguage was requested, but this recognizer cannot detect the spoken language; results carry no detected language',
    });
  }
  const unsupportedHints = options.unsupportedLanguageHints;
  if (Array.isArray(unsupportedHints) && unsupportedHints.length > 0) {
    out.push({
      code: 'LANGUAGE_HINTS_NOT_APPLIED',
      message: `no model here recognizes ${unsupportedHints.join(', ')}; the session is recognized as ${String(options.recognitionLanguage ?? 'en')}`,
    });
  }
  const hints = options.vocabularyHints;
  if (Array.isArray(hints) && hints.length > 0) {
    if (vocabulary === null) {
      out.push({ code: 'VOCABULARY_HINTS_NOT_APPLIED', message: 'this recognizer cannot take vocabulary hints; they were not applied' });
    } else if (vocabulary.unknown.length > 0) {
      out.push({
        code: 'VOCABULARY_HINTS_NOT_APPLIED',
        message: `no pronunciation could be derived for ${vocabulary.unknown.join(', ')}; those words were not added (the other hints apply)`,
      });
    }
  }
  const notApplied = optionsNotYetApplied(options);
  if (notApplied.length > 0) {
    out.push({ code: 'OPTIONS_NOT_APPLIED', message: `accepted but not applied by this server: ${notApplied.join(', ')}` });
  }
  return out;
}

/** Options this server validates and records but does not act on in this session. */
export function optionsNotYetApplied(options: Record<string, unknown>): string[] {
  const out: string[] = [];
  const given = (key: string): boolean => {
    const v = options[key];
    return v !== undefined && v !== null && !(Array.isArray(v) && v.length === 0);
  };
  // The detector settings only act in vad mode.
  if (options.segmentCommitMode !== 'vad') {
    for (const key of ['speechDetectionThreshold', 'commitSilenceMs', 'minimumSpeechMs', 'minimumSilenceMs']) {
      if (given(key)) out.push(`${key} (only used with segmentCommitMode=vad)`);
    }
  }
  // additionalLanguageHints and includeDetectedLanguage are answered by their own notices
  // (LANGUAGE_HINTS_NOT_APPLIED, LANGUAGE_DETECTION_UNAVAILABLE) when they cannot apply.
  // vocabularyHints: answered by VOCABULARY_HINTS_NOT_APPLIED when (part of) it cannot apply.
  // The text options are applied or answered by their own notices (text-options.ts).
  return out;
}
