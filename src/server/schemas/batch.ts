// Batch upload and the History list (routes/batch.ts, docs/api.md): the shapes, declared once.
// The upload is multipart/form-data read as a stream (the file goes to disk under its size
// limit as it arrives), so its body is stated for the document only (servedWithout): the part
// reader and src/batch/submit.ts check it with today's answers. So are the optional
// Idempotency-Key (refused as IDEMPOTENCY_KEY_REQUIRED when malformed) and the list's query,
// whose values are strings on the wire and whose refusals are the parsers' (a page size out
// of range, a cursor this list did not issue).
import { Type, type TSchema } from 'typebox';
import { SPEAKER_PATTERN } from '../../core/calls.js';
import { LANGUAGE_TAG, MAX_LANGUAGE_TAG_CHARS, MAX_TITLE_CHARS, REDACTION_POLICIES } from '../../core/session-options.js';
import { API } from '../context.js';
import { envelope, idempotencyKeyHeader, operation, type RouteTable } from '../openapi/route-schema.js';

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

const BASE = `${API}/stt/transcriptions`;
const TAG = 'History and batch';
const TIMESTAMP = Type.String({ description: 'ISO 8601 UTC time' });
const DECIMAL = Type.String({ pattern: '^[0-9]+$', description: 'a 64-bit count as a decimal string' });
const id = (prefix: string) => Type.String({ pattern: `^${prefix}_` });
const nullable = <T extends TSchema>(t: T, options: Record<string, unknown> = {}) => Type.Union([t, Type.Null()], options);

/** A History row (history-views.ts transcriptionView). */
const TRANSCRIPTION_VIEW_FIELDS = {
  transcriptionId: id('stt'),
  kind: Type.Enum(['realtime', 'batch']),
  sessionId: Type.Optional(nullable(id('rts'))),
  title: Type.String(),
  status: Type.String(),
  languageHint: Type.Optional(nullable(Type.String())),
  sampleRateHz: Type.Integer(),
  audioSamples: DECIMAL,
  audioDurationMs: Type.Integer(),
  callId: Type.Optional(nullable(Type.String({ description: 'a call id (POST .../stt/calls)' }))),
  speaker: Type.Optional(nullable(Type.String({ pattern: SPEAKER_PATTERN.source, description: "the leg's speaker label" }))),
  createdAt: TIMESTAMP,
  updatedAt: TIMESTAMP,
  completedAt: Type.Optional(nullable(TIMESTAMP)),
  effectiveOptions: Type.Optional(Type.Object({}, { description: 'batch rows only' })),
  notices: Type.Optional(Type.Array(Type.Unknown(), { description: 'batch rows only' })),
  error: Type.Optional(nullable(Type.String(), { description: 'batch rows only' })),
};

const BATCH_JOB_VIEW = Type.Object({
  ...TRANSCRIPTION_VIEW_FIELDS,
  charactersCharged: Type.String({ pattern: '^[0-9]+$', description: 'what the upload cost (all legs of a multichannel upload)' }),
  source: nullable(Type.Object({}), { description: 'what ffprobe found in the file' }),
  legs: Type.Optional(
    Type.Array(
      Type.Object(
        { speaker: Type.String(), transcriptionId: id('stt'), status: Type.String(), charactersCharged: DECIMAL },
        { additionalProperties: false },
      ),
      { description: 'multichannel uploads only: one batch leg per channel, in channel order' },
    ),
  ),
});

const UPLOAD_BODY = Type.Object(
  {
    file: Type.String({
      contentMediaType: 'application/octet-stream',
      description: 'the audio file (any format ffmpeg reads; identified by content)',
    }),
    title: Type.Optional(Type.String({ maxLength: MAX_TITLE_CHARS })),
    languageHint: Type.Optional(
      nullable(Type.String({ maxLength: MAX_LANGUAGE_TAG_CHARS, pattern: LANGUAGE_TAG.source }), {
        description:
          'the spoken language, a tag such as "en" or "pt-BR"; refused unless a loaded model recognizes its primary subtag (GET /readyz, engine.languages)',
      }),
    ),
    options: Type.Optional(
      Type.String({
        contentMediaType: 'application/json',
        description: `the session options as a JSON object, less inputEncoding and segmentCommitMode, with redact (a list of ${REDACTION_POLICIES.join(', ')}: docs/redaction.md) applied, plus the batch-only multichannel (boolean: a 2-channel file becomes a call, one leg per channel) and channelSpeakers (2 distinct speaker labels, default ["agent","customer"]; docs/calls.md)`,
      }),
    ),
  },
  { additionalProperties: false },
);

export const BATCH_ROUTES = {
  upload: {
    method: 'POST',
    url: BASE,
    schema: {
      ...operation({
        operationId: 'createBatchTranscription',
        tag: TAG,
        auth: 'accessKey',
        summary: 'Upload an audio file for batch transcription',
        description:
          'multipart/form-data: one file part `file` and the text fields title, languageHint, options (a JSON object). Charged before it is queued (docs/api.md, Batch transcription).',
        errors: ['IDEMPOTENCY_KEY_REQUIRED', 'VALIDATION_FAILED', 'UNSUPPORTED_AUDIO', 'INSUFFICIENT_CHARACTERS', 'IDEMPOTENCY_CONFLICT'],
      }),
      headers: idempotencyKeyHeader(false),
      consumes: ['multipart/form-data'],
      body: UPLOAD_BODY,
      response: { 200: envelope(BATCH_JOB_VIEW, 'the queued job') },
    },
  },
  list: {
    method: 'GET',
    url: BASE,
    schema: {
      ...operation({ operationId: 'listTranscriptions', tag: TAG, auth: 'accessKey', summary: 'History, newest first', errors: [] }),
      querystring: Type.Object({
        limit: Type.Optional(
          Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE, description: 'rows per page' }),
        ),
        cursor: Type.Optional(Type.String({ description: 'nextCursor of the previous page' })),
      }),
      response: {
        200: envelope(
          Type.Object({ items: Type.Array(Type.Object(TRANSCRIPTION_VIEW_FIELDS)), nextCursor: nullable(Type.String()) }),
          'one page',
        ),
      },
    },
  },
} as const satisfies RouteTable['routes'];

export const BATCH_TABLE: RouteTable = { batchOnly: true, routes: BATCH_ROUTES };
