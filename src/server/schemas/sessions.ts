// Real-time sessions (routes/sessions.ts): every route's shapes, declared once. The create and
// resume bodies are checked by the handlers (src/core/session-options.ts, the calls core,
// parseSampleCount): the language rule depends on the node's recognizer and each refusal names
// its field in the validator's own words, so those bodies are stated for the document only
// (servedWithout), from the same constants the validators use; the served document narrows
// languageHint to the node's languages (recognizerLanguages, openapi/schemas.ts).
import { Type, type TOptional, type TSchema } from 'typebox';
import { INPUT_ENCODING_NAMES, DEFAULT_INPUT_ENCODING } from '../../core/audio/encodings.js';
import { MAX_CALL_LEGS } from '../../core/calls.js';
import { UINT64_MAX } from '../../core/capture-cursor.js';
import {
  DEFAULT_TITLE,
  ENTITY_CATEGORIES,
  LANGUAGE_TAG,
  MAX_ADDITIONAL_LANGUAGE_HINTS,
  MAX_LANGUAGE_TAG_CHARS,
  MAX_REWRITE_INSTRUCTION_CHARS,
  MAX_TITLE_CHARS,
  MAX_VOCABULARY_HINTS,
  MAX_VOCABULARY_HINT_CHARS,
  OPTION_KEYS,
  OPTION_RANGES,
  REDACTION_POLICIES,
  type SegmentCommitMode,
} from '../../core/session-options.js';
import { API, MODEL_ID } from '../context.js';
import { bodyOptional, documented, envelope, operation, PATH_PARAM, type RouteTable } from '../openapi/route-schema.js';
import { recognizerLanguages } from '../openapi/schemas.js';
import { ANY_OBJECT, CALL_ID, DECIMAL, LEG_FIELDS, nullable, orNull, prefixed, SPEAKER, TIMESTAMP } from './shared.js';

const BASE = `${API}/stt/realtime/sessions`;
const TAG = 'Real-time sessions';

const SESSION_VIEW = Type.Object({
  sessionId: prefixed('rts'),
  transcriptionId: prefixed('stt'),
  status: Type.String({ description: 'RECORDING, PAUSED or CLOSED; once closed, the transcription task status' }),
  modelId: Type.Unsafe<string>({ type: 'string', const: MODEL_ID }),
  streamUrl: Type.String({ description: 'socket path (docs/protocol.md)' }),
  title: Type.String(),
  languageHint: nullable(Type.String()),
  effectiveOptions: ANY_OBJECT('every option in effect, defaults resolved'),
  epoch: Type.Integer(),
  capturedSamples: DECIMAL,
  ...LEG_FIELDS,
  createdAt: TIMESTAMP,
  updatedAt: TIMESTAMP,
});

const ID = Type.Object({ sessionId: PATH_PARAM });

const range = (r: { min: number; max: number; integer: boolean }) =>
  orNull(r.integer ? Type.Integer({ minimum: r.min, maximum: r.max }) : Type.Number({ minimum: r.min, maximum: r.max }));
const LANGUAGE = { maxLength: MAX_LANGUAGE_TAG_CHARS, pattern: LANGUAGE_TAG.source };
const segmentCommitModes = ['manual', 'vad'] as const satisfies readonly SegmentCommitMode[];

const SESSION_OPTIONS = {
  inputEncoding: orNull(
    Type.Enum([...INPUT_ENCODING_NAMES], {
      default: DEFAULT_INPUT_ENCODING,
      description: 'the audio the socket carries; its rate is the session timeline',
    }),
  ),
  segmentCommitMode: orNull(
    Type.Enum([...segmentCommitModes], {
      default: 'manual',
      description: 'manual: the client commits segments; vad: the server cuts them at pauses',
    }),
  ),
  additionalLanguageHints: orNull(
    Type.Array(Type.String(LANGUAGE), {
      maxItems: MAX_ADDITIONAL_LANGUAGE_HINTS,
      description: 'candidate languages; unsupported ones are reported in a notice, not refused',
    }),
  ),
  speechDetectionThreshold: range(OPTION_RANGES.speechDetectionThreshold),
  commitSilenceMs: range(OPTION_RANGES.commitSilenceMs),
  minimumSpeechMs: range(OPTION_RANGES.minimumSpeechMs),
  minimumSilenceMs: range(OPTION_RANGES.minimumSilenceMs),
  includeAlignment: orNull(
    Type.Boolean({ description: 'default true, false when suppressBackgroundSpeech is true; both true is refused' }),
  ),
  includeDetectedLanguage: orNull(Type.Boolean()),
  vocabularyHints: orNull(
    Type.Array(Type.String({ minLength: 1, maxLength: MAX_VOCABULARY_HINT_CHARS }), { maxItems: MAX_VOCABULARY_HINTS }),
  ),
  removeDisfluencies: orNull(Type.Boolean()),
  entityCategories: orNull(
    Type.Array(Type.Enum([...ENTITY_CATEGORIES]), {
      maxItems: ENTITY_CATEGORIES.length,
      uniqueItems: true,
      description: 'not with rewriteInstruction',
    }),
  ),
  rewriteInstruction: orNull(
    Type.String({ minLength: 1, maxLength: MAX_REWRITE_INSTRUCTION_CHARS, description: 'not with entityCategories' }),
  ),
  suppressBackgroundSpeech: orNull(Type.Boolean({ description: 'not with includeAlignment true' })),
  heartbeatIntervalMs: range(OPTION_RANGES.heartbeatIntervalMs),
  processingContentStorage: orNull(Type.Boolean()),
  readableText: orNull(Type.Boolean({ default: true, description: 'numbers, dates and money as digits, sentence case (docs/options.md)' })),
  redact: orNull(
    Type.Array(Type.Enum([...REDACTION_POLICIES]), {
      maxItems: REDACTION_POLICIES.length,
      uniqueItems: true,
      description:
        'sensitive spans become tokens such as [CARD_NUMBER] or [NUMBER] in partials, finals and every stored or sent output; added to the account default, which a request cannot remove (docs/redaction.md)',
    }),
  ),
  recordAudio: orNull(
    Type.Boolean({
      description: 'keep the audio as FLAC, redacted spans masked by a tone; GET .../transcriptions/{id}/audio (docs/recordings.md)',
    }),
  ),
} satisfies Record<(typeof OPTION_KEYS)[number], TSchema>;

const optional = <T extends Record<string, TSchema>>(fields: T) =>
  Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, Type.Optional(v)])) as { [K in keyof T]: TOptional<T[K]> };

/** The options' mutual exclusions, which validateCreateSession checks after each option alone. */
const OPTION_EXCLUSIONS = [
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

const CREATE_BODY = Type.Object(
  {
    title: Type.Optional(
      orNull(Type.String({ maxLength: MAX_TITLE_CHARS, description: `History title; empty or absent: "${DEFAULT_TITLE}"` })),
    ),
    languageHint: Type.Optional(
      orNull(
        Type.String({
          ...LANGUAGE,
          description:
            'the spoken language, a tag such as "en" or "pt-BR"; refused unless a loaded model recognizes its primary subtag (GET /readyz, engine.languages)',
          ...recognizerLanguages(),
        }),
      ),
    ),
    options: Type.Optional(
      orNull(
        Type.Object(optional(SESSION_OPTIONS), {
          additionalProperties: false,
          description: 'processing controls; unknown keys are refused',
          allOf: OPTION_EXCLUSIONS,
        }),
      ),
    ),
    // The fields that make the session a leg of a call: both or neither.
    callId: Type.Optional(
      Type.String({ ...CALL_ID, description: "join this call (another account's or unknown: NOT_FOUND); with speaker" }),
    ),
    speaker: Type.Optional(
      Type.String({
        ...SPEAKER,
        description: `the leg's speaker in the call, unique there (CALL_SPEAKER_TAKEN); with callId; at most ${MAX_CALL_LEGS} legs a call`,
      }),
    ),
  },
  { additionalProperties: false, ...documented({ dependentRequired: { callId: ['speaker'], speaker: ['callId'] } }), ...bodyOptional() },
);

/** A decimal string of at most max's digit count whose value is <= max, leading zeros allowed:
 * strings of the same length compare as numbers do, digit by digit. */
function decimalAtMost(max: bigint): string {
  const digits = max.toString();
  const n = digits.length;
  const alternatives: string[] = [];
  if (n > 1) alternatives.push(`[0-9]{1,${n - 1}}`);
  for (let i = 0; i < n; i++) {
    const d = Number(digits[i]);
    if (d === 0) continue;
    const rest = n - 1 - i;
    alternatives.push(`${digits.slice(0, i)}[0-${d - 1}]${rest > 0 ? `[0-9]{${rest}}` : ''}`);
  }
  alternatives.push(digits);
  return `^(?:${alternatives.join('|')})$`;
}

const RESUME_BODY = Type.Object(
  {
    capturedSamples: Type.Optional(
      Type.Union(
        [
          Type.String({ pattern: decimalAtMost(UINT64_MAX), description: 'decimal digits, at most 2^64-1' }),
          Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
          Type.Null(),
        ],
        { description: 'samples the client captured in the whole session (the capture cursor); a decimal string is preferred' },
      ),
    ),
  },
  bodyOptional(),
);

const RESUME_VIEW = Type.Object({
  sessionId: prefixed('rts'),
  transcriptionId: prefixed('stt'),
  status: Type.Literal('RECORDING'),
  epoch: Type.Integer(),
  sampleOffset: Type.Literal(0),
  capturedSamples: DECIMAL,
  clientCapturedSamples: Type.Optional(nullable(DECIMAL)),
  missingSamples: Type.Optional(
    nullable(Type.String({ pattern: '^-?[0-9]+$' }), { description: 'samples to re-send from sampleOffset 0' }),
  ),
  accepting: Type.Boolean(),
  streamUrl: Type.String(),
});

export const SESSION_ROUTES = {
  create: {
    method: 'POST',
    url: BASE,
    schema: {
      ...operation({
        operationId: 'createSession',
        tag: TAG,
        auth: 'accessKey',
        idempotencyKey: 'required',
        summary: 'Create a real-time session',
        description:
          'The same Idempotency-Key and body return the same session (header idempotent-replayed: true); another body under the key is IDEMPOTENCY_CONFLICT. Lengths count code points.',
        errors: ['VALIDATION_FAILED', 'IDEMPOTENCY_CONFLICT', 'NOT_FOUND', 'CALL_SPEAKER_TAKEN', 'CALL_LEG_LIMIT'],
      }),
      body: CREATE_BODY,
      response: { 200: envelope(SESSION_VIEW, 'the session, RECORDING') },
    },
  },
  get: {
    method: 'GET',
    url: `${BASE}/:sessionId`,
    schema: {
      ...operation({ operationId: 'getSession', tag: TAG, auth: 'accessKey', summary: 'Read a session', errors: ['NOT_FOUND'] }),
      params: ID,
      response: { 200: envelope(SESSION_VIEW, 'the session') },
    },
  },
  resume: {
    method: 'POST',
    url: `${BASE}/:sessionId/resume`,
    schema: {
      ...operation({
        operationId: 'resumeSession',
        tag: TAG,
        auth: 'accessKey',
        summary: 'Open the next epoch of a session',
        description:
          'Frames of the new epoch start at sampleOffset 0; a client that captured more than the server holds re-sends missingSamples (docs/protocol.md, Resume).',
        errors: ['VALIDATION_FAILED', 'NOT_FOUND', 'SESSION_CLOSED', 'SESSION_BUSY', 'CAPTURE_CURSOR_MISMATCH', 'SESSION_MOVED'],
      }),
      params: ID,
      body: RESUME_BODY,
      response: { 200: envelope(RESUME_VIEW, 'the new epoch') },
    },
  },
  close: {
    method: 'POST',
    url: `${BASE}/:sessionId/close`,
    schema: {
      ...operation({
        operationId: 'closeSession',
        tag: TAG,
        auth: 'accessKey',
        summary: 'Close a session without a socket',
        description:
          'Ends a session that never streamed or whose client is gone, as a client `close` would: held audio is transcribed first, an attached socket is sent `closed`. 200 with status COMPLETED; 202 with status PROCESSING while the close waits for deferred recognition (docs/protocol.md). Closing a closed session answers its view again.',
        errors: ['NOT_FOUND', 'SESSION_BUSY', 'ENGINE_BUSY', 'ENGINE_FAILED'],
      }),
      params: ID,
      response: {
        200: envelope(SESSION_VIEW, 'the closed session'),
        202: envelope(SESSION_VIEW, 'the close waits for deferred recognition: status PROCESSING'),
      },
    },
  },
  tickets: {
    method: 'POST',
    url: `${BASE}/:sessionId/tickets`,
    schema: {
      ...operation({
        operationId: 'createTicket',
        tag: TAG,
        auth: 'accessKey',
        summary: 'Issue a single-use browser ticket for the stream socket',
        errors: ['NOT_FOUND', 'SESSION_CLOSED'],
      }),
      params: ID,
      response: {
        200: envelope(
          Type.Object({
            ticketId: prefixed('tkt'),
            sessionId: prefixed('rts'),
            streamUrl: Type.String(),
            expiresInSeconds: Type.Integer(),
            ticket: Type.String({ description: 'single use; goes in ?ticket= of the socket URL' }),
          }),
          'the ticket',
        ),
      },
    },
  },
} as const satisfies RouteTable['routes'];

export const SESSION_TABLE: RouteTable = { routes: SESSION_ROUTES };
