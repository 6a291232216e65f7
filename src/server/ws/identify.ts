// Who opens a socket of a session: the `accessKey` header, or a single-use ticket bound to the
// session in `?ticket=`. The stream socket and the watch socket identify their caller with
// this one function (docs/protocol.md, "Connecting"); it runs before the upgrade, so a refusal
// is a plain HTTP answer. A ticket has a scope: a `stream` ticket opens either socket, a
// `watch` ticket (what the read-only desk gets) only the watch socket; a ticket a desk session
// asked for is dead once that session has ended.
import type { FastifyRequest } from 'fastify';
import { ScribedError } from '../../core/errors.js';
import { parseCredential } from '../../core/credentials.js';
import { isSecretParamName } from '../../core/redact.js';
import { authenticate, headerValue } from '../auth.js';
import type { AppContext } from '../context.js';
import { SESSION_IDLE_MS } from '../../desk/policy.js';

export type SocketRequest = FastifyRequest<{ Params: { sessionId: string }; Querystring: Record<string, string> }>;

/** A long-lived credential in the URL, by the parameter's name (any spelling the log
 * redaction knows, src/core/redact.ts; `ticket` is the one credential a URL may carry) or by
 * the value's shape: refused outright so a key pasted into a URL (and so into proxy logs) is
 * noticed at once. */
function keyInUrl(query: Record<string, unknown>): boolean {
  return Object.entries(query).some(
    ([name, value]) => (name.toLowerCase() !== 'ticket' && isSecretParamName(name)) || /^(sk|tok)_/i.test(String(value)),
  );
}

export type SocketKind = 'stream' | 'watch';

export interface Identity {
  accountId: string;
  via: 'accessKey' | 'ticket';
  /** The desk session whose ticket opened the socket: the socket ends with that session. */
  deskSessionId: string | null;
}

/** The account behind a socket handshake. A ticket is consumed here, whatever the rest of the
 * handshake then answers. */
export async function identify(ctx: AppContext, req: SocketRequest, socket: SocketKind = 'stream'): Promise<Identity> {
  const query = req.query ?? {};
  if (keyInUrl(query)) {
    throw new ScribedError('ACCESS_KEY_IN_URL');
  }
  const header = headerValue(req.headers.accesskey);
  if (header) return { accountId: await authenticate(ctx.store, 'access_key', header), via: 'accessKey', deskSessionId: null };
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
  if (socket === 'stream' && outcome.ticket.scope === 'watch') {
    ctx.metrics.tickets.inc({ outcome: 'wrong_scope' });
    throw new ScribedError(
      'TICKET_INVALID',
      `the ticket opens only the session's watch socket (${req.params.sessionId}/events), not its stream socket; a stream ticket comes from POST .../sessions/{id}/tickets`,
    );
  }
  const deskSessionId = outcome.ticket.deskSessionId ?? null;
  if (deskSessionId !== null && (await ctx.store.closedDeskSessions([deskSessionId], ctx.now(), SESSION_IDLE_MS)).length > 0) {
    ctx.metrics.tickets.inc({ outcome: 'desk_session_ended' });
    throw new ScribedError('TICKET_INVALID', 'the desk session that asked for this ticket has ended');
  }
  ctx.metrics.tickets.inc({ outcome: 'accepted' });
  return { accountId: outcome.ticket.accountId, via: 'ticket', deskSessionId };
}
