// The request and response schemas of the API document, built from the same constants the
// validators in src/core import (limits, key lists, patterns), so a changed limit changes the
// document with it. The rules a schema cannot say (a language the recognizer knows, cross-field
// rules) are in descriptions; test/server/openapi-requests.test.ts sends instances of every
// schema and every bound broken to the real app, so a schema that stops matching its
// validator fails there.
import { INPUT_ENCODING_NAMES, DEFAULT_INPUT_ENCODING } from '../../core/audio/encodings.js';
import { UINT64_MAX } from '../../core/capture-cursor.js';
import { IDEMPOTENCY_KEY } from '../../core/idempotency.js';
import {
  DEFAULT_TITLE,
  ENTITY_CATEGORIES,
  REDACTION_POLICIES,
  LANGUAGE_TAG,
  MAX_ADDITIONAL_LANGUAGE_HINTS,
  MAX_LANGUAGE_TAG_CHARS,
  MAX_REWRITE_INSTRUCTION_CHARS,
  MAX_TITLE_CHARS,
  MAX_VOCABULARY_HINTS,
  MAX_VOCABULARY_HINT_CHARS,
  OPTION_KEYS,
  OPTION_RANGES,
  type SegmentCommitMode,
} from '../../core/session-options.js';
import { MODEL_ID } from '../context.js';
import { LEG_FIELDS, SESSION_CALL_DEPENDENCIES, SESSION_CALL_FIELDS } from './calls.js';
import type { ServerFacts } from './endpoint.js';
import { decimalAtMost, nullable, object, primaryLanguagePattern, range, text, type JsonSchema } from './json-schema.js';

export type { ServerFacts };

const STRING: JsonSchema = { type: 'string' };
const INTEGER: JsonSchema = { type: 'integer' };
const TIMESTAMP: JsonSchema = { type: 'string', description: 'ISO 8601 UTC time' };
const DECIMAL: JsonSchema = { type: 'string', pattern: '^[0-9]+$', description: 'a 64-bit count as a decimal string' };
const id = (prefix: string): JsonSchema => ({ type: 'string', pattern: `^${prefix}_` });

export const IDEMPOTENCY_KEY_SCHEMA: JsonSchema = {
  type: 'string',
  pattern: IDEMPOTENCY_KEY.source,
  description: '16 to 64 printable ASCII characters',
};

// ---------------------------------------------------------------- real-time sessions

/** LANGUAGE_TAG after its primary subtag (test/server/openapi.test.ts checks it is). */
export const LANGUAGE_SUBTAGS = '(?:-[A-Za-z0-9]{1,8})*';

const languageTag: JsonSchema = { type: 'string', maxLength: MAX_LANGUAGE_TAG_CHARS, pattern: LANGUAGE_TAG.source };

function languageHint(facts: ServerFacts): JsonSchema {
  const description =
    'the spoken language, a tag such as "en" or "pt-BR"; refused unless a loaded model recognizes its primary subtag (GET /readyz, engine.languages)';
  if (!facts.recognizerLanguages) return nullable({ ...languageTag, description });
  return nullable({ ...languageTag, description, pattern: primaryLanguagePattern(facts.recognizerLanguages, LANGUAGE_SUBTAGS) });
}

const segmentCommitModes = ['manual', 'vad'] as const satisfies readonly SegmentCommitMode[];

const SESSION_OPTIONS = {
  inputEncoding: {
    enum: [...INPUT_ENCODING_NAMES, null],
    default: DEFAULT_INPUT_ENCODING,
    description: 'the audio the socket carries; its rate is the session timeline',
  },
  segmentCommitMode: {
    enum: [...segmentCommitModes, null],
    default: 'manual',
    description: 'manual: the client commits segments; vad: the server cuts them at pauses',
  },
  additionalLanguageHints: nullable({
    type: 'array',
    maxItems: MAX_ADDITIONAL_LANGUAGE_HINTS,
    items: languageTag,
    description: 'candidate languages; unsupported ones are reported in a notice, not refused',
  }),
  speechDetectionThreshold: nullable(range(OPTION_RANGES.speechDetectionThreshold)),
  commitSilenceMs: nullable(range(OPTION_RANGES.commitSilenceMs)),
  minimumSpeechMs: nullable(range(OPTION_RANGES.minimumSpeechMs)),
  minimumSilenceMs: nullable(range(OPTION_RANGES.minimumSilenceMs)),
  includeAlignment: nullable({
    type: 'boolean',
    description: 'default true, false when suppressBackgroundSpeech is true; both true is refused',
  }),
  includeDetectedLanguage: nullable({ type: 'boolean' }),
  vocabularyHints: nullable({ type: 'array', maxItems: MAX_VOCABULARY_HINTS, items: text(1, MAX_VOCABULARY_HINT_CHARS) }),
  removeDisfluencies: nullable({ type: 'boolean' }),
  entityCategories: nullable({
    type: 'array',
    maxItems: ENTITY_CATEGORIES.length,
    uniqueItems: true,
    items: { enum: [...ENTITY_CATEGORIES] },
    description: 'not with rewriteInstruction',
  }),
  rewriteInstruction: nullable(text(1, MAX_REWRITE_INSTRUCTION_CHARS, { description: 'not with entityCategories' })),
  suppressBackgroundSpeech: nullable({ type: 'boolean', description: 'not with includeAlignment true' }),
  heartbeatIntervalMs: nullable(range(OPTION_RANGES.heartbeatIntervalMs)),
  processingContentStorage: nullable({ type: 'boolean' }),
  readableText: nullable({
    type: 'boolean',
    default: true,
    description: 'numbers, dates and money as digits, sentence case (docs/options.md)',
  }),
  redact: nullable({
    type: 'array',
    maxItems: REDACTION_POLICIES.length,
    uniqueItems: true,
    items: { enum: [...REDACTION_POLICIES] },
    description:
      'sensitive spans become tokens such as [CARD_NUMBER] or [NUMBER] in partials, finals and every stored or sent output; added to the account default, which a request cannot remove (docs/redaction.md)',
  }),
  recordAudio: nullable({
    type: 'boolean',
    description: 'keep the audio as FLAC, redacted spans masked by a tone; GET .../transcriptions/{id}/audio (docs/recordings.md)',
  }),
} satisfies Record<(typeof OPTION_KEYS)[number], JsonSchema>;

/** The mutual exclusions validateCreateSession checks after each option on its own. */
const OPTION_EXCLUSIONS: JsonSchema[] = [
  {
    not: {
      required: ['includeAlignment', 'suppressBackgroundSpeech'],
      properties: { includeAlignment: { const: true }, suppressBackgroundSpeech: { const: true } },
    },
  },
  {
    not: {
      required: ['entityCategories', 'rewriteInstruction'],
      properties: { entityCategories: { type: 'array' }, rewriteInstruction: { type: 'string' } },
    },
  },
];

export function sessionOptionsSchema(): JsonSchema {
  return nullable({
    ...object(SESSION_OPTIONS, [], { closed: true, description: 'processing controls; unknown keys are refused' }),
    allOf: OPTION_EXCLUSIONS,
  });
}

export function createSessionBody(facts: ServerFacts): JsonSchema {
  const schema = object(
    {
      title: nullable(text(0, MAX_TITLE_CHARS, { description: `History title; empty or absent: "${DEFAULT_TITLE}"` })),
      languageHint: languageHint(facts),
      options: sessionOptionsSchema(),
      ...SESSION_CALL_FIELDS,
    },
    [],
    { closed: true },
  );
  return { ...schema, dependentRequired: SESSION_CALL_DEPENDENCIES };
}

export const RESUME_BODY: JsonSchema = object({
  capturedSamples: nullable({
    description: 'samples the client captured in the whole session (the capture cursor); a decimal string is preferred',
    anyOf: [
      { type: 'string', pattern: decimalAtMost(UINT64_MAX), description: 'decimal digits, at most 2^64-1' },
      { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    ],
  }),
});

export const SESSION_VIEW: JsonSchema = object(
  {
    sessionId: id('rts'),
    transcriptionId: id('stt'),
    status: { type: 'string', description: 'RECORDING, PAUSED or CLOSED; once closed, the transcription task status' },
    modelId: { const: MODEL_ID },
    streamUrl: { type: 'string', description: 'socket path (docs/protocol.md)' },
    title: STRING,
    languageHint: nullable(STRING),
    effectiveOptions: { type: 'object', description: 'every option in effect, defaults resolved' },
    epoch: INTEGER,
    capturedSamples: DECIMAL,
    ...LEG_FIELDS,
    createdAt: TIMESTAMP,
    updatedAt: TIMESTAMP,
  },
  [
    'sessionId',
    'transcriptionId',
    'status',
    'modelId',
    'streamUrl',
    'title',
    'effectiveOptions',
    'epoch',
    'capturedSamples',
    'createdAt',
    'updatedAt',
  ],
);

export const RESUME_VIEW: JsonSchema = object(
  {
    sessionId: id('rts'),
    transcriptionId: id('stt'),
    status: { const: 'RECORDING' },
    epoch: INTEGER,
    sampleOffset: { const: 0 },
    capturedSamples: DECIMAL,
    clientCapturedSamples: nullable(DECIMAL),
    missingSamples: nullable({ type: 'string', pattern: '^-?[0-9]+$', description: 'samples to re-send from sampleOffset 0' }),
    accepting: { type: 'boolean' },
    streamUrl: STRING,
  },
  ['sessionId', 'transcriptionId', 'status', 'epoch', 'sampleOffset', 'capturedSamples', 'accepting', 'streamUrl'],
);

// ---------------------------------------------------------------- History and batch

export const TRANSCRIPTION_VIEW: JsonSchema = object(
  {
    transcriptionId: id('stt'),
    kind: { enum: ['realtime', 'batch'] },
    sessionId: nullable(id('rts')),
    title: STRING,
    status: STRING,
    languageHint: nullable(STRING),
    sampleRateHz: INTEGER,
    audioSamples: DECIMAL,
    audioDurationMs: INTEGER,
    ...LEG_FIELDS,
    createdAt: TIMESTAMP,
    updatedAt: TIMESTAMP,
    completedAt: nullable(TIMESTAMP),
    endReason: {
      type: ['string', 'null'],
      enum: ['session.closed', 'session.expired', null],
      description:
        'real-time rows once ended: session.closed (a close) or session.expired (the idle expiry); null while open and for batch rows',
    },
    effectiveOptions: { type: 'object', description: 'batch rows only' },
    notices: { type: 'array', description: 'batch rows only' },
    error: { type: ['string', 'null'], description: 'batch rows only' },
  },
  ['transcriptionId', 'kind', 'title', 'status', 'sampleRateHz', 'audioSamples', 'audioDurationMs', 'createdAt', 'updatedAt'],
);
