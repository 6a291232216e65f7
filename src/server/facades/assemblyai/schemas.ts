// AssemblyAI's async API (docs/compat.md, "AssemblyAI async"): the routes' shapes, declared
// once. Fastify validates requests against them and the API document is generated from them.
// Their answers and errors are AssemblyAI's, not the native envelope: `x-scribed-facade`
// tells the document (src/server/openapi/swagger.ts) to add no native error answers; each
// route states its own, `{"error": "..."}`. The body's parameters beyond the typed ones are
// sorted by params.ts (acting, ignored, off-switches, refused), which names a refused one.
import { Type, type Static, type TSchema } from 'typebox';
import { invalid, operation, PATH_PARAM, type RouteTable } from '../../openapi/route-schema.js';
import { ACTING, IGNORED, OFF_SWITCHES, REFUSED } from './params.js';

const TAG = 'AssemblyAI-compatible';

export const ASSEMBLYAI_SECURITY_SCHEMES = {
  assemblyAiKey: {
    type: 'apiKey',
    in: 'header',
    name: 'Authorization',
    description: "`Authorization: <access key>` (no scheme): the account access key (sk_...), as AssemblyAI's SDK sends its API key",
  },
} as const;

const errors = (statuses: Record<number, string>): Record<number, TSchema> =>
  Object.fromEntries(Object.entries(statuses).map(([s, d]) => [Number(s), Type.Object({ error: Type.String() }, { description: d })]));
const COMMON = { 401: 'a missing or unknown key', 500: 'a server fault' };

function facade(info: { operationId: string; summary: string; description?: string }) {
  return {
    ...operation({ ...info, tag: TAG, auth: 'none', errors: [] }),
    security: [{ assemblyAiKey: [] }],
    'x-scribed-facade': true,
  };
}

const BOOL = (description: string) => Type.Union([Type.Boolean(), Type.Null()], { description, ...invalid('a boolean') });
const STRINGS = (description: string) =>
  Type.Union([Type.Array(Type.String({ maxLength: 200 }), { maxItems: 100 }), Type.Null()], {
    description,
    ...invalid('a list of at most 100 strings'),
  });
const list = (o: Record<string, string>) =>
  Object.entries(o)
    .map(([k, v]) => `${k} (${v})`)
    .join('; ');

// Every typed field is optional to the schema: audio_url's absence is refused by params.ts,
// with the other refusals, in one wording.
const optional = <T extends Record<string, TSchema>>(fields: T) =>
  Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, Type.Optional(v)])) as {
    [K in keyof T]: ReturnType<typeof Type.Optional<T[K]>>;
  };

export const CREATE_BODY = Type.Object(
  optional({
    audio_url: Type.String({
      minLength: 1,
      maxLength: 2048,
      description: ACTING.audio_url,
      ...invalid('a URL of at most 2048 characters'),
    }),
    punctuate: BOOL(ACTING.punctuate),
    format_text: BOOL(ACTING.format_text),
    disfluencies: BOOL(ACTING.disfluencies),
    language_code: Type.Union([Type.String({ maxLength: 20 }), Type.Null()], {
      description: ACTING.language_code,
      ...invalid('a language code'),
    }),
    speaker_labels: BOOL(ACTING.speaker_labels),
    multichannel: BOOL(ACTING.multichannel),
    dual_channel: BOOL(ACTING.dual_channel),
    redact_pii: BOOL(ACTING.redact_pii),
    redact_pii_policies: STRINGS(ACTING.redact_pii_policies),
    webhook_url: Type.Union([Type.String({ maxLength: 2048 }), Type.Null()], { description: ACTING.webhook_url, ...invalid('a URL') }),
    webhook_auth_header_name: Type.Union([Type.String({ maxLength: 100 }), Type.Null()], { description: ACTING.webhook_auth_header_name }),
    webhook_auth_header_value: Type.Union([Type.String({ maxLength: 1000 }), Type.Null()], {
      description: ACTING.webhook_auth_header_value,
    }),
    word_boost: STRINGS(ACTING.word_boost),
    keyterms_prompt: STRINGS(ACTING.keyterms_prompt),
  }),
  {
    // The other parameters are read by params.ts, which refuses an unknown one by name.
    additionalProperties: true,
    description: `Also: speakers_expected, redact_pii_sub (acting); accepted and ignored: ${list(IGNORED)}; accepted when false or null only: ${list(OFF_SWITCHES)}; refused: ${list(REFUSED)}; any other: refused.`,
    ...invalid('a JSON object'),
  },
);

const WORD = Type.Object({
  text: Type.String(),
  start: Type.Number({ description: 'ms' }),
  end: Type.Number({ description: 'ms' }),
  confidence: Type.Number(),
  speaker: Type.Union([Type.String(), Type.Null()]),
  channel: Type.Optional(Type.String()),
});
const TRANSCRIPT = Type.Object(
  {
    id: Type.String(),
    status: Type.Union([Type.Literal('queued'), Type.Literal('processing'), Type.Literal('completed'), Type.Literal('error')]),
    text: Type.Union([Type.String(), Type.Null()]),
    words: Type.Union([Type.Array(WORD), Type.Null()]),
    utterances: Type.Union([
      Type.Array(
        Type.Object({
          speaker: Type.String(),
          channel: Type.String(),
          text: Type.String(),
          start: Type.Number(),
          end: Type.Number(),
          confidence: Type.Number(),
          words: Type.Array(WORD),
        }),
      ),
      Type.Null(),
    ]),
    confidence: Type.Union([Type.Number(), Type.Null()]),
    audio_duration: Type.Union([Type.Number({ description: 'seconds' }), Type.Null()]),
    error: Type.Optional(Type.String()),
  },
  { additionalProperties: true, description: "AssemblyAI's transcript object (the request's parameters echoed beside these)" },
);
/** The transcript object as routes answer it (transcript.ts builds it). */
export type TranscriptView = Static<typeof TRANSCRIPT>;
const TRANSCRIPT_ID = Type.Object({ transcript_id: PATH_PARAM });

export const ASSEMBLYAI_ROUTES = {
  upload: {
    method: 'POST',
    url: '/v2/upload',
    schema: {
      ...facade({
        operationId: 'assemblyAiUpload',
        summary: "AssemblyAI: upload a file (the raw body) for POST /v2/transcript; its upload_url serves this account's transcripts only",
      }),
      response: {
        200: Type.Object({
          upload_url: Type.String({ description: 'an opaque reference on this server, /v2/upload/<id>; it serves nothing' }),
        }),
        ...errors({ ...COMMON, 400: 'an empty body', 413: 'over the upload limit', 429: 'too many uploads kept for the account' }),
      },
    },
  },
  create: {
    method: 'POST',
    url: '/v2/transcript',
    schema: {
      ...facade({
        operationId: 'assemblyAiCreateTranscript',
        summary: 'AssemblyAI: transcribe an uploaded file as a batch job of the account; answered at once, queued',
      }),
      body: CREATE_BODY,
      response: {
        200: TRANSCRIPT,
        ...errors({
          ...COMMON,
          400: 'a refused parameter (named first), audio_url not an upload of this account, unreadable audio',
          429: 'the balance does not cover the audio',
          503: 'no recognizer',
        }),
      },
    },
  },
  list: {
    method: 'GET',
    url: '/v2/transcript',
    schema: {
      ...facade({
        operationId: 'assemblyAiListTranscripts',
        summary: "AssemblyAI: the account's transcripts made through this API, newest first",
      }),
      querystring: Type.Object(
        {
          limit: Type.Optional(
            Type.String({ pattern: '^[0-9]{1,3}$', description: '1-200, default 10', ...invalid('an integer from 1 to 200') }),
          ),
          status: Type.Optional(
            Type.Union(
              [Type.Literal('queued'), Type.Literal('processing'), Type.Literal('completed'), Type.Literal('error')],
              invalid('queued, processing, completed or error'),
            ),
          ),
          created_on: Type.Optional(Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', ...invalid('a date, YYYY-MM-DD') })),
          before_id: Type.Optional(Type.String({ maxLength: 100, description: 'transcripts older than this one' })),
          after_id: Type.Optional(Type.String({ maxLength: 100, description: 'transcripts newer than this one' })),
          throttled_only: Type.Optional(Type.String({ description: 'accepted; scribed throttles none', ...invalid('true or false') })),
        },
        { additionalProperties: false },
      ),
      response: {
        200: Type.Object({
          page_details: Type.Object({
            limit: Type.Number(),
            result_count: Type.Number(),
            current_url: Type.String(),
            prev_url: Type.Union([Type.String(), Type.Null()]),
            next_url: Type.Union([Type.String(), Type.Null()]),
          }),
          transcripts: Type.Array(Type.Object({}, { additionalProperties: true })),
        }),
        ...errors({ ...COMMON, 400: 'a bad query parameter' }),
      },
    },
  },
  get: {
    method: 'GET',
    url: '/v2/transcript/:transcript_id',
    schema: {
      ...facade({ operationId: 'assemblyAiGetTranscript', summary: 'AssemblyAI: a transcript; poll until completed or error' }),
      params: TRANSCRIPT_ID,
      response: { 200: TRANSCRIPT, ...errors({ ...COMMON, 404: 'no such transcript of the account' }) },
    },
  },
  delete: {
    method: 'DELETE',
    url: '/v2/transcript/:transcript_id',
    schema: {
      ...facade({
        operationId: 'assemblyAiDeleteTranscript',
        summary: 'AssemblyAI: erase a transcript (its History rows, words and audio)',
      }),
      params: TRANSCRIPT_ID,
      response: { 200: TRANSCRIPT, ...errors({ ...COMMON, 400: 'still queued or processing', 404: 'no such transcript of the account' }) },
    },
  },
} as const satisfies RouteTable['routes'];

export const ASSEMBLYAI_TABLE: RouteTable = { batchOnly: true, routes: ASSEMBLYAI_ROUTES };
