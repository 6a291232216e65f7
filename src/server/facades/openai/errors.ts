// The one place OpenAI-shaped errors are made: `{error: {message, type, param, code}}` with
// the status OpenAI's API (and so its SDK's error classes) uses for the case: 401 a bad key
// (AuthenticationError), 400 bad input (BadRequestError), 413 a file over the limit, 429 no
// Characters left (OpenAI's insufficient_quota), 5xx server faults, 504 the wait bound.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { tableFault } from '../table-error.js';

export type OpenAiErrorType = 'invalid_request_error' | 'insufficient_quota' | 'server_error';

export class OpenAiError extends Error {
  constructor(
    readonly status: number,
    readonly type: OpenAiErrorType,
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = 'OpenAiError';
  }

  body(): { error: { message: string; type: OpenAiErrorType; param: string | null; code: string | null } } {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

/** Native field names a validation error may name, as the OpenAI form calls them. */
const PARAM_OF: Record<string, string> = { languageHint: 'language', 'options.vocabularyHints': 'prompt', file: 'file' };

function paramOf(field: string | null): string | null {
  if (field === null) return null;
  if (Object.hasOwn(PARAM_OF, field)) return PARAM_OF[field]!;
  return field.startsWith('options.vocabularyHints') ? 'prompt' : field;
}

/** Any error of an OpenAI facade route, in OpenAI's terms. */
export function toOpenAiError(err: unknown): OpenAiError {
  if (err instanceof OpenAiError) return err;
  const f = tableFault(err);
  switch (f.code) {
    case 'UNAUTHORIZED':
      return new OpenAiError(
        401,
        'invalid_request_error',
        'Incorrect or missing API key: send `Authorization: Bearer <access key>` with a scribed access key',
        null,
        'invalid_api_key',
      );
    case 'VALIDATION_FAILED':
    case 'BAD_REQUEST':
      return new OpenAiError(400, 'invalid_request_error', f.detail, paramOf(f.field), null);
    case 'UNSUPPORTED_AUDIO':
      return new OpenAiError(400, 'invalid_request_error', `Invalid file format: ${f.detail}`, 'file', 'invalid_file_format');
    case 'PAYLOAD_TOO_LARGE':
      return new OpenAiError(413, 'invalid_request_error', f.detail, 'file', 'file_too_large');
    case 'INSUFFICIENT_CHARACTERS':
      return new OpenAiError(429, 'insufficient_quota', `You exceeded your current quota: ${f.detail}`, null, 'insufficient_quota');
    case 'ENGINE_BUSY':
      return new OpenAiError(503, 'server_error', f.detail, null, 'server_overloaded');
    case 'WAIT_BOUND_PASSED':
      return new OpenAiError(504, 'server_error', f.detail, null, 'timeout');
    default:
      return f.status >= 500
        ? new OpenAiError(
            f.status,
            'server_error',
            f.status === 500 ? 'The server had an error while processing your request' : f.detail,
            null,
            null,
          )
        : new OpenAiError(f.status, 'invalid_request_error', f.detail, paramOf(f.field), null);
  }
}

/** The error handler of the OpenAI facade's routes; a server fault is logged with its cause. */
export function sendOpenAiError(err: unknown, req: FastifyRequest, reply: FastifyReply): void {
  const e = toOpenAiError(err);
  if (e.status >= 500 && e.status !== 503 && e.status !== 504) req.log.error({ err }, 'OpenAI facade request failed');
  void reply.code(e.status).type('application/json; charset=utf-8').send(e.body());
}
