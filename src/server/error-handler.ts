// Any throw inside a route becomes the spec's envelope with the status from the error
// table. Fastify's own errors (bad JSON, body too large, wrong content type, a path it cannot
// decode or route) are mapped to table codes here, so clients see one shape whatever failed;
// a request its route's schema refuses is mapped by validation-errors.ts.
// Below Fastify, the HTTP parser's and the WebSocket upgrade's refusals are written in the same
// envelope by src/server/connections.ts.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ScribedError, type ErrorCode } from '../core/errors.js';
import { fail } from '../core/envelope.js';
import { validationFailure } from './validation-errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The error code this request was answered with (counted by scribed_http_errors_total). */
    errorCode: ErrorCode | null;
  }
}

/** Node's errors for a request body the client stopped sending (it hung up, or the
 * connection broke): the client's fault, not the server's. */
const BODY_CUT_OFF = new Set(['ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ERR_STREAM_PREMATURE_CLOSE']);

export function toTableError(err: FastifyError | Error): ScribedError {
  if (err instanceof ScribedError) return err;
  const code = (err as FastifyError).code;
  switch (code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ScribedError('PAYLOAD_TOO_LARGE', 'the request body is over its size limit', { cause: err });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ScribedError('BAD_REQUEST', 'unsupported Content-Type; send application/json', { cause: err });
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ScribedError('BAD_REQUEST', 'Content-Type is application/json but the body is empty', { cause: err });
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ScribedError('BAD_REQUEST', `the body is not valid JSON: ${err.message}`, { cause: err });
    case 'FST_ERR_BAD_URL':
      return new ScribedError('BAD_REQUEST', 'the path is not valid percent-encoded UTF-8', { cause: err });
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new ScribedError('URI_TOO_LONG', undefined, { cause: err });
    default:
      break;
  }
  if (code !== undefined && BODY_CUT_OFF.has(code)) {
    return new ScribedError('BAD_REQUEST', 'the request body ended before its Content-Length', { cause: err });
  }
  if (err instanceof SyntaxError) return new ScribedError('BAD_REQUEST', err.message, { cause: err });
  // Any other client error Fastify raises carries its 4xx status: the nearest table row.
  const status = (err as FastifyError).statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    const byStatus = {
      404: 'NOT_FOUND',
      408: 'REQUEST_TIMEOUT',
      413: 'PAYLOAD_TOO_LARGE',
      414: 'URI_TOO_LONG',
      431: 'HEADERS_TOO_LARGE',
    } as const;
    return new ScribedError(byStatus[status as keyof typeof byStatus] ?? 'BAD_REQUEST', err.message, { cause: err });
  }
  return new ScribedError('INTERNAL', undefined, { cause: err });
}

/** Answer any error in the envelope; a server fault is logged at error with its cause. */
export function sendError(err: FastifyError | Error, req: FastifyRequest, reply: FastifyReply): void {
  // A request its route's schema refuses: the table's code, in the schema's words.
  const e = validationFailure(err, req.routeOptions.schema) ?? toTableError(err);
  if (e.code === 'INTERNAL') req.log.error({ err }, 'unhandled error');
  req.errorCode = e.code;
  const { status, body } = fail(e);
  void reply.code(status).send(body);
}

type ErrorRenderer = (err: FastifyError | Error, req: FastifyRequest, reply: FastifyReply) => void;

/** Path prefixes whose routing errors (a path parameter over the router's limit, a malformed
 * path) an API facade answers in its own shape: Fastify reports those before any route, so the
 * facade plugin's own error handler never sees them. Registered by the facade's plugin; the
 * renderers are pure functions of the request, the same for every app in the process. */
const facadeRoutingErrors = new Map<string, ErrorRenderer>();

export function renderRoutingErrorsUnder(prefix: string, render: ErrorRenderer): void {
  facadeRoutingErrors.set(prefix, render);
}

/** Fastify's routing errors (frameworkErrors): in the facade's shape under its prefixes, else
 * in the envelope. */
export function sendRoutingError(err: FastifyError | Error, req: FastifyRequest, reply: FastifyReply): void {
  const path = req.url.split('?')[0]!;
  for (const [prefix, render] of facadeRoutingErrors) if (path.startsWith(prefix)) return render(err, req, reply);
  sendError(err, req, reply);
}

/** The answer for a request no route takes. */
export function noRoute(req: FastifyRequest): ScribedError {
  return new ScribedError('NOT_FOUND', `no route ${req.method} ${req.url.split('?')[0]}`);
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler(sendError);
  // Reached only if the onRequest hook in connections.ts did not answer first.
  app.setNotFoundHandler((req, reply) => sendError(noRoute(req), req, reply));
}
