// Validation of a batch transcription request (the form fields beside the audio file).
// Pure. The fields are the create-session body's (`title`, `languageHint`, `options` as a
// JSON object in a form field) and are validated by the same code, then checked against
// what the recognizer can do (applyRecognizerCapabilities, the engine's info passed in), so
// every rule and message matches real time: a languageHint no loaded model recognizes is
// refused (422), never charged and recognized as another language. Decisions (docs/api.md,
// "Batch transcription"):
// - `options.inputEncoding` is refused: a batch file's format is read from its content.
// - `options.segmentCommitMode` is refused: there is no client to commit; batch jobs cut
//   segments at pauses themselves (effectiveOptions shows `vad`).
// - Options that real-time sessions use but the batch path does not act on are accepted and
//   named in a BATCH_OPTIONS_NOT_APPLIED notice and in effectiveOptions.notApplied, never
//   silently ignored.
// - Unknown form fields are refused like unknown JSON keys.
// - includeAlignment defaults to on. Real time turns the default off with
//   suppressBackgroundSpeech (alignment needs every word timed), but a batch job does not
//   apply suppressBackgroundSpeech, so that reason does not hold and words stay timed.
import { createHash } from 'node:crypto';
import { ScribedError } from '../core/errors.js';
import { applyRecognizerCapabilities, type RecognizerCapabilities } from '../core/recognizer-capabilities.js';
import { canonicalJson, hashedOptions, validateCreateSession, type EffectiveOptions } from '../core/session-options.js';
import { textOptionNotices, textOptionsNotApplied, type Notice } from '../text/final-text.js';

export const BATCH_FIELDS = ['title', 'languageHint', 'options'] as const;

/** Options a batch job accepts but does not act on (they shape streaming recognition). */
const NOT_APPLIED_IN_BATCH = [
  'additionalLanguageHints',
  'speechDetectionThreshold',
  'commitSilenceMs',
  'minimumSpeechMs',
  'minimumSilenceMs',
  'includeDetectedLanguage',
  'suppressBackgroundSpeech',
  'heartbeatIntervalMs',
] as const;

export interface BatchRequest {
  title: string;
  languageHint: string | null;
  /** Stored with the job; includes notApplied. */
  effectiveOptions: EffectiveOptions & { notApplied: string[] };
  notices: Notice[];
}

function invalid(field: string, reason: string): never {
  throw new ScribedError('VALIDATION_FAILED', `${field}: ${reason}`, { details: { field } });
}

function isSet(v: unknown): boolean {
  return v !== undefined && v !== null && v !== false && !(Array.isArray(v) && v.length === 0);
}

/** `fields`: the multipart text fields, by name. `decodeRate`: the rate the audio is decoded to
 * (8000 for narrowband sources, else the engine's rate; see src/server/routes/batch.ts).
 * `recognizer`: the engine's languages and detection ability (engine.info). */
export function validateBatchRequest(
  fields: Readonly<Record<string, string>>,
  decodeRate: number,
  recognizer: RecognizerCapabilities,
): BatchRequest {
  for (const name of Object.keys(fields)) {
    if (!(BATCH_FIELDS as readonly string[]).includes(name)) invalid(name, 'unknown field');
  }
  let options: unknown = {};
  if (fields.options !== undefined && fields.options.trim() !== '') {
    try {
      options = JSON.parse(fields.options);
    } catch {
      invalid('options', 'must be a JSON object');
    }
  }
  if (typeof options !== 'object' || options === null || Array.isArray(options)) invalid('options', 'must be a JSON object');
  const o = options as Record<string, unknown>;
  if (o.inputEncoding !== undefined && o.inputEncoding !== null) {
    invalid('options.inputEncoding', 'does not apply to batch transcription: the audio format is read from the file');
  }
  if (o.segmentCommitMode !== undefined && o.segmentCommitMode !== null) {
    invalid('options.segmentCommitMode', 'does not apply to batch transcription: segments are cut at pauses');
  }
  const requested = validateCreateSession({
    title: fields.title,
    languageHint: fields.languageHint === '' ? undefined : fields.languageHint,
    options: o,
  });
  // Named as requested: capabilities may turn includeDetectedLanguage off in effect.
  const skipped = NOT_APPLIED_IN_BATCH.filter((k) => isSet(requested.effectiveOptions[k]));
  const valid = applyRecognizerCapabilities(requested, recognizer);
  const inputEncoding = decodeRate === 8000 ? ('pcm_s16le_8000' as const) : ('pcm_s16le_16000' as const);
  const includeAlignment = o.includeAlignment === undefined || o.includeAlignment === null ? true : valid.effectiveOptions.includeAlignment;
  const eff = { ...valid.effectiveOptions, inputEncoding, segmentCommitMode: 'vad' as const, sampleRateHz: decodeRate, includeAlignment };
  const notices: Notice[] = [];
  if (eff.processingContentStorage) {
    notices.push({
      code: 'PROCESSING_STORAGE_NOT_APPLIED',
      message: 'processingContentStorage was requested, but the recognizer keeps no processing-side content, so it was not applied',
    });
  }
  notices.push(...textOptionNotices(eff as unknown as Record<string, unknown>));
  if (skipped.length > 0) {
    notices.push({ code: 'BATCH_OPTIONS_NOT_APPLIED', message: `accepted but not applied to batch transcription: ${skipped.join(', ')}` });
  }
  const notApplied = [...textOptionsNotApplied(eff as unknown as Record<string, unknown>), ...skipped];
  return { title: valid.title, languageHint: valid.languageHint, effectiveOptions: { ...eff, notApplied }, notices };
}

/** What an upload's Idempotency-Key is bound to: the audio bytes (their sha256) and the
 * validated fields, so a retry of the same file with an explicit default equals one that
 * omits it, and a different file or option under the same key is a conflict. */
export function batchRequestHash(audioSha256: string, r: BatchRequest): string {
  const canonical = canonicalJson({
    audio: audioSha256,
    title: r.title,
    languageHint: r.languageHint,
    options: hashedOptions(r.effectiveOptions),
  });
  return createHash('sha256').update(canonical, 'utf8').digest('hex');
}
