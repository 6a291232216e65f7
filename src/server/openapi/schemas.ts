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
  LANGUAGE,
  MAX_RATE_VERSION_CHARS,
  MAX_SOURCE_TEXT_CODE_POINTS,
  MAX_TARGETS,
  MAX_TITLE_CODE_POINTS,
} from '../../core/interpretation.js';
import { BRIEF_FIELDS, CAPABILITIES, DURATIONS_SEC, LIMITS, LYRICS_MODES } from '../../core/music-brief.js';
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
import { ENVIRONMENTS, MAX_GROUP_ID_CHARS } from '../../core/user-groups.js';
import { KNOWN_MODEL_IDS, MAX_FILE_BYTES, MAX_FILES_PER_VOICE, MAX_VOICE_NAME_CODE_POINTS } from '../../core/voices.js';
import { MODEL_ID } from '../context.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../routes/batch.js';
import { FORMATS } from '../routes/transcriptions.js';
import { MAX_CALLBACK_URL_CHARS, MAX_DESCRIPTION_CODE_POINTS, MAX_PREVIEW_TEXT_CODE_POINTS } from '../routes/voice-design.js';
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

export const TICKET_VIEW: JsonSchema = object(
  {
    ticketId: id('tkt'),
    sessionId: id('rts'),
    streamUrl: STRING,
    expiresInSeconds: INTEGER,
    ticket: { type: 'string', description: 'single use; goes in ?ticket= of the socket URL' },
  },
  ['ticketId', 'sessionId', 'streamUrl', 'expiresInSeconds', 'ticket'],
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

export const HISTORY_PAGE: JsonSchema = object({ items: { type: 'array', items: TRANSCRIPTION_VIEW }, nextCursor: nullable(STRING) }, [
  'items',
  'nextCursor',
]);

export const HISTORY_QUERY = {
  limit: { schema: { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE }, description: 'rows per page' },
  cursor: { schema: STRING, description: 'nextCursor of the previous page' },
};

export const TRANSCRIPT_QUERY = {
  format: { schema: { enum: Object.keys(FORMATS), default: 'json' }, description: 'json, txt, srt or vtt' },
};
export const TRANSCRIPT_CONTENT_TYPES = Object.values(FORMATS).map((t) => t.split(';')[0]!);

export function batchUploadBody(facts: ServerFacts): JsonSchema {
  return object(
    {
      file: {
        type: 'string',
        contentMediaType: 'application/octet-stream',
        description: 'the audio file (any format ffmpeg reads; identified by content)',
      },
      title: text(0, MAX_TITLE_CHARS),
      languageHint: languageHint(facts),
      options: {
        type: 'string',
        contentMediaType: 'application/json',
        description: `the session options as a JSON object, less inputEncoding and segmentCommitMode, with redact (a list of ${REDACTION_POLICIES.join(', ')}: docs/redaction.md) applied, plus the batch-only multichannel (boolean: a 2-channel file becomes a call, one leg per channel) and channelSpeakers (2 distinct speaker labels, default ["agent","customer"]; docs/calls.md)`,
      },
    },
    ['file'],
    { closed: true },
  );
}

export const BATCH_JOB_VIEW: JsonSchema = {
  ...TRANSCRIPTION_VIEW,
  properties: {
    ...(TRANSCRIPTION_VIEW.properties as object),
    charactersCharged: { ...DECIMAL, description: 'what the upload cost (all legs of a multichannel upload)' },
    source: { type: 'object', description: 'what ffprobe found in the file' },
    legs: {
      type: 'array',
      description: 'multichannel uploads only: one batch leg per channel, in channel order',
      items: object(
        { speaker: STRING, transcriptionId: id('stt'), status: STRING, charactersCharged: DECIMAL },
        ['speaker', 'transcriptionId', 'status', 'charactersCharged'],
        { closed: true },
      ),
    },
  },
  required: [...(TRANSCRIPTION_VIEW.required as string[]), 'charactersCharged', 'source'],
};

// ---------------------------------------------------------------- interpretation

const language: JsonSchema = { type: 'string', pattern: LANGUAGE.source };

export const INTERPRETATION_CREATE_BODY: JsonSchema = object(
  {
    title: text(1, MAX_TITLE_CODE_POINTS, { notBlank: true }),
    sourceLanguage: language,
    targetLanguages: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_TARGETS,
      uniqueItems: true,
      items: language,
      description: 'must not include sourceLanguage',
    },
    source: nullable(object({ text: text(1, MAX_SOURCE_TEXT_CODE_POINTS) }, ['text'], { closed: true })),
  },
  ['title', 'sourceLanguage', 'targetLanguages'],
  { closed: true },
);

const TARGET_VIEW: JsonSchema = object(
  { targetId: id('it'), language: STRING, state: STRING, generationId: id('ia'), reservationCycle: INTEGER, reservedCharacters: DECIMAL },
  ['targetId', 'language', 'state', 'generationId', 'reservationCycle', 'reservedCharacters'],
);

export const INTERPRETATION_PROJECT_VIEW: JsonSchema = object(
  { projectId: id('ip'), title: STRING, sourceLanguage: STRING, targets: { type: 'array', items: TARGET_VIEW }, createdAt: TIMESTAMP },
  ['projectId', 'title', 'sourceLanguage', 'targets', 'createdAt'],
);

export const RETRY_PLAN_VIEW: JsonSchema = object(
  {
    targetId: id('it'),
    generationId: id('ia'),
    nextReservationCycle: INTEGER,
    characters: INTEGER,
    rateVersion: STRING,
    expiresAt: TIMESTAMP,
  },
  ['targetId', 'generationId', 'nextReservationCycle', 'characters', 'rateVersion', 'expiresAt'],
);

export const RETRY_BODY: JsonSchema = object(
  {
    nextReservationCycle: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
    characters: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    // The plan's rateVersion is printable ASCII; the check counts UTF-16 units, which for
    // such text are its characters.
    rateVersion: {
      type: 'string',
      minLength: 1,
      maxLength: MAX_RATE_VERSION_CHARS,
      pattern: '^[\\x20-\\x7e]*$',
      description: 'as the retry plan gave it',
    },
  },
  ['nextReservationCycle', 'characters', 'rateVersion'],
  { description: 'the values of the current retry plan, unchanged' },
);

export const RETRY_RESULT_VIEW: JsonSchema = object(
  {
    targetId: id('it'),
    language: STRING,
    generationId: id('ia'),
    state: STRING,
    reservationCycle: INTEGER,
    reservedCharacters: DECIMAL,
    message: STRING,
    requestId: id('req'),
  },
  ['targetId', 'language', 'generationId', 'state', 'reservationCycle', 'reservedCharacters', 'message', 'requestId'],
);

// ---------------------------------------------------------------- music

const BRIEF_PROPERTIES = {
  description: text(LIMITS.description[0]!, LIMITS.description[1]!, { notBlank: true }),
  genre: { enum: [...CAPABILITIES.genres] },
  styleNotes: nullable(text(LIMITS.styleNotes[0]!, LIMITS.styleNotes[1]!)),
  moods: {
    type: 'array',
    minItems: LIMITS.moods[0],
    maxItems: LIMITS.moods[1],
    uniqueItems: true,
    items: { enum: [...CAPABILITIES.moods] },
  },
  vocalLanguage: { enum: CAPABILITIES.supportedVocalLanguages.map((l) => l.code) },
  durationSec: { enum: [...DURATIONS_SEC] },
  lyricsMode: { enum: [...LYRICS_MODES] },
  customLyrics: nullable({
    type: 'string',
    maxLength: LIMITS.customLyrics[1],
    description: `with CUSTOM: required, ${LIMITS.customLyrics[0]} to ${LIMITS.customLyrics[1]} code points; with AUTO: absent, null or empty`,
  }),
  vocalStyle: { enum: [...CAPABILITIES.vocalStyles] },
} satisfies Record<(typeof BRIEF_FIELDS)[number], JsonSchema>;

export const BRIEF: JsonSchema = {
  ...object(BRIEF_PROPERTIES, ['description', 'genre', 'moods', 'vocalLanguage', 'durationSec', 'lyricsMode', 'vocalStyle'], {
    closed: true,
    description: 'the creative brief (GET /music/capabilities lists the values)',
  }),
  allOf: [
    {
      if: { properties: { lyricsMode: { const: 'CUSTOM' } } },
      then: {
        required: ['customLyrics'],
        properties: { customLyrics: text(LIMITS.customLyrics[0]!, LIMITS.customLyrics[1]!, { notBlank: true }) },
      },
      else: { properties: { customLyrics: { enum: [null, ''] } } },
    },
  ],
};

export const CAPABILITIES_VIEW: JsonSchema = object(
  {
    genres: { type: 'array', items: STRING },
    moods: { type: 'array', items: STRING },
    supportedVocalLanguages: { type: 'array', items: object({ code: STRING, name: STRING }, ['code', 'name']) },
    vocalStyles: { type: 'array', items: STRING },
  },
  ['genres', 'moods', 'supportedVocalLanguages', 'vocalStyles'],
);

const QUOTE: JsonSchema = object(
  { quoteId: id('mq'), characters: DECIMAL, arrangementVersion: INTEGER, expiresAt: TIMESTAMP, createdAt: TIMESTAMP },
  ['quoteId', 'characters', 'arrangementVersion', 'expiresAt'],
);

export const MUSIC_PROJECT_VIEW: JsonSchema = object(
  {
    projectId: id('mup'),
    projectStatus: { type: 'string', description: 'ARRANGEMENT_GENERATING, ARRANGEMENT_READY, ARRANGEMENT_FAILED or GENERATION_QUEUED' },
    arrangementVersion: INTEGER,
    activeQuote: nullable(QUOTE),
    requestId: id('req'),
    brief: { type: 'object' },
    arrangement: { type: ['object', 'null'] },
    generation: { type: ['object', 'null'] },
    createdAt: TIMESTAMP,
    updatedAt: TIMESTAMP,
  },
  ['projectId', 'projectStatus', 'arrangementVersion', 'activeQuote', 'requestId', 'brief', 'createdAt', 'updatedAt'],
);

export const QUOTE_VIEW: JsonSchema = {
  ...QUOTE,
  properties: { ...(QUOTE.properties as object), projectId: id('mup') },
  required: [...(QUOTE.required as string[]), 'projectId'],
};

export const GENERATE_BODY: JsonSchema = object({ quoteId: { type: 'string', minLength: 1, description: "the project's active quote" } }, [
  'quoteId',
]);

// ---------------------------------------------------------------- voices

export const VOICE_LIST_QUERY = { modelId: { schema: { enum: [...KNOWN_MODEL_IDS] }, description: 'only the voices this model can take' } };

export const VOICE_ITEM: JsonSchema = object(
  { id: STRING, name: STRING, type: STRING, feature: STRING, channel: STRING, fileCount: INTEGER, totalFileSize: INTEGER },
  ['id', 'name', 'type', 'feature', 'channel', 'fileCount', 'totalFileSize'],
);

const voiceName = text(1, MAX_VOICE_NAME_CODE_POINTS, { notBlank: true });
const recordings: JsonSchema = {
  type: 'array',
  minItems: 1,
  maxItems: MAX_FILES_PER_VOICE,
  items: { type: 'string', contentMediaType: 'application/octet-stream' },
  description: `mp3, wav or m4a (checked by content), each at most ${MAX_FILE_BYTES} bytes; a voice holds at most ${MAX_FILES_PER_VOICE}`,
};

export const VOICE_CREATE_BODY: JsonSchema = object({ name: voiceName, files: recordings }, ['name', 'files'], { closed: true });
export const VOICE_IMPROVE_BODY: JsonSchema = object({ files: recordings }, ['files'], { closed: true });
export const VOICE_ID_VIEW: JsonSchema = object({ id: id('vc') }, ['id']);
export const VOICE_IMPROVE_VIEW: JsonSchema = object({ id: id('vc'), fileCount: INTEGER, totalFileSize: INTEGER }, [
  'id',
  'fileCount',
  'totalFileSize',
]);

export const DESIGN_CREATE_BODY: JsonSchema = object(
  {
    description: text(1, MAX_DESCRIPTION_CODE_POINTS, { notBlank: true, description: 'what the voice sounds like' }),
    previewText: text(1, MAX_PREVIEW_TEXT_CODE_POINTS, { notBlank: true }),
    callbackUrl: nullable({
      type: 'string',
      format: 'uri',
      maxLength: MAX_CALLBACK_URL_CHARS,
      pattern: '^[hH][tT][tT][pP][sS]?://',
      description:
        'http(s), no credentials; loopback, private and metadata destinations are refused (CALLBACK_URL_FORBIDDEN, docs/security.md)',
    }),
  },
  ['description', 'previewText'],
  { closed: true },
);

export const DESIGN_CREATED_VIEW: JsonSchema = object(
  { designId: id('vd'), status: STRING, callbackSecret: nullable({ type: 'string', description: 'verifies the callback signature' }) },
  ['designId', 'status', 'callbackSecret'],
);

export const DESIGN_VIEW: JsonSchema = object(
  {
    designId: id('vd'),
    status: { type: 'string', description: 'PENDING, COMPLETED or FAILED' },
    description: STRING,
    previewText: STRING,
    parameters: { type: 'object' },
    preview: nullable(object({ url: STRING, format: { const: 'wav' }, fileSize: INTEGER }, ['url', 'format'])),
    error: nullable(STRING),
    callback: nullable(
      object({ url: STRING, state: STRING, attempts: INTEGER, nextAttemptAt: nullable(TIMESTAMP) }, ['url', 'state', 'attempts']),
    ),
    createdAt: TIMESTAMP,
    updatedAt: TIMESTAMP,
  },
  ['designId', 'status', 'description', 'previewText', 'preview', 'callback', 'createdAt', 'updatedAt'],
);

export const DESIGN_SAVE_BODY: JsonSchema = object({ name: voiceName, designId: { type: 'string', minLength: 1 } }, ['name', 'designId']);

// ---------------------------------------------------------------- dashboard user groups

const groupId = nullable(text(1, MAX_GROUP_ID_CHARS, { notBlank: true }));

export const USER_GROUP_BODY: JsonSchema = {
  ...object(
    {
      name: groupId,
      user_group_id: groupId,
      mapping: { type: ['object', 'null'], description: 'schema id to data source' },
      properties: { type: ['object', 'null'], description: 'variables for dashboards and the SQL editor' },
      environment: { enum: [...ENVIRONMENTS, null] },
    },
    [],
    { closed: true, description: 'user_group_id identifies the group; when it is absent, name does' },
  ),
  anyOf: [
    { required: ['user_group_id'], properties: { user_group_id: { type: 'string' } } },
    { required: ['name'], properties: { name: { type: 'string' } } },
  ],
};

export const USER_GROUP_DELETE_BODY: JsonSchema = object(
  { user_group_id: { type: 'string', minLength: 1 }, current_token: { type: 'string', minLength: 1 } },
  ['user_group_id', 'current_token'],
);

const USER_GROUP: JsonSchema = object(
  {
    team_id: INTEGER,
    token: { type: 'string', pattern: '^ugt_' },
    name: nullable(STRING),
    provided_id: STRING,
    properties: { type: ['object', 'null'] },
  },
  ['team_id', 'token', 'provided_id'],
);

export const GET_USER_VIEW: JsonSchema = object({ success: { const: 1 }, new_user_group: { type: 'boolean' }, user_group: USER_GROUP }, [
  'success',
  'new_user_group',
  'user_group',
]);
export const PUT_USER_VIEW: JsonSchema = object(
  {
    success: { const: 1 },
    user_group: {
      ...USER_GROUP,
      properties: { ...(USER_GROUP.properties as object), is_new: { enum: [0, 1] }, environment: { enum: [...ENVIRONMENTS, null] } },
      required: [...(USER_GROUP.required as string[]), 'is_new'],
    },
  },
  ['success', 'user_group'],
);
export const DELETE_USER_VIEW: JsonSchema = object({ success: { const: 1 } }, ['success']);
