// The one place Deepgram-shaped errors are made: `{err_code, err_msg, request_id}` with the
// status Deepgram's API uses for the case: 401 INVALID_AUTH, 400 for a bad parameter or
// unreadable audio, 402 ASR_PAYMENT_REQUIRED when the balance is short, 413 a body over the
// limit, 5xx server faults, 504 the wait bound.
import { randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { tableFault } from '../table-error.js';

export class DeepgramError extends Error {
  constructor(
    readonly status: number,
    readonly errCode: string,
    message: string,
  ) {
    super(message);
    this.name = 'DeepgramError';
  }

  body(requestId: string): { err_code: string; err_msg: string; request_id: string } {
    return { err_code: this.errCode, err_msg: this.message, request_id: requestId };
  }
}

/** Any error of a Deepgram facade route, in Deepgram's terms. */
export function toDeepgramError(err: unknown): DeepgramError {
  if (err instanceof DeepgramError) return err;
  const f = tableFault(err);
  switch (f.code) {
    case 'UNAUTHORIZED':
      return new DeepgramError(
        401,
        'INVALID_AUTH',
        'Invalid credentials: send `Authorization: Token <access key>` with a scribed access key',
      );
    case 'VALIDATION_FAILED':
    case 'BAD_REQUEST':
      return new DeepgramError(400, 'Bad Request', f.detail);
    case 'UNSUPPORTED_AUDIO':
      return new DeepgramError(400, 'Bad Request', `failed to process audio: ${f.detail}`);
    case 'PAYLOAD_TOO_LARGE':
      return new DeepgramError(413, 'PAYLOAD_TOO_LARGE', f.detail);
    case 'INSUFFICIENT_CHARACTERS':
      return new DeepgramError(402, 'ASR_PAYMENT_REQUIRED', f.detail);
    case 'ENGINE_BUSY':
      return new DeepgramError(503, 'SERVICE_UNAVAILABLE', f.detail);
    case 'WAIT_BOUND_PASSED':
      return new DeepgramError(504, 'REQUEST_TIMEOUT', f.detail);
    default:
      return f.status >= 500
        ? new DeepgramError(
            f.status,
            'INTERNAL_SERVER_ERROR',
            f.status === 500 ? 'the server failed while processing the request' : f.detail,
          )
        : new DeepgramError(f.status, 'Bad Request', f.detail);
  }
}

/** The error handler of the Deepgram facade's routes; a server fault is logged with its cause. */
export function sendDeepgramError(err: unknown, req: FastifyRequest, reply: FastifyReply): void {
  const e = toDeepgramError(err);
  if (e.status >= 500 && e.status !== 503 && e.status !== 504) req.log.error({ err }, 'Deepgram facade request failed');
  const requestId = reply.getHeader('dg-request-id');
  void reply
    .code(e.status)
    .type('application/json; charset=utf-8')
    .send(e.body(typeof requestId === 'string' ? requestId : randomUUID()));
}
