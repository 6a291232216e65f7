// The one envelope helper. Routes return ok(data); every failure goes through fail() via
// the server's error handler, so no route builds an error body by hand. Messages are
// scrubbed of credential shapes here (src/core/redact.ts): a message may echo a path or a
// parameter a client put a key in, and clients, proxies and logs keep what they are sent.
import { STATUS_CODES } from 'node:http';
import { ScribedError, toScribedError } from './errors.js';
import { scrubCredentials } from './redact.js';
import { serverEvent, type ErrorEvent } from './protocol.js';

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
  return { status: e.spec.http, body: { code: e.spec.wire, message: scrubCredentials(e.message) } };
}

/** The failure shape of the dashboard's `/api/user` routes (docs/api.md, Dashboard user
 * groups): `{success: 0, message}` with the table's status. */
export function failDashboard(err: unknown): { status: number; body: { success: 0; message: string } } {
  const { status, body } = fail(err);
  return { status, body: { success: 0, message: body.message } };
}

/** A failure written as a whole raw HTTP/1.1 response, for the layers below Fastify's reply
 * (the HTTP parser's client errors, refused WebSocket upgrades): the same envelope, and
 * `Connection: close`, since the server closes the connection after it. */
export function failRaw(err: unknown, headers: Record<string, string> = {}): string {
  const { status, body } = fail(err);
  const json = JSON.stringify(body);
  const head = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(json)}`,
    'Connection: close',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  return `${head.join('\r\n')}\r\n\r\n${json}`;
}

/** The socket form of an error: a typed `error` event (docs/protocol.md). */
export function wsError(err: unknown, fatal = false): ErrorEvent {
  const e = err instanceof ScribedError ? err : toScribedError(err);
  return serverEvent.error({ code: e.code, message: scrubCredentials(e.message), fatal });
}
