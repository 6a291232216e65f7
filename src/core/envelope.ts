// The one envelope helper. Routes return ok(data); every failure goes through fail() via
// the server's error handler, so no route builds an error body by hand.
import { ScribedError, toScribedError } from './errors.js';

export interface SuccessEnvelope<T> {
  code: 1;
  message: string;
  data: T;
}

export interface FailureEnvelope {
  code: number;
  message: string;
}

export function ok<T>(data: T, message = 'success'): SuccessEnvelope<T> {
  return { code: 1, message, data };
}

export function fail(err: unknown): { status: number; body: FailureEnvelope } {
  const e = toScribedError(err);
  return { status: e.spec.http, body: { code: e.spec.wire, message: e.message } };
}

/** The socket form of an error: a typed `error` event (docs/protocol.md). */
export function wsError(err: unknown, fatal = false): { type: 'error'; code: string; message: string; fatal: boolean } {
  const e = err instanceof ScribedError ? err : toScribedError(err);
  return { type: 'error', code: e.code, message: e.message, fatal };
}
