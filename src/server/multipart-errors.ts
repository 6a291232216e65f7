// Errors raised while @fastify/multipart (busboy) parses a body, in the table's terms. Its
// limit errors are mapped by each route (each names its own limits); whatever else the parser
// throws (no boundary, a body that is not multipart, a part cut off, a broken part header) is
// the client's malformed request: 400, never INTERNAL. File-system errors while a part is
// written to disk carry a `syscall` and stay server faults.
import { ScribedError } from '../core/errors.js';

export function malformedMultipart(err: unknown): unknown {
  if (err instanceof ScribedError) return err;
  if (err instanceof Error && typeof (err as { syscall?: unknown }).syscall !== 'string') {
    return new ScribedError('BAD_REQUEST', `malformed multipart/form-data body: ${err.message}`, { cause: err });
  }
  return err;
}
