// Who opens a socket of a session: the `accessKey` header, or a single-use ticket bound to the
// session in `?ticket=`. The stream socket and the watch socket identify their caller with
// this one function, so both take exactly the same credentials (docs/protocol.md,
// "Connecting"); it runs before the upgrade, so a refusal is a plain HTTP answer.
import type { FastifyRequest } from 'fastify';
import { ScribedError } from '../../core/errors.js';
import { parseCredential } from '../../core/credentials.js';
import { isSecretParamName } from '../../core/redact.js';
import { authenticate, headerValue } from '../auth.js';
import type { AppContext } from '../context.js';

export type SocketRequest = FastifyRequest<{ Params: { sessionId: string }; Querystring: Record<string, string> }>;

/** A long-lived credential in the URL, by the parameter's name (any spelling the log
 * redaction knows, src/core/redact.ts; `ticket` is the one credential a URL may carry) or by
 * the value's shape: refused outright so a key pasted into a URL (and so into proxy logs) is
 * noticed at once. */
function keyInUrl(query: Record<string, unknown>): boolean {
  return Object.entries(query).some(([name, value]) => (name.toLowerCase() !== 'ticket' && isSecretParamName(name)) || /^(sk|tok)_/i.test(String(value)));
}

/** The account behind a socket handshake. A ticket is consumed here, whatever the rest of the
 * handshake then answers. */
export async function identify(ctx: AppContext, req: SocketRequest): Promise<{ accountId: string; via: 'accessKey' | 'ticket' }> {
  const query = req.query ?? {};
  if (keyInUrl(query)) {
    throw new ScribedError('ACCESS_KEY_IN_URL');
  }
  const header = headerValue(req.headers.accesskey);
  if (header) return { accountId: await authenticate(ctx.store, 'access_key', header), via: 'accessKey' };
  const ticket = query.ticket;
  if (!ticket) throw new ScribedError('UNAUTHORIZED', 'send the accessKey header or a ticket query parameter');
  const parsed = parseCredential(ticket, 'tkt');
  if (!parsed) {
    ctx.metrics.tickets.inc({ outcome: 'forged' });
    throw new ScribedError('TICKET_INVALID');
  }
  const outcome = await ctx.store.consumeTicket(`tkt_${parsed.id}`, parsed.secretHash, ctx.now());
  if (!outcome.ok) {
    ctx.metrics.tickets.inc({ outcome: outcome.reason });
    throw new ScribedError('TICKET_INVALID', `the ticket is not valid (${outcome.reason === 'forged' ? 'unknown' : outcome.reason})`);
  }
  if (outcome.ticket.sessionId !== req.params.sessionId) {
    ctx.metrics.tickets.inc({ outcome: 'wrong_session' });
    throw new ScribedError('TICKET_INVALID', 'the ticket is bound to another session');
  }
  ctx.metrics.tickets.inc({ outcome: 'accepted' });
  return { accountId: outcome.ticket.accountId, via: 'ticket' };
}
