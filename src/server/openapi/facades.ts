// The API facades in the API document (src/server/facades, docs/compat.md): OpenAI's transcription
// API and Deepgram's pre-recorded listen API. Their answers and errors are in those APIs'
// shapes, not the native envelope, so their operations are written here in OpenAPI terms
// rather than through the native endpoint table (which derives envelope failures from the
// error table); `x-scribed-errors` is empty for them, and each says its errors in its own
// response schemas. The parameter lists come from the facades' own tables, so the document
// cannot drift from what the routes accept.
import { ACTING, IGNORED, LIVE_ACTING, LIVE_IGNORED, LIVE_REFUSED, REFUSED } from '../facades/deepgram/parameters.js';
import { OPENAI_MODEL_ALIASES, RESPONSE_FORMATS } from '../facades/openai/names.js';

type Json = Record<string, unknown>;

export const FACADE_TAGS = ['OpenAI-compatible', 'Deepgram-compatible'] as const;

export const FACADE_SECURITY_SCHEMES: Json = {
  openAiBearer: {
    type: 'http',
    scheme: 'bearer',
    description: "`Authorization: Bearer <access key>`: the account access key (sk_...), as OpenAI's SDK sends its API key",
  },
  deepgramToken: {
    type: 'apiKey',
    in: 'header',
    name: 'Authorization',
    description:
      "`Authorization: Token <access key>` (or `Bearer <access key>`): the account access key, as Deepgram's SDK sends its API key",
  },
};

const OPENAI_ERROR: Json = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['message', 'type', 'param', 'code'],
      properties: {
        message: { type: 'string' },
        type: { enum: ['invalid_request_error', 'insufficient_quota', 'server_error'] },
        param: { type: ['string', 'null'], description: 'the form field at fault' },
        code: {
          type: ['string', 'null'],
          description:
            'invalid_api_key, model_not_found, unknown_parameter, invalid_file_format, file_too_large, insufficient_quota, server_overloaded, timeout',
        },
      },
    },
  },
};

const DEEPGRAM_ERROR: Json = {
  type: 'object',
  required: ['err_code', 'err_msg', 'request_id'],
  properties: {
    err_code: {
      type: 'string',
      description:
        'INVALID_AUTH, INVALID_QUERY_PARAMETER, Bad Request, REMOTE_CONTENT_FORBIDDEN, REMOTE_CONTENT_ERROR, ASR_PAYMENT_REQUIRED, PAYLOAD_TOO_LARGE, SERVICE_UNAVAILABLE, REQUEST_TIMEOUT, INTERNAL_SERVER_ERROR',
    },
    err_msg: { type: 'string', description: 'what was refused; a refused parameter is named first' },
    request_id: { type: 'string', description: 'the dg-request-id header of the answer' },
  },
};

function errors(schema: Json, statuses: Record<string, string>): Record<string, Json> {
  return Object.fromEntries(
    Object.entries(statuses).map(([status, description]) => [status, { description, content: { 'application/json': { schema } } }]),
  );
}

const WAIT =
  'The request waits for the transcription up to 300 s; past that the job is cancelled, nothing is charged, and the answer is 504.';

const openAiErrors = (extra: Record<string, string> = {}) =>
  errors(OPENAI_ERROR, { '401': 'a missing or unknown access key (code invalid_api_key)', ...extra, '500': 'a server fault' });

const MODEL: Json = {
  type: 'object',
  required: ['id', 'object', 'created', 'owned_by'],
  properties: { id: { type: 'string' }, object: { const: 'model' }, created: { type: 'integer' }, owned_by: { const: 'scribed' } },
};

const WORD_TIMES: Json = {
  type: 'object',
  required: ['word', 'start', 'end'],
  properties: { word: { type: 'string' }, start: { type: 'number' }, end: { type: 'number' } },
};

const TRANSCRIPTION_JSON: Json = {
  type: 'object',
  required: ['text'],
  description:
    'json: {text, usage}; verbose_json adds task, language, duration, and segments and/or words as timestamp_granularities[] asks',
  properties: {
    text: { type: 'string' },
    usage: { type: 'object', properties: { type: { const: 'duration' }, seconds: { type: 'integer' } } },
    task: { const: 'transcribe' },
    language: { type: 'string', description: "the language's English name, lower case" },
    duration: { type: 'number', description: 'seconds' },
    segments: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'start', 'end', 'text'],
        properties: {
          id: { type: 'integer' },
          seek: { const: 0 },
          start: { type: 'number' },
          end: { type: 'number' },
          text: { type: 'string' },
          tokens: { type: 'array', maxItems: 0 },
          temperature: { const: 0 },
          avg_logprob: { type: 'number', description: 'mean log of the word confidences' },
          compression_ratio: { type: 'number' },
          no_speech_prob: { const: 0 },
        },
      },
    },
    words: { type: 'array', items: WORD_TIMES },
  },
};

const DEEPGRAM_WORD: Json = {
  type: 'object',
  required: ['word', 'start', 'end', 'confidence'],
  properties: {
    word: { type: 'string' },
    start: { type: 'number' },
    end: { type: 'number' },
    confidence: { type: 'number', minimum: 0, maximum: 1 },
    punctuated_word: { type: 'string', description: 'with punctuate, smart_format or numerals: the readable form' },
  },
};

const LISTEN_RESPONSE: Json = {
  type: 'object',
  required: ['metadata', 'results'],
  properties: {
    metadata: {
      type: 'object',
      required: ['request_id', 'created', 'duration', 'channels'],
      properties: {
        request_id: { type: 'string' },
        sha256: { type: 'string', description: 'of the audio received' },
        created: { type: 'string', format: 'date-time' },
        duration: { type: 'number', description: 'seconds' },
        channels: { type: 'integer' },
        models: { type: 'array', items: { type: 'string' } },
        transcription_ids: {
          type: 'array',
          items: { type: 'string' },
          description: 'the History rows (one per channel) where the transcripts are kept',
        },
      },
    },
    results: {
      type: 'object',
      required: ['channels'],
      properties: {
        channels: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              alternatives: {
                type: 'array',
                items: {
                  type: 'object',
                  required: ['transcript', 'confidence', 'words'],
                  properties: {
                    transcript: { type: 'string' },
                    confidence: { type: 'number' },
                    words: { type: 'array', items: DEEPGRAM_WORD },
                  },
                },
              },
            },
          },
        },
        utterances: {
          type: 'array',
          description: 'with utterances=true: one per segment cut at a pause, in time order',
          items: {
            type: 'object',
            properties: {
              start: { type: 'number' },
              end: { type: 'number' },
              confidence: { type: 'number' },
              channel: { type: 'integer' },
              transcript: { type: 'string' },
              words: { type: 'array', items: DEEPGRAM_WORD },
              id: { type: 'string' },
            },
          },
        },
      },
    },
  },
};

const BOOLEAN_PARAMS = new Set([
  'multichannel',
  'utterances',
  'punctuate',
  'smart_format',
  'numerals',
  'filler_words',
  'mip_opt_out',
  'interim_results',
  'vad_events',
  'no_delay',
]);
const REPEATED_PARAMS = new Set(['keywords', 'keyterm', 'tag', 'redact']);

function listenParameters(): Json[] {
  const schemaOf = (name: string): Json => {
    if (name === 'encoding') return { enum: ['linear16', 'mulaw', 'alaw'] };
    if (name === 'sample_rate') return { type: 'integer', minimum: 8000, maximum: 48000 };
    if (name === 'channels') return { type: 'integer', minimum: 1, maximum: 2 };
    if (BOOLEAN_PARAMS.has(name)) return { type: 'boolean' };
    if (REPEATED_PARAMS.has(name)) return { type: 'array', items: { type: 'string' } };
    return { type: 'string' };
  };
  return [
    ...Object.entries(ACTING).map(([name, what]) => ({
      name,
      in: 'query',
      required: false,
      schema: schemaOf(name),
      description: `acts: ${what}`,
    })),
    ...Object.entries(IGNORED).map(([name, why]) => ({
      name,
      in: 'query',
      required: false,
      schema: schemaOf(name),
      description: `accepted and ignored: ${why}`,
    })),
  ];
}

function liveParameters(): Json[] {
  const schemaOf = (name: string): Json => {
    if (name === 'encoding') return { enum: ['linear16', 'mulaw', 'alaw'] };
    if (name === 'sample_rate') return { enum: [8000, 16000, 22050, 24000, 44100, 48000] };
    if (name === 'channels') return { enum: [1, 2] };
    if (name === 'endpointing') return { oneOf: [{ type: 'integer', minimum: 0, maximum: 60000 }, { type: 'boolean' }] };
    if (name === 'utterance_end_ms') return { type: 'integer', minimum: 1000, maximum: 60000 };
    if (BOOLEAN_PARAMS.has(name)) return { type: 'boolean' };
    if (REPEATED_PARAMS.has(name)) return { type: 'array', items: { type: 'string' } };
    return { type: 'string' };
  };
  return [
    ...Object.entries(LIVE_ACTING).map(([name, what]) => ({
      name,
      in: 'query',
      required: name === 'encoding' || name === 'sample_rate',
      schema: schemaOf(name),
      description: `acts: ${what}`,
    })),
    ...Object.entries(LIVE_IGNORED).map(([name, why]) => ({
      name,
      in: 'query',
      required: false,
      schema: schemaOf(name),
      description: `accepted and ignored: ${why}`,
    })),
  ];
}

/** Deepgram's live socket (served on every node: it drives a native real-time session). */
export function deepgramLiveOperation(): Json {
  return {
    operationId: 'deepgramListenLive',
    tags: ['Deepgram-compatible'],
    summary: "Stream audio as to Deepgram's live WebSocket (GET /v1/listen)",
    description: [
      'A WebSocket: binary messages are raw audio (encoding, sample_rate), text messages KeepAlive, Finalize and CloseStream; the server sends Results, SpeechStarted, UtteranceEnd and, at CloseStream, Metadata. Behind it a native real-time session of the account (History row, Characters); with channels=2 and multichannel=true (interleaved audio) a call of two such sessions, one leg per channel, whose Results carry channel_index [i, 2].',
      'The key is `Authorization: Token <access key>` (or Bearer), or the browser form `Sec-WebSocket-Protocol: token, <access key>`.',
      `Refused before the upgrade with their reason: ${Object.keys(LIVE_REFUSED).join(', ')}; any other parameter not listed is refused as unknown. docs/compat.md.`,
    ].join(' '),
    security: [{ deepgramToken: [] }],
    parameters: liveParameters(),
    responses: {
      '101': { description: 'the upgrade: the stream is open' },
      ...errors(DEEPGRAM_ERROR, {
        '400': 'a refused or malformed parameter (named), or a language the recognizer does not have',
        '401': 'a missing or unknown access key (INVALID_AUTH)',
        '429': 'the account streams as many sessions on this node as it may',
        '500': 'a server fault',
        '503': 'every recognizer is busy',
      }),
    },
    'x-scribed-errors': [],
  };
}

/** OpenAI's Realtime transcription socket (served on every node: it drives a native real-time
 * session). */
export function openAiRealtimeOperation(): Json {
  return {
    operationId: 'openAiRealtimeTranscription',
    tags: ['OpenAI-compatible'],
    summary: "Stream audio as to OpenAI's Realtime API for transcription (GET /v1/realtime?intent=transcription)",
    description: [
      "A WebSocket, as openai's OpenAIRealtimeWS opens it with intent transcription (over wss: put TLS in front, docs/compat.md). Client events: session.update (type transcription) or transcription_session.update, input_audio_buffer.append (base64 pcm16 at 24 kHz, g711_ulaw or g711_alaw), .commit, .clear.",
      'Server events: session.created/updated, input_audio_buffer.speech_started/speech_stopped/committed/cleared, conversation.item.input_audio_transcription.delta/completed, error. Behind it a native real-time session of the account (History row, Characters), opened at the first audio and closed with the socket.',
    ].join(' '),
    security: [{ openAiBearer: [] }],
    parameters: [
      {
        name: 'intent',
        in: 'query',
        required: true,
        schema: { const: 'transcription' },
        description: 'transcription sessions only; model= and call_id= are refused',
      },
    ],
    responses: {
      '101': { description: 'the upgrade: the session is open (session.created)' },
      ...errors(OPENAI_ERROR, {
        '400': 'no intent=transcription, or a model or call_id socket',
        '401': 'a missing or unknown access key (code invalid_api_key)',
        '429': 'the account streams as many sessions on this node as it may',
        '500': 'a server fault',
        '503': 'every recognizer is busy',
      }),
    },
    'x-scribed-errors': [],
  };
}

/** The facades' operations by path, in the document's form (served only with batch). */
export function facadePaths(): Record<string, Record<string, Json>> {
  return {
    '/v1/audio/transcriptions': {
      post: {
        operationId: 'openAiCreateTranscription',
        tags: ['OpenAI-compatible'],
        summary: "Transcribe an audio file as OpenAI's POST /v1/audio/transcriptions does",
        description: `A batch job of the account (History row, Characters charged as the native batch upload). ${WAIT} Unknown fields are refused (unknown_parameter). docs/compat.md.`,
        security: [{ openAiBearer: [] }],
        requestBody: {
          required: true,
          content: {
            'multipart/form-data': {
              schema: {
                type: 'object',
                required: ['file', 'model'],
                properties: {
                  file: {
                    type: 'string',
                    contentMediaType: 'application/octet-stream',
                    description: 'the audio (any format the native batch upload reads)',
                  },
                  model: {
                    type: 'string',
                    description: `a model GET /v1/models lists: scribed-<engine>, or ${OPENAI_MODEL_ALIASES.join(', ')}`,
                  },
                  language: { type: 'string', description: 'the native languageHint (a language the recognizer has)' },
                  prompt: { type: 'string', description: 'vocabulary hints, comma- or line-separated (native vocabularyHints)' },
                  response_format: { enum: [...RESPONSE_FORMATS], default: 'json' },
                  'timestamp_granularities[]': {
                    type: 'array',
                    items: { enum: ['word', 'segment'] },
                    description: 'with verbose_json only; default segment',
                  },
                  temperature: { type: 'number', minimum: 0, maximum: 1, description: 'accepted and ignored' },
                  stream: {
                    type: 'boolean',
                    default: false,
                    description:
                      'server-sent transcript.text.delta and transcript.text.done events, sent when the job is done; json only; every model name',
                  },
                },
              },
            },
          },
        },
        responses: {
          '200': {
            description: 'the transcript: JSON for json and verbose_json, text for text, srt and vtt',
            content: {
              'application/json': { schema: TRANSCRIPTION_JSON },
              'text/plain': { schema: { type: 'string' } },
              'text/event-stream': {
                schema: {
                  type: 'string',
                  description:
                    'with stream: `data: {"type":"transcript.text.delta","delta"}` per segment, then `data: {"type":"transcript.text.done","text","usage"}`',
                },
              },
            },
          },
          ...openAiErrors({
            '400': 'a bad field, an unknown model or field, or a file that is not audio',
            '413': 'the file is over the upload limit',
            '429': 'the balance does not cover the audio (insufficient_quota)',
            '503': 'every recognizer is busy',
            '504': 'the wait bound passed; the job was cancelled and refunded',
          }),
        },
        'x-scribed-errors': [],
      },
    },
    '/v1/models': {
      get: {
        operationId: 'openAiListModels',
        tags: ['OpenAI-compatible'],
        summary: "The models this node serves, as OpenAI's GET /v1/models lists them",
        description: `scribed-<engine> (the node's recognizer) and the OpenAI names served by it: ${OPENAI_MODEL_ALIASES.join(', ')}.`,
        security: [{ openAiBearer: [] }],
        responses: {
          '200': {
            description: 'the list',
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['object', 'data'],
                  properties: { object: { const: 'list' }, data: { type: 'array', items: MODEL } },
                },
              },
            },
          },
          ...openAiErrors(),
        },
        'x-scribed-errors': [],
      },
    },
    '/v1/listen': {
      post: {
        operationId: 'deepgramListenPrerecorded',
        tags: ['Deepgram-compatible'],
        summary: "Transcribe pre-recorded audio as Deepgram's POST /v1/listen does",
        description: [
          'The body is the audio with any Content-Type but JSON (the SDK sends `deepgram/audio+video`), or the JSON object `{"url": "<audio URL>"}`, fetched only from a destination the operator\'s outbound policy allows (docs/security.md; redirects are not followed).',
          `A batch job of the account per channel (History row, Characters charged as the native batch upload). ${WAIT}`,
          `Refused with their reason: ${Object.keys(REFUSED).join(', ')}; any other parameter not listed is refused as unknown. docs/compat.md.`,
        ].join(' '),
        security: [{ deepgramToken: [] }],
        parameters: listenParameters(),
        requestBody: {
          required: true,
          content: {
            'audio/*': {
              schema: {
                type: 'string',
                contentMediaType: 'application/octet-stream',
                description: 'a container the native batch upload reads, or headerless audio named by encoding and sample_rate',
              },
            },
            'deepgram/audio+video': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } },
          },
        },
        responses: {
          '200': {
            // The field table stays this shape's: the callback's immediate answer is one field, named here.
            description:
              'the transcript, one channel per channel transcribed. With `callback`: `{"request_id": "..."}` at once, and this body POSTed to the callback when the job ends (docs/compat.md, "Callbacks")',
            content: { 'application/json': { schema: LISTEN_RESPONSE } },
          },
          ...errors(DEEPGRAM_ERROR, {
            '400': 'a refused or malformed parameter (named), audio that cannot be read, or a URL not allowed or not fetched',
            '401': 'a missing or unknown access key (INVALID_AUTH)',
            '402': 'the balance does not cover the audio (ASR_PAYMENT_REQUIRED)',
            '413': 'the audio is over the upload limit',
            '500': 'a server fault',
            '503': 'every recognizer is busy',
            '504': 'the wait bound passed; the jobs were cancelled and refunded',
          }),
        },
        'x-scribed-errors': [],
      },
    },
  };
}
