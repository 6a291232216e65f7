// Any throw inside a route becomes the spec's envelope with the status from the error
// table. Fastify's own errors (bad JSON, body too large, wrong content type) are mapped to
// table codes here, so clients see one shape whatever failed.
import type { FastifyError, FastifyInstance } from 'fastify';
import { ScribedError } from '../core/errors.js';
import { fail } from '../core/envelope.js';

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
    default:
      break;
  }
  if (err instanceof SyntaxError || (err as FastifyError).statusCode === 400) {
    return new ScribedError('BAD_REQUEST', err.message, { cause: err });
  }
  return new ScribedError('INTERNAL', undefined, { cause: err });
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, req, reply) => {
    const e = toTableError(err);
    if (e.code === 'INTERNAL') req.log.error({ err }, 'unhandled error');
    const { status, body } = fail(e);
    void reply.code(status).send(body);
  });
  app.setNotFoundHandler((req, reply) => {
    const { status, body } = fail(new ScribedError('NOT_FOUND', `no route ${req.method} ${req.url.split('?')[0]}`));
    void reply.code(status).send(body);
  });
}
