// Create-session body validation (every option's type, range and length; exclusions;
// unknown keys) and the idempotency request hash.
import { describe, expect, it } from 'vitest';
import { ScribedError } from '../../src/core/errors.js';
import { DEFAULT_TITLE, ENTITY_CATEGORIES, requestHash, validateCreateSession } from '../../src/core/session-options.js';

function refusal(body: unknown): ScribedError {
  try {
    validateCreateSession(body);
  } catch (err) {
    expect(err).toBeInstanceOf(ScribedError);
    expect((err as ScribedError).code).toBe('VALIDATION_FAILED');
    return err as ScribedError;
  }
  throw new Error(`expected VALIDATION_FAILED for ${JSON.stringify(body)}`);
}

const PRE_READABLE_TEXT_HASH = '342f7d49b155b4fdfe1bf28346c737ee3368cc28175ac63e6299737f93cd1b9b';

const opt = (options: Record<string, unknown>) => ({ options });

const DEFAULTS = {
  inputEncoding: 'pcm_s16le_16000',
  sampleRateHz: 16000,
  segmentCommitMode: 'manual',
  additionalLanguageHints: [],
  speechDetectionThreshold: null,
  commitSilenceMs: null,
  minimumSpeechMs: null,
  minimumSilenceMs: null,
  includeAlignment: true,
  includeDetectedLanguage: false,
  vocabularyHints: [],
  removeDisfluencies: false,
  readableText: true,
  entityCategories: [],
  rewriteInstruction: null,
  suppressBackgroundSpeech: false,
  heartbeatIntervalMs: null,
  processingContentStorage: false,
};

describe('defaults', () => {
  it('resolves every option for an empty body', () => {
    expect(validateCreateSession({})).toEqual({ title: DEFAULT_TITLE, languageHint: null, effectiveOptions: DEFAULTS });
    expect(DEFAULT_TITLE).toBe('Untitled recording');
  });

  it('treats null and an empty title as not given', () => {
    expect(validateCreateSession({ title: null, languageHint: null, options: null })).toEqual(validateCreateSession({}));
    expect(validateCreateSession({ title: '' }).title).toBe(DEFAULT_TITLE);
    expect(validateCreateSession(opt({ includeAlignment: null, vocabularyHints: null })).effectiveOptions).toEqual(DEFAULTS);
  });

  it.each([
    ['pcm_s16le_8000', 8000],
    ['pcm_s16le_16000', 16000],
    ['pcm_s16le_22050', 22050],
    ['pcm_s16le_24000', 24000],
    ['pcm_s16le_44100', 44100],
    ['pcm_s16le_48000', 48000],
    ['mulaw_8000', 8000],
  ])('resolves the rate of %s', (inputEncoding, rate) => {
    expect(validateCreateSession(opt({ inputEncoding })).effectiveOptions).toMatchObject({ inputEncoding, sampleRateHz: rate });
  });

  it('turns alignment off when background filtering is on and alignment is unset', () => {
    expect(validateCreateSession(opt({ suppressBackgroundSpeech: true })).effectiveOptions).toMatchObject({
      includeAlignment: false,
      suppressBackgroundSpeech: true,
    });
    expect(validateCreateSession(opt({ suppressBackgroundSpeech: true, includeAlignment: false })).effectiveOptions.includeAlignment).toBe(
      false,
    );
    expect(validateCreateSession(opt({ suppressBackgroundSpeech: false })).effectiveOptions.includeAlignment).toBe(true);
    expect(validateCreateSession(opt({ includeAlignment: false })).effectiveOptions.includeAlignment).toBe(false);
  });

  it('keeps given values', () => {
    const body = {
      title: 'Call 7f3a',
      languageHint: 'pt-BR',
      options: {
        inputEncoding: 'mulaw_8000',
        segmentCommitMode: 'vad',
        additionalLanguageHints: ['en', 'es-419'],
        speechDetectionThreshold: 0.5,
        commitSilenceMs: 700.5,
        minimumSpeechMs: 250,
        minimumSilenceMs: 0,
        includeDetectedLanguage: true,
        vocabularyHints: ['scribed'],
        removeDisfluencies: true,
        readableText: false,
        entityCategories: ['email', 'phone_number'],
        heartbeatIntervalMs: 1500,
        processingContentStorage: true,
      },
    };
    const v = validateCreateSession(body);
    expect(v.title).toBe('Call 7f3a');
    expect(v.languageHint).toBe('pt-BR');
    expect(v.effectiveOptions).toEqual({ ...DEFAULTS, ...body.options, sampleRateHz: 8000 });
  });
});

describe('limits accepted', () => {
  it.each([
    ['title of 200 characters', { title: 'x'.repeat(200) }],
    ['title of 200 code points in astral characters', { title: '😀'.repeat(200) }],
    ['languageHint of 35 characters', { languageHint: 'en' + '-abcdefgh'.repeat(3) + '-abcde' }],
    ['8 additionalLanguageHints', opt({ additionalLanguageHints: Array(8).fill('en') })],
    ['empty lists', opt({ additionalLanguageHints: [], vocabularyHints: [], entityCategories: [] })],
    ['50 vocabularyHints of 100 characters', opt({ vocabularyHints: Array.from({ length: 50 }, (_, i) => `${i}`.padEnd(100, 'v')) })],
    ['vocabulary hint of 1 character', opt({ vocabularyHints: ['v'] })],
    ['every entity category', opt({ entityCategories: [...ENTITY_CATEGORIES] })],
    ['rewriteInstruction of 2000 characters', opt({ rewriteInstruction: 'r'.repeat(2000) })],
    [
      'range bottoms',
      opt({ speechDetectionThreshold: 0, commitSilenceMs: 0, minimumSpeechMs: 0, minimumSilenceMs: 0, heartbeatIntervalMs: 500 }),
    ],
    [
      'range tops',
      opt({
        speechDetectionThreshold: 1,
        commitSilenceMs: 60000,
        minimumSpeechMs: 60000,
        minimumSilenceMs: 60000,
        heartbeatIntervalMs: 10000,
      }),
    ],
    ['includeAlignment false with suppressBackgroundSpeech', opt({ includeAlignment: false, suppressBackgroundSpeech: true })],
  ])('%s', (_name, body) => {
    expect(() => validateCreateSession(body)).not.toThrow();
  });
});

describe('refusals', () => {
  it.each([
    ['body not an object', [], 'body', /must be a JSON object/],
    ['body null', null, 'body', /must be a JSON object/],
    ['unknown top-level field', { title: 'x', modelId: 'm' }, 'modelId', /unknown field/],
    ['title of 201 characters', { title: 'x'.repeat(201) }, 'title', /at most 200/],
    ['title of 201 code points', { title: '😀'.repeat(201) }, 'title', /at most 200/],
    ['title not a string', { title: 5 }, 'title', /must be a string/],
    ['languageHint not a string', { languageHint: ['en'] }, 'languageHint', /must be a string/],
    ['languageHint not a tag', { languageHint: 'english!' }, 'languageHint', /language tag/],
    ['languageHint of 36 characters', { languageHint: 'en' + '-abcdefgh'.repeat(3) + '-abcdef' }, 'languageHint', /at most 35/],
    ['options not an object', { options: [] }, 'options', /must be a JSON object/],
    ['options a string', { options: 'vad' }, 'options', /must be a JSON object/],
    ['unknown option', opt({ speakerCount: 2 }), 'options.speakerCount', /unknown field/],
    ['unknown encoding', opt({ inputEncoding: 'pcm_s16le_11025' }), 'options.inputEncoding', /must be one of/],
    ['encoding not a string', opt({ inputEncoding: 16000 }), 'options.inputEncoding', /must be one of/],
    ['inherited name as encoding', opt({ inputEncoding: 'toString' }), 'options.inputEncoding', /must be one of/],
    ['unknown segmentCommitMode', opt({ segmentCommitMode: 'auto' }), 'options.segmentCommitMode', /manual or vad/],
    ['9 additionalLanguageHints', opt({ additionalLanguageHints: Array(9).fill('en') }), 'options.additionalLanguageHints', /at most 8/],
    ['additionalLanguageHints not an array', opt({ additionalLanguageHints: 'en' }), 'options.additionalLanguageHints', /array/],
    [
      'additionalLanguageHints entry not a string',
      opt({ additionalLanguageHints: ['en', 1] }),
      'options.additionalLanguageHints[1]',
      /string/,
    ],
    [
      'additionalLanguageHints entry not a tag',
      opt({ additionalLanguageHints: ['en', 'e'] }),
      'options.additionalLanguageHints[1]',
      /language tag/,
    ],
    [
      '51 vocabularyHints',
      opt({ vocabularyHints: Array.from({ length: 51 }, (_, i) => `t${i}`) }),
      'options.vocabularyHints',
      /at most 50/,
    ],
    ['empty vocabulary hint', opt({ vocabularyHints: ['a', ''] }), 'options.vocabularyHints[1]', /1 to 100/],
    ['vocabulary hint of 101 characters', opt({ vocabularyHints: ['v'.repeat(101)] }), 'options.vocabularyHints[0]', /1 to 100/],
    ['rewriteInstruction of 2001 characters', opt({ rewriteInstruction: 'r'.repeat(2001) }), 'options.rewriteInstruction', /1 to 2000/],
    ['empty rewriteInstruction', opt({ rewriteInstruction: '' }), 'options.rewriteInstruction', /1 to 2000/],
    ['rewriteInstruction not a string', opt({ rewriteInstruction: 1 }), 'options.rewriteInstruction', /string/],
    ['commitSilenceMs -1', opt({ commitSilenceMs: -1 }), 'options.commitSilenceMs', /between 0 and 60000/],
    ['commitSilenceMs 60001', opt({ commitSilenceMs: 60001 }), 'options.commitSilenceMs', /between 0 and 60000/],
    ['commitSilenceMs as a string', opt({ commitSilenceMs: '100' }), 'options.commitSilenceMs', /finite number/],
    ['minimumSpeechMs not an integer', opt({ minimumSpeechMs: 1.5 }), 'options.minimumSpeechMs', /integer/],
    ['minimumSpeechMs 60001', opt({ minimumSpeechMs: 60001 }), 'options.minimumSpeechMs', /between/],
    ['minimumSilenceMs not an integer', opt({ minimumSilenceMs: 0.1 }), 'options.minimumSilenceMs', /integer/],
    ['minimumSilenceMs -1', opt({ minimumSilenceMs: -1 }), 'options.minimumSilenceMs', /between/],
    ['speechDetectionThreshold 1.1', opt({ speechDetectionThreshold: 1.1 }), 'options.speechDetectionThreshold', /between 0 and 1/],
    ['speechDetectionThreshold -0.1', opt({ speechDetectionThreshold: -0.1 }), 'options.speechDetectionThreshold', /between 0 and 1/],
    ['heartbeatIntervalMs 499', opt({ heartbeatIntervalMs: 499 }), 'options.heartbeatIntervalMs', /between 500 and 10000/],
    ['heartbeatIntervalMs 10001', opt({ heartbeatIntervalMs: 10001 }), 'options.heartbeatIntervalMs', /between 500 and 10000/],
    ['includeAlignment not a boolean', opt({ includeAlignment: 'yes' }), 'options.includeAlignment', /boolean/],
    ['includeDetectedLanguage not a boolean', opt({ includeDetectedLanguage: 1 }), 'options.includeDetectedLanguage', /boolean/],
    ['removeDisfluencies not a boolean', opt({ removeDisfluencies: 'true' }), 'options.removeDisfluencies', /boolean/],
    ['readableText not a boolean', opt({ readableText: 1 }), 'options.readableText', /boolean/],
    ['suppressBackgroundSpeech not a boolean', opt({ suppressBackgroundSpeech: 0 }), 'options.suppressBackgroundSpeech', /boolean/],
    ['processingContentStorage not a boolean', opt({ processingContentStorage: 'no' }), 'options.processingContentStorage', /boolean/],
    ['unknown entity category', opt({ entityCategories: ['email', 'ssn'] }), 'options.entityCategories[1]', /must be one of/],
    ['duplicate entity category', opt({ entityCategories: ['email', 'email'] }), 'options.entityCategories[1]', /duplicate/],
    [
      'includeAlignment with suppressBackgroundSpeech',
      opt({ includeAlignment: true, suppressBackgroundSpeech: true }),
      'options.suppressBackgroundSpeech',
      /includeAlignment/,
    ],
    [
      'entityCategories with rewriteInstruction',
      opt({ entityCategories: ['email'], rewriteInstruction: 'tidy it' }),
      'options.rewriteInstruction',
      /entityCategories/,
    ],
    [
      'empty entityCategories with rewriteInstruction',
      opt({ entityCategories: [], rewriteInstruction: 'tidy it' }),
      'options.rewriteInstruction',
      /entityCategories/,
    ],
  ])('refuses %s', (_name, body, field, reason) => {
    const err = refusal(body);
    expect(err.message.startsWith(`VALIDATION_FAILED: ${field}: `), err.message).toBe(true);
    expect(err.message).toMatch(reason);
    expect(err.details).toEqual({ field });
  });

  it('reports the first failure in a fixed order', () => {
    expect(refusal({ title: 5, options: { inputEncoding: 'x' } }).details).toEqual({ field: 'title' });
    expect(refusal(opt({ commitSilenceMs: -1, inputEncoding: 'x' })).details).toEqual({ field: 'options.inputEncoding' });
    // an individual field error comes before a mutual-exclusion error
    expect(refusal(opt({ includeAlignment: true, suppressBackgroundSpeech: true, heartbeatIntervalMs: 1 })).details).toEqual({
      field: 'options.heartbeatIntervalMs',
    });
  });
});

describe('requestHash', () => {
  it('is a sha256 hex digest', () => {
    expect(requestHash({})).toMatch(/^[0-9a-f]{64}$/);
  });

  it('treats omitted and explicitly default values as the same request', () => {
    const base = requestHash({});
    expect(requestHash({ title: DEFAULT_TITLE })).toBe(base);
    expect(requestHash({ options: {} })).toBe(base);
    expect(requestHash({ options: { inputEncoding: 'pcm_s16le_16000', segmentCommitMode: 'manual', includeAlignment: true } })).toBe(base);
    expect(requestHash({ languageHint: null, options: { vocabularyHints: [] } })).toBe(base);
    expect(requestHash(opt({ readableText: true }))).toBe(base);
  });

  it('hashes a default request as it was hashed before readableText existed', () => {
    // The hash of `{}` before the option was added: Idempotency-Key replays across the
    // upgrade must not become conflicts.
    expect(requestHash({})).toBe(PRE_READABLE_TEXT_HASH);
  });

  it('ignores key order', () => {
    expect(requestHash({ title: 'a', options: { removeDisfluencies: true, inputEncoding: 'mulaw_8000' } })).toBe(
      requestHash({ options: { inputEncoding: 'mulaw_8000', removeDisfluencies: true }, title: 'a' }),
    );
  });

  it('changes with any title, language or option change', () => {
    const hashes = [
      requestHash({}),
      requestHash({ title: 'one' }),
      requestHash({ title: 'two' }),
      requestHash({ languageHint: 'en' }),
      requestHash(opt({ removeDisfluencies: true })),
      requestHash(opt({ readableText: false })),
      requestHash(opt({ inputEncoding: 'mulaw_8000' })),
      requestHash(opt({ vocabularyHints: ['a', 'b'] })),
      requestHash(opt({ vocabularyHints: ['b', 'a'] })),
      requestHash(opt({ heartbeatIntervalMs: 500 })),
      requestHash(opt({ suppressBackgroundSpeech: true })),
    ];
    expect(new Set(hashes).size).toBe(hashes.length);
  });

  it('refuses an invalid body', () => {
    expect(() => requestHash(opt({ bogus: 1 }))).toThrow(ScribedError);
  });
});
