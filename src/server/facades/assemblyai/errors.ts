// The one place AssemblyAI-shaped errors are made: `{"error": "<message>"}` with the status
// AssemblyAI's API uses for the case: 400 bad input (a refused parameter, unreadable audio, an
// audio_url this server cannot use), 401 a missing or unknown key, 404 a transcript that does
// not exist (another account's included), 413 a body over the limit, 429 no Characters left,
// 5xx server faults. Its SDK turns any of them into an Error whose message is `error`.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { tableFault } from '../table-error.js';

/** The message of a 401: AssemblyAI's own wording, then how to send a scribed key. */
export const AUTH_ERROR_MESSAGE =
  'Authentication error, API token missing/invalid: send `Authorization: <access key>` with a scribed access key';

export class AssemblyAiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'AssemblyAiError';
  }

  body(): { error: string } {
    return { error: this.message };
  }
}

export const badRequest = (message: string): AssemblyAiError => new AssemblyAiError(400, message);

/** The native fields a refusal of the batch submitter may name, as AssemblyAI's parameters. */
const PARAM_OF: Array<[string, string, string]> = [
  ['options.multichannel', 'speaker_labels', ' (scribed does not diarize: send a stereo file, one speaker per channel)'],
  ['options.channelSpeakers', 'speaker_labels', ''],
  ['options.vocabularyHints', 'word_boost', ''],
  ['options.redact', 'redact_pii_policies', ''],
  ['languageHint', 'language_code', ''],
];

function inOwnTerms(detail: string, field: string | null): string {
  for (const [native, param, why] of PARAM_OF) {
    if (field !== null && field.startsWith(native) && detail.startsWith(`${field}: `))
      return `${param}: ${detail.slice(field.length + 2)}${why}`;
  }
  return detail;
}

/** Any error of an AssemblyAI facade route, in AssemblyAI's terms. */
export function toAssemblyAiError(err: unknown): AssemblyAiError {
  if (err instanceof AssemblyAiError) return err;
  const f = tableFault(err);
  switch (f.code) {
    case 'UNAUTHORIZED':
      return new AssemblyAiError(401, AUTH_ERROR_MESSAGE);
    case 'NOT_FOUND':
      return new AssemblyAiError(404, 'Transcript not found');
    case 'VALIDATION_FAILED':
    case 'BAD_REQUEST':
      return new AssemblyAiError(400, inOwnTerms(f.detail, f.field));
    case 'UNSUPPORTED_AUDIO':
      return new AssemblyAiError(400, `Transcoding failed. File does not appear to contain audio: ${f.detail}`);
    case 'PAYLOAD_TOO_LARGE':
      return new AssemblyAiError(413, f.detail);
    case 'INSUFFICIENT_CHARACTERS':
      return new AssemblyAiError(429, `Your account balance does not cover this audio: ${f.detail}`);
    case 'ENGINE_BUSY':
      return new AssemblyAiError(503, f.detail);
    default:
      return new AssemblyAiError(f.status, f.status === 500 ? 'Internal server error' : f.detail);
  }
}

/** The error handler of the AssemblyAI facade's routes; a server fault is logged with its cause. */
export function sendAssemblyAiError(err: unknown, req: FastifyRequest, reply: FastifyReply): void {
  const e = toAssemblyAiError(err);
  if (e.status >= 500 && e.status !== 503) req.log.error({ err }, 'AssemblyAI facade request failed');
  void reply.code(e.status).type('application/json; charset=utf-8').send(e.body());
}
