// The one place AudioHook refusals before the upgrade are answered. AudioHook defines no
// HTTP error body; Genesys reads the status (401 for a credential or signature it must fix,
// 400 for a request it must not repeat as is). The body is a small JSON text for people
// reading logs, and the connection is closed after it (an upgrade refused has no next request).
import type { FastifyReply } from 'fastify';
import type { RefusalReason } from './metrics.js';

export class AudiohookRefusal extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 429 | 503,
    readonly reason: RefusalReason,
    message: string,
  ) {
    super(message);
    this.name = 'AudiohookRefusal';
  }
}

export function sendRefusal(reply: FastifyReply, refusal: AudiohookRefusal): FastifyReply {
  return reply
    .code(refusal.status)
    .header('connection', 'close')
    .type('application/json; charset=utf-8')
    .send({ status: refusal.status, reason: refusal.reason, message: refusal.message });
}
