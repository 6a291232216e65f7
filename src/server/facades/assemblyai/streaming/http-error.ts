// HTTP errors of the streaming facade's plain HTTP answers (GET /v3/token, a GET of /v3/ws that
// is no upgrade) in AssemblyAI's REST shape, `{"error": "<message>"}`, which the SDK's
// fetchJson throws as the message: 401 a bad key, 400 a bad parameter, 5xx a fault. (The async
// API's error module is its own; the two shapes are the same.)
import type { FastifyReply, FastifyRequest } from 'fastify';
import { tableFault } from '../../table-error.js';

export class AssemblyAiHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'AssemblyAiHttpError';
  }
}

export function toAssemblyAiHttpError(err: unknown): AssemblyAiHttpError {
  if (err instanceof AssemblyAiHttpError) return err;
  const f = tableFault(err);
  if (f.code === 'UNAUTHORIZED')
    return new AssemblyAiHttpError(401, 'Authentication error, API token missing/invalid: send `Authorization: <scribed access key>`');
  if (f.status >= 500) return new AssemblyAiHttpError(f.status, f.status === 500 ? 'Internal server error' : f.detail);
  return new AssemblyAiHttpError(f.status, f.detail);
}

export function sendAssemblyAiHttpError(err: unknown, req: FastifyRequest, reply: FastifyReply): void {
  const e = toAssemblyAiHttpError(err);
  if (e.status >= 500 && e.status !== 503) req.log.error({ err }, 'AssemblyAI streaming facade request failed');
  void reply.code(e.status).type('application/json; charset=utf-8').send({ error: e.message });
}
