// OpenAI's transcription API (src/server/facades/openai, docs/compat.md): POST
// /v1/audio/transcriptions, GET /v1/models and the Realtime transcription socket, declared
// once. Their answers and errors are OpenAI's shapes (errors.ts). The multipart body is read
// as a stream by the route, which names a refused field in OpenAI's words, and the socket's
// query by its handshake, so both are stated for the document only (servedWithout).
import { Type } from 'typebox';
import { OPENAI_MODEL_ALIASES, RESPONSE_FORMATS } from '../facades/openai/names.js';
import type { RouteTable } from '../openapi/route-schema.js';
import { facadeErrors, facadeOperation } from './shared.js';

const TAG = 'OpenAI-compatible';

export const OPENAI_SECURITY_SCHEMES = {
  openAiBearer: {
    type: 'http',
    scheme: 'bearer',
    description: "`Authorization: Bearer <access key>`: the account access key (sk_...), as OpenAI's SDK sends its API key",
  },
} as const;
const SECURITY = [{ openAiBearer: [] }];

const OPENAI_ERROR = Type.Object({
  error: Type.Object({
    message: Type.String(),
    type: Type.Enum(['invalid_request_error', 'insufficient_quota', 'server_error']),
    param: Type.Union([Type.String(), Type.Null()], { description: 'the form field at fault' }),
    code: Type.Union([Type.String(), Type.Null()], {
      description:
        'invalid_api_key, model_not_found, unknown_parameter, invalid_file_format, file_too_large, insufficient_quota, server_overloaded, timeout',
    }),
  }),
});
const errors = (extra: Record<number, string> = {}) =>
  facadeErrors(OPENAI_ERROR, { 401: 'a missing or unknown access key (code invalid_api_key)', ...extra, 500: 'a server fault' });

const WAIT =
  'The request waits for the transcription up to 300 s; past that the job is cancelled, nothing is charged, and the answer is 504.';

const TRANSCRIPTION_JSON = Type.Object(
  {
    text: Type.String(),
    usage: Type.Optional(Type.Object({ type: Type.Optional(Type.Literal('duration')), seconds: Type.Optional(Type.Integer()) })),
    task: Type.Optional(Type.Literal('transcribe')),
    language: Type.Optional(Type.String({ description: "the language's English name, lower case" })),
    duration: Type.Optional(Type.Number({ description: 'seconds' })),
    segments: Type.Optional(
      Type.Array(
        Type.Object({
          id: Type.Integer(),
          seek: Type.Optional(Type.Literal(0)),
          start: Type.Number(),
          end: Type.Number(),
          text: Type.String(),
          tokens: Type.Optional(Type.Array(Type.Unknown(), { maxItems: 0 })),
          temperature: Type.Optional(Type.Literal(0)),
          avg_logprob: Type.Optional(Type.Number({ description: 'mean log of the word confidences' })),
          compression_ratio: Type.Optional(Type.Number()),
          no_speech_prob: Type.Optional(Type.Literal(0)),
        }),
      ),
    ),
    words: Type.Optional(Type.Array(Type.Object({ word: Type.String(), start: Type.Number(), end: Type.Number() }))),
  },
  {
    description:
      'json: {text, usage}; verbose_json adds task, language, duration, and segments and/or words as timestamp_granularities[] asks',
  },
);

const UPLOAD = Type.Object({
  file: Type.String({ contentMediaType: 'application/octet-stream', description: 'the audio (any format the native batch upload reads)' }),
  model: Type.String({ description: `a model GET /v1/models lists: scribed-<engine>, or ${OPENAI_MODEL_ALIASES.join(', ')}` }),
  language: Type.Optional(Type.String({ description: 'the native languageHint (a language the recognizer has)' })),
  prompt: Type.Optional(Type.String({ description: 'vocabulary hints, comma- or line-separated (native vocabularyHints)' })),
  response_format: Type.Optional(Type.Enum([...RESPONSE_FORMATS], { default: 'json' })),
  'timestamp_granularities[]': Type.Optional(
    Type.Array(Type.Enum(['word', 'segment']), { description: 'with verbose_json only; default segment' }),
  ),
  temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: 'accepted and ignored' })),
  stream: Type.Optional(
    Type.Boolean({
      default: false,
      description:
        'server-sent transcript.text.delta and transcript.text.done events, sent when the job is done; json only; every model name',
    }),
  ),
});

export const OPENAI_ROUTES = {
  transcribe: {
    method: 'POST',
    url: '/v1/audio/transcriptions',
    schema: {
      ...facadeOperation(
        {
          operationId: 'openAiCreateTranscription',
          tag: TAG,
          summary: "Transcribe an audio file as OpenAI's POST /v1/audio/transcriptions does",
          description: `A batch job of the account (History row, Characters charged as the native batch upload). ${WAIT} Unknown fields are refused (unknown_parameter). docs/compat.md.`,
        },
        SECURITY,
      ),
      consumes: ['multipart/form-data'],
      body: UPLOAD,
      response: {
        200: {
          description: 'the transcript: JSON for json and verbose_json, text for text, srt and vtt',
          content: {
            'application/json': { schema: TRANSCRIPTION_JSON },
            'text/plain': { schema: Type.String() },
            'text/event-stream': {
              schema: Type.String({
                description:
                  'with stream: `data: {"type":"transcript.text.delta","delta"}` per segment, then `data: {"type":"transcript.text.done","text","usage"}`',
              }),
            },
          },
        },
        ...errors({
          400: 'a bad field, an unknown model or field, or a file that is not audio',
          413: 'the file is over the upload limit',
          429: 'the balance does not cover the audio (insufficient_quota)',
          503: 'every recognizer is busy',
          504: 'the wait bound passed; the job was cancelled and refunded',
        }),
      },
    },
  },
  models: {
    method: 'GET',
    url: '/v1/models',
    schema: {
      ...facadeOperation(
        {
          operationId: 'openAiListModels',
          tag: TAG,
          summary: "The models this node serves, as OpenAI's GET /v1/models lists them",
          description: `scribed-<engine> (the node's recognizer) and the OpenAI names served by it: ${OPENAI_MODEL_ALIASES.join(', ')}.`,
        },
        SECURITY,
      ),
      response: {
        200: Type.Object(
          {
            object: Type.Literal('list'),
            data: Type.Array(
              Type.Object({ id: Type.String(), object: Type.Literal('model'), created: Type.Integer(), owned_by: Type.Literal('scribed') }),
            ),
          },
          { description: 'the list' },
        ),
        ...errors(),
      },
    },
  },
  realtime: {
    method: 'GET',
    url: '/v1/realtime',
    schema: {
      ...facadeOperation(
        {
          operationId: 'openAiRealtimeTranscription',
          tag: TAG,
          summary: "Stream audio as to OpenAI's Realtime API for transcription (GET /v1/realtime?intent=transcription)",
          description: [
            "A WebSocket, as openai's OpenAIRealtimeWS opens it with intent transcription (over wss: put TLS in front, docs/compat.md). Client events: session.update (type transcription) or transcription_session.update, input_audio_buffer.append (base64 pcm16 at 24 kHz, g711_ulaw or g711_alaw), .commit, .clear.",
            'Server events: session.created/updated, input_audio_buffer.speech_started/speech_stopped/committed/cleared, conversation.item.input_audio_transcription.delta/completed, error. Behind it a native real-time session of the account (History row, Characters), opened at the first audio and closed with the socket.',
          ].join(' '),
        },
        SECURITY,
      ),
      querystring: Type.Object({
        intent: Type.Literal('transcription', { description: 'transcription sessions only; model= and call_id= are refused' }),
      }),
      response: {
        101: Type.Null({ description: 'the upgrade: the session is open (session.created)' }),
        ...facadeErrors(OPENAI_ERROR, {
          400: 'no intent=transcription, or a model or call_id socket',
          401: 'a missing or unknown access key (code invalid_api_key)',
          429: 'the account streams as many sessions on this node as it may',
          500: 'a server fault',
          503: 'every recognizer is busy',
        }),
      },
    },
  },
} as const satisfies RouteTable['routes'];

/** Served on every node: the Realtime socket drives a native real-time session. */
export const OPENAI_REALTIME_TABLE: RouteTable = { routes: { realtime: OPENAI_ROUTES.realtime } };
/** Transcriptions run batch jobs; the model list goes with them. */
export const OPENAI_TABLE: RouteTable = { batchOnly: true, routes: { transcribe: OPENAI_ROUTES.transcribe, models: OPENAI_ROUTES.models } };
