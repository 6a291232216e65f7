// Deepgram's listen API (src/server/facades/deepgram, docs/compat.md): the pre-recorded POST
// and the live WebSocket on /v1/listen, declared once. Their answers and errors are
// Deepgram's shapes (errors.ts). The query is read by the facade's own parser (query.ts,
// live-params.ts), which names a refused parameter in Deepgram's words, and the body is the
// audio as a stream, so both are stated for the document only (servedWithout); the parameter
// lists come from the facade's tables (parameters.ts), so the document cannot drift from what
// the routes accept.
import { Type, type TSchema } from 'typebox';
import { ACTING, IGNORED, LIVE_ACTING, LIVE_IGNORED, LIVE_REFUSED, RAW_ENCODINGS, REFUSED } from '../facades/deepgram/parameters.js';
import type { RouteTable } from '../openapi/route-schema.js';
import { facadeErrors, facadeOperation } from './shared.js';

const TAG = 'Deepgram-compatible';

export const DEEPGRAM_SECURITY_SCHEMES = {
  deepgramToken: {
    type: 'apiKey',
    in: 'header',
    name: 'Authorization',
    description:
      "`Authorization: Token <access key>` (or `Bearer <access key>`): the account access key, as Deepgram's SDK sends its API key",
  },
} as const;
const SECURITY = [{ deepgramToken: [] }];

const DEEPGRAM_ERROR = Type.Object({
  err_code: Type.String({
    description:
      'INVALID_AUTH, INVALID_QUERY_PARAMETER, Bad Request, REMOTE_CONTENT_FORBIDDEN, REMOTE_CONTENT_ERROR, ASR_PAYMENT_REQUIRED, PAYLOAD_TOO_LARGE, SERVICE_UNAVAILABLE, REQUEST_TIMEOUT, INTERNAL_SERVER_ERROR',
  }),
  err_msg: Type.String({ description: 'what was refused; a refused parameter is named first' }),
  request_id: Type.String({ description: 'the dg-request-id header of the answer' }),
});

const WAIT =
  'The request waits for the transcription up to 300 s; past that the job is cancelled, nothing is charged, and the answer is 504.';

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

function parameter(name: string, description: string, live: boolean): TSchema {
  const d = { description };
  if (name === 'encoding') return Type.Enum([...RAW_ENCODINGS], d);
  if (live && name === 'sample_rate') return Type.Enum([8000, 16000, 22050, 24000, 44100, 48000], d);
  if (name === 'sample_rate') return Type.Integer({ minimum: 8000, maximum: 48000, ...d });
  if (live && name === 'channels') return Type.Enum([1, 2], d);
  if (name === 'channels') return Type.Integer({ minimum: 1, maximum: 2, ...d });
  if (live && name === 'endpointing') return Type.Union([Type.Integer({ minimum: 0, maximum: 60000 }), Type.Boolean()], d);
  if (live && name === 'utterance_end_ms') return Type.Integer({ minimum: 1000, maximum: 60000, ...d });
  if (BOOLEAN_PARAMS.has(name)) return Type.Boolean(d);
  if (REPEATED_PARAMS.has(name)) return Type.Array(Type.String(), d);
  return Type.String(d);
}

/** The query of a listen route: the acting parameters, then those accepted and ignored. */
function query(acting: Record<string, string>, ignored: Record<string, string>, live: boolean, required: readonly string[] = []) {
  const properties: Record<string, TSchema> = {};
  for (const [name, what] of Object.entries(acting)) {
    const p = parameter(name, `acts: ${what}`, live);
    properties[name] = required.includes(name) ? p : Type.Optional(p);
  }
  for (const [name, why] of Object.entries(ignored))
    properties[name] = Type.Optional(parameter(name, `accepted and ignored: ${why}`, live));
  return Type.Object(properties);
}

const WORD = Type.Object({
  word: Type.String(),
  start: Type.Number(),
  end: Type.Number(),
  confidence: Type.Number({ minimum: 0, maximum: 1 }),
  punctuated_word: Type.Optional(Type.String({ description: 'with punctuate, smart_format or numerals: the readable form' })),
});

const LISTEN_RESPONSE = Type.Object(
  {
    metadata: Type.Object({
      request_id: Type.String(),
      sha256: Type.Optional(Type.String({ description: 'of the audio received' })),
      created: Type.String({ format: 'date-time' }),
      duration: Type.Number({ description: 'seconds' }),
      channels: Type.Integer(),
      models: Type.Optional(Type.Array(Type.String())),
      transcription_ids: Type.Optional(
        Type.Array(Type.String(), { description: 'the History rows (one per channel) where the transcripts are kept' }),
      ),
    }),
    results: Type.Object({
      channels: Type.Array(
        Type.Object({
          alternatives: Type.Optional(
            Type.Array(Type.Object({ transcript: Type.String(), confidence: Type.Number(), words: Type.Array(WORD) })),
          ),
        }),
      ),
      utterances: Type.Optional(
        Type.Array(
          Type.Object({
            start: Type.Optional(Type.Number()),
            end: Type.Optional(Type.Number()),
            confidence: Type.Optional(Type.Number()),
            channel: Type.Optional(Type.Integer()),
            transcript: Type.Optional(Type.String()),
            words: Type.Optional(Type.Array(WORD)),
            id: Type.Optional(Type.String()),
          }),
          { description: 'with utterances=true: one per segment cut at a pause, in time order' },
        ),
      ),
    }),
  },
  {
    // The field table stays this shape's: the callback's immediate answer is one field, named here.
    description:
      'the transcript, one channel per channel transcribed. With `callback`: `{"request_id": "..."}` at once, and this body POSTed to the callback when the job ends (docs/compat.md, "Callbacks")',
  },
);

const AUDIO = Type.String({
  contentMediaType: 'application/octet-stream',
  description: 'a container the native batch upload reads, or headerless audio named by encoding and sample_rate',
});

export const DEEPGRAM_ROUTES = {
  listen: {
    method: 'POST',
    url: '/v1/listen',
    schema: {
      ...facadeOperation(
        {
          operationId: 'deepgramListenPrerecorded',
          tag: TAG,
          summary: "Transcribe pre-recorded audio as Deepgram's POST /v1/listen does",
          description: [
            'The body is the audio with any Content-Type but JSON (the SDK sends `deepgram/audio+video`), or the JSON object `{"url": "<audio URL>"}`, fetched only from a destination the operator\'s outbound policy allows (docs/security.md; redirects are not followed).',
            `A batch job of the account per channel (History row, Characters charged as the native batch upload). ${WAIT}`,
            `Refused with their reason: ${Object.keys(REFUSED).join(', ')}; any other parameter not listed is refused as unknown. docs/compat.md.`,
          ].join(' '),
        },
        SECURITY,
      ),
      querystring: query(ACTING, IGNORED, false),
      consumes: ['audio/*', 'deepgram/audio+video'],
      body: AUDIO,
      response: {
        200: LISTEN_RESPONSE,
        ...facadeErrors(DEEPGRAM_ERROR, {
          400: 'a refused or malformed parameter (named), audio that cannot be read, or a URL not allowed or not fetched',
          401: 'a missing or unknown access key (INVALID_AUTH)',
          402: 'the balance does not cover the audio (ASR_PAYMENT_REQUIRED)',
          413: 'the audio is over the upload limit',
          500: 'a server fault',
          503: 'every recognizer is busy',
          504: 'the wait bound passed; the jobs were cancelled and refunded',
        }),
      },
    },
  },
  live: {
    method: 'GET',
    url: '/v1/listen',
    schema: {
      ...facadeOperation(
        {
          operationId: 'deepgramListenLive',
          tag: TAG,
          summary: "Stream audio as to Deepgram's live WebSocket (GET /v1/listen)",
          description: [
            'A WebSocket: binary messages are raw audio (encoding, sample_rate), text messages KeepAlive, Finalize and CloseStream; the server sends Results, SpeechStarted, UtteranceEnd and, at CloseStream, Metadata. Behind it a native real-time session of the account (History row, Characters); with channels=2 and multichannel=true (interleaved audio) a call of two such sessions, one leg per channel, whose Results carry channel_index [i, 2].',
            'The key is `Authorization: Token <access key>` (or Bearer), or the browser form `Sec-WebSocket-Protocol: token, <access key>`.',
            `Refused before the upgrade with their reason: ${Object.keys(LIVE_REFUSED).join(', ')}; any other parameter not listed is refused as unknown. docs/compat.md.`,
          ].join(' '),
        },
        SECURITY,
      ),
      querystring: query(LIVE_ACTING, LIVE_IGNORED, true, ['encoding', 'sample_rate']),
      response: {
        101: Type.Null({ description: 'the upgrade: the stream is open' }),
        ...facadeErrors(DEEPGRAM_ERROR, {
          400: 'a refused or malformed parameter (named), or a language the recognizer does not have',
          401: 'a missing or unknown access key (INVALID_AUTH)',
          429: 'the account streams as many sessions on this node as it may',
          500: 'a server fault',
          503: 'every recognizer is busy',
        }),
      },
    },
  },
} as const satisfies RouteTable['routes'];

/** Served on every node: the live socket drives a native real-time session. */
export const DEEPGRAM_LIVE_TABLE: RouteTable = { routes: { live: DEEPGRAM_ROUTES.live } };
/** The pre-recorded route runs batch jobs. */
export const DEEPGRAM_TABLE: RouteTable = { batchOnly: true, routes: { listen: DEEPGRAM_ROUTES.listen } };
