// History rows and transcript downloads (routes/transcriptions.ts): the shapes, declared once.
// The row as clients see it (history-views.ts) is typed from TRANSCRIPTION_VIEW.
import { Type, type Static } from 'typebox';
import { API } from '../context.js';
import { envelope, invalid, operation, PATH_PARAM, type RouteTable } from '../openapi/route-schema.js';
import { ANY_OBJECT, DECIMAL, LEG_FIELDS, nullable, prefixed, TIMESTAMP } from './shared.js';

const BASE = `${API}/stt/transcriptions`;
const TAG = 'History and batch';

export const FORMATS = {
  json: 'application/json; charset=utf-8',
  txt: 'text/plain; charset=utf-8',
  srt: 'application/x-subrip; charset=utf-8',
  vtt: 'text/vtt; charset=utf-8',
} as const;
export type Format = keyof typeof FORMATS;
const FORMAT_NAMES = Object.keys(FORMATS) as Format[];

export const TRANSCRIPTION_VIEW = Type.Object({
  transcriptionId: prefixed('stt'),
  kind: Type.Enum(['realtime', 'batch']),
  sessionId: nullable(prefixed('rts')),
  title: Type.String(),
  status: Type.String(),
  languageHint: nullable(Type.String()),
  sampleRateHz: Type.Integer(),
  audioSamples: DECIMAL,
  audioDurationMs: Type.Integer(),
  ...LEG_FIELDS,
  createdAt: TIMESTAMP,
  updatedAt: TIMESTAMP,
  completedAt: nullable(TIMESTAMP),
  endReason: Type.Union([Type.Literal('session.closed'), Type.Literal('session.expired'), Type.Null()], {
    description:
      'real-time rows once ended: session.closed (a close) or session.expired (the idle expiry); null while open and for batch rows',
  }),
  effectiveOptions: Type.Optional(ANY_OBJECT('batch rows only')),
  notices: Type.Optional(Type.Array(Type.Unknown(), { description: 'batch rows only' })),
  error: Type.Optional(nullable(Type.String(), { description: 'batch rows only' })),
});
export type TranscriptionView = Static<typeof TRANSCRIPTION_VIEW>;

const ID = Type.Object({ transcriptionId: PATH_PARAM });

export const TRANSCRIPTION_ROUTES = {
  get: {
    method: 'GET',
    url: `${BASE}/:transcriptionId`,
    schema: {
      ...operation({ operationId: 'getTranscription', tag: TAG, auth: 'accessKey', summary: 'Read a History row', errors: ['NOT_FOUND'] }),
      params: ID,
      response: { 200: envelope(TRANSCRIPTION_VIEW, 'the row') },
    },
  },
  transcript: {
    method: 'GET',
    url: `${BASE}/:transcriptionId/transcript`,
    schema: {
      ...operation({
        operationId: 'getTranscript',
        tag: TAG,
        auth: 'accessKey',
        summary: 'Download the transcript (not enveloped)',
        errors: ['NOT_FOUND'],
      }),
      params: ID,
      querystring: Type.Object({
        format: Type.Optional(
          Type.Enum(FORMAT_NAMES, {
            default: 'json',
            description: 'json, txt, srt or vtt',
            ...invalid(`must be one of ${FORMAT_NAMES.join(', ')}`),
          }),
        ),
      }),
      produces: Object.values(FORMATS).map((t) => t.split(';')[0]!),
      response: { 200: Type.String({ description: 'the transcript as an attachment' }) },
    },
  },
  delete: {
    method: 'DELETE',
    url: `${BASE}/:transcriptionId`,
    schema: {
      ...operation({
        operationId: 'deleteTranscription',
        tag: TAG,
        auth: 'accessKey',
        summary: 'Erase a History row: its segments, transcript, batch job and audio, and its session (docs/redaction.md)',
        description:
          "Only a row that has ended (COMPLETED or FAILED). Another account's row reads as not found. Recorded in the audit trail.",
        errors: ['NOT_FOUND', 'TRANSCRIPTION_IN_PROGRESS'],
      }),
      params: ID,
      response: { 200: envelope(Type.Object({ transcriptionId: Type.String(), deleted: Type.Literal(true) }), 'erased') },
    },
  },
} as const satisfies RouteTable['routes'];

export const TRANSCRIPTION_TABLE: RouteTable = { routes: TRANSCRIPTION_ROUTES };
